"""ROC3xx: CUDA-graph capture hazards.

A host synchronization inside a CUDA-graph capture invalidates the capture on NVIDIA and,
on ROCm before 7.14, can be swallowed silently and leave a corrupt graph. The bad call is
rarely lexically inside the ``with`` block: it sits in a ``forward`` or a helper that the
captured code calls, so these rules follow the calls (see ``_regions``). Every finding names
the capture (its line) and the chain of calls that reaches the hazard.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.findings import Applicability, Fix

from . import _regions
from ._torch import qualified_names
from .base import Case, Rule

_CAPTURE_TRIGGERS = ("graph", "capture_begin")


class _CaptureRule(_regions.RegionRule, Rule):
    """Reports the hazards of its code that the shared region analysis found."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    TRIGGERS = _CAPTURE_TRIGGERS
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY

    @classmethod
    def may_match(cls, facts) -> bool:
        # A capture region needs a call of torch.cuda.graph (in a `with`), of
        # make_graphed_callables, or of `.capture_begin()` (``_regions._Collector``).
        return ("capture_begin" in facts.calls
                or any(facts.calls_to(_regions.GRAPH_CM_NAMES | _regions.GRAPHED_CALLABLES_NAMES)))

    def __init__(self, context):
        super().__init__(context)
        self._init_feeder(context)

    def report_hazard(self, hazard: _regions.Hazard) -> None:
        self.report(hazard.node, hazard.message, fix=hazard.fix or Fix(Applicability.DISPLAY_ONLY, self.SUMMARY))


_PRE = "import torch\n"


class CaptureHostSync(_CaptureRule):
    CODE = "ROC301"
    NAME = "capture-host-sync"
    SUMMARY = "A host synchronization inside a CUDA-graph capture (directly or through the calls it makes)."
    WHAT = """
        Inside a CUDA-graph capture, or in a function or method of the same file that the
        captured code calls (directly, through `self.method()`, or through an instance of a
        class defined in the file, via its `__call__` / `forward`, transitively): `.item()`,
        `.tolist()`, `.numpy()`, `.cpu()`, `.to("cpu")`, `torch.cuda.synchronize()`, stream
        or event `.synchronize()`, `print` of a tensor, an f-string that formats a tensor,
        `float()` / `int()` / `bool()` of a tensor, and `if` / `while` on a tensor value.

        Captures are `with torch.cuda.graph(g, ...)` in every spelling (aliases,
        `torch.cuda.graphs.graph`, several context managers in one `with`, nested blocks), the
        straight-line code between `g.capture_begin()` and `g.capture_end()` in one block, and
        the callables handed to `torch.cuda.make_graphed_callables`. The message names the
        capture's line and the call chain, e.g. "inside the capture begun at line 40, via
        step() → norm()". Code guarded by `torch.cuda.is_current_stream_capturing()` is
        followed only on the side that runs during capture; `with torch.cuda.stream(s):`
        blocks are not captures.
        """
    WHY = """
        A capture records GPU work; it cannot wait for the GPU or copy results to the host.
        On CUDA such a call fails with cudaErrorStreamCaptureInvalidated (or Unsupported). On
        ROCm before 7.14 the error can be swallowed silently and the graph that results is
        corrupt: replays compute wrong values without any error (pytorch#155684).
        """
    EXAMPLE = """
        with torch.cuda.graph(g):
            out = model(static_x)
            torch.cuda.synchronize()
        """
    FIXED_EXAMPLE = """
        with torch.cuda.graph(g):
            out = model(static_x)
        torch.cuda.synchronize()
        """
    FIX = """
        Safe for one case: a `torch.cuda.synchronize()` that is the last statement of a
        capture `with` block moves to just after the block (the statement is dedented to the
        `with`'s indentation, comments and line endings kept). Synchronizing after the
        capture is what the code can have meant; nothing captured depends on it.

        Everything else is display-only, with the remedy in the message: keep values on the
        device (`.item()` and friends), read results after the replay, print outside the
        captured code, use `torch.where` instead of a Python branch on a tensor.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        y = x * 2\n    torch.cuda.synchronize()\n"
             "    return y.item()\n"),
        Case(_PRE + "import networkx as nx\ngraph = nx.Graph()\nfor k, v in d.items():\n    print(k, v)\n"),
        Case(_PRE + "def f(x):\n    return x.sum().item()\n"),
        Case(_PRE + "def f(s, x):\n    with torch.cuda.stream(s):\n        y = x * 2\n        s.synchronize()\n"),
        Case(_PRE + "def f(g, x):\n    for _ in range(3):\n        y = x * 2\n        print(y.item())\n"
             "    with torch.cuda.graph(g):\n        y = x * 2\n"),
        Case(_PRE + "import debug_print\ndef f(g, x):\n    with torch.cuda.graph(g):\n"
             "        debug_print.print_tensor(x)\n"),
        Case(_PRE + "def h(x):\n    if torch.cuda.is_current_stream_capturing():\n        return x * 2\n"
             "    return x.item()\n"
             "def f(g, x):\n    with torch.cuda.graph(g):\n        y = h(x)\n"),
        Case(_PRE + "import tensorflow as tf\ndef f(x):\n    with tf.Graph().as_default() as graph:\n"
             "        y = x.numpy()\n"),
        Case(_PRE + "def f(g, d):\n    with torch.cuda.graph(g):\n        for k, v in d.items():\n"
             "            print(k)\n"),
    )
    INVALID = (
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        y = x * 2\n        torch.cuda.synchronize()\n",
             _PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        y = x * 2\n    torch.cuda.synchronize()\n"),
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g, capture_error_mode='global'):\n        x.item()\n"),
        Case(_PRE + "def norm(x):\n    return x / x.sum().item()\n"
             "def step(x):\n    return norm(x)\n"
             "def f(g, x):\n    with torch.cuda.graph(g):\n        y = step(x)\n"),
        Case(_PRE + "class M(torch.nn.Module):\n    def forward(self, x):\n        print(x.sum())\n        return x\n"
             "m = M()\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    y = m(x)\n"),
        Case(_PRE + "def f(g, x: torch.Tensor):\n    g.capture_begin()\n    if x:\n        y = x + 1\n"
             "    g.capture_end()\n"),
    )


class CaptureDynamicShape(_CaptureRule):
    CODE = "ROC302"
    NAME = "capture-dynamic-shape"
    SUMMARY = "An operation with a data-dependent output shape inside a CUDA-graph capture."
    WHAT = """
        In captured code (and what it calls, as for ROC301): `torch.nonzero` / `.nonzero()`,
        `torch.argwhere`, one-argument `torch.where`, `masked_select`, boolean-mask indexing
        (`x[x > 0]`, `x[mask]` with a mask built from a comparison), `torch.unique` /
        `unique_consecutive`, and `repeat_interleave` with tensor repeats and no
        `output_size=`. Slicing and integer indexing are not flagged, nor stores through a
        mask (`x[mask] = 0`).
        """
    WHY = """
        The output size depends on the data, so torch reads it on the host: a synchronization
        that invalidates the capture (silently corrupting it on ROCm before 7.14). Even where
        capture succeeds, a replay reuses the shapes of the capture.
        """
    EXAMPLE = """
        with torch.cuda.graph(g):
            idx = torch.nonzero(mask)
        """
    FIX = """
        Display-only: pad to a fixed shape (`torch.where(mask, x, 0)`, `masked_fill`, a fixed
        `size=`), pass `output_size=` to `repeat_interleave`, or compute the dynamic part
        outside the capture.
        """
    VALID = (
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        y = x[1:3]\n        z = x[:, 0]\n"),
        Case(_PRE + "def f(g, x, mask):\n    with torch.cuda.graph(g):\n        y = torch.where(mask, x, 0)\n"),
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        y = x.repeat_interleave(2)\n"),
        Case(_PRE + "def f(x):\n    return torch.nonzero(x)\n"),
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        x[x > 0] = 0\n"),
    )
    INVALID = (
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        idx = torch.nonzero(x)\n"),
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        y = x[x > 0]\n"),
        Case(_PRE + "def f(g, x, r):\n    with torch.cuda.graph(g):\n        y = torch.repeat_interleave(x, r)\n"),
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        y = x.unique()\n"),
    )


class CaptureRngState(_CaptureRule):
    CODE = "ROC303"
    NAME = "capture-rng-state"
    SUMMARY = "An RNG state call (get/set_rng_state, manual_seed, seed) inside a CUDA-graph capture."
    WHAT = """
        `torch.cuda.get_rng_state`, `set_rng_state`, `manual_seed`, `manual_seed_all`, `seed`
        (and the `torch.` / `torch.random.` forms) in captured code or what it calls.
        """
    WHY = """
        Reading the CUDA generator's state during capture raises "Cannot call
        CUDAGeneratorImpl::current_seed during CUDA graph capture" before torch 2.10. Setting
        it happens once, on the host, when the graph is captured: replays do not re-seed. On
        ROCm before 7.14 the failure can be silent.
        """
    EXAMPLE = """
        with torch.cuda.graph(g):
            torch.cuda.manual_seed(0)
            y = torch.nn.functional.dropout(x, 0.1)
        """
    FIX = """
        Display-only: seed, save and restore RNG state before the capture. A graph records
        the default generator's offsets itself; register other generators with
        `graph.register_generator_state(gen)`.
        """
    VALID = (
        Case(_PRE + "def f(g, x):\n    torch.cuda.manual_seed(0)\n    with torch.cuda.graph(g):\n        y = x * 2\n"),
    )
    INVALID = (
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        s = torch.cuda.get_rng_state()\n"),
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        torch.manual_seed(0)\n"),
    )


class CaptureCompileWithoutWarmup(_CaptureRule):
    CODE = "ROC304"
    NAME = "capture-compile-without-warmup"
    SUMMARY = "A torch.compile'd callable called inside a capture without being called before it."
    WHAT = """
        A callable compiled with `torch.compile` (a name or `self.` attribute bound to
        `torch.compile(...)`, a function decorated with `@torch.compile`, an inline
        `torch.compile(f)(x)`) called in captured code, or in what the captured code calls,
        when the function that holds the capture does not call it (or the first function
        of the chain) before the capture begins.
        """
    WHY = """
        The first call of a compiled callable compiles it. Compiling an inductor graph during
        capture fails on CUDA (pytorch#185074), and before ROCm 7.14 errors during capture can
        be swallowed silently, giving a corrupt graph (pytorch#155684).
        """
    EXAMPLE = """
        step = torch.compile(step)
        with torch.cuda.graph(g):
            out = step(static_x)
        """
    FIX = """
        Display-only: call the compiled callable a few times before the capture (a warm-up
        loop, ideally on a side stream as the CUDA-graph docs show); then capture.
        """
    VALID = (
        Case(_PRE + "def run(f, g, x):\n    cf = torch.compile(f)\n    for _ in range(3):\n        cf(x)\n"
             "    with torch.cuda.graph(g):\n        y = cf(x)\n"),
        Case(_PRE + "def run(f, g, x):\n    cf = torch.compiler.disable(f)\n"
             "    with torch.cuda.graph(g):\n        y = cf(x)\n"),
    )
    INVALID = (
        Case(_PRE + "def run(f, g, x):\n    cf = torch.compile(f)\n    with torch.cuda.graph(g):\n        y = cf(x)\n"),
        Case(_PRE + "@torch.compile\ndef step(x):\n    return x * 2\n"
             "def run(g, x):\n    with torch.cuda.graph(g):\n        y = step(x)\n"),
    )


class CapturePageableCopy(_CaptureRule):
    CODE = "ROC305"
    NAME = "capture-host-to-device-copy"
    SUMMARY = "A pageable host-to-device copy (or a pinned host allocation) inside a CUDA-graph capture."
    WHAT = """
        In captured code or what it calls: `torch.tensor(<python data>, device=<a GPU>)` (also
        `as_tensor`), `.cuda()` or `.to("cuda")` / `.to(device=...)` of a tensor known to be on
        the CPU (made in the same function by a torch factory without `device=`, by
        `torch.from_numpy` or `.cpu()`), and `.pin_memory()` (a cudaHostAlloc).
        """
    WHY = """
        A copy from pageable host memory is not capturable: it invalidates the capture on CUDA
        and can corrupt it silently on ROCm before 7.14. Where it does get recorded, each
        replay re-reads the host address of the capture, whose memory may have been freed
        and reused (wrong values, no error). Allocating pinned memory is not permitted while
        a stream captures.
        """
    EXAMPLE = """
        with torch.cuda.graph(g):
            scale = torch.tensor([0.5], device="cuda")
            y = x * scale
        """
    FIX = """
        Display-only: pre-allocate the device tensors (and any pinned buffers) before the
        capture, and update them in place (`copy_`) between replays.
        """
    VALID = (
        Case(_PRE + "def f(g, x):\n    scale = torch.tensor([0.5], device='cuda')\n"
             "    with torch.cuda.graph(g):\n        y = x * scale\n"),
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        y = torch.zeros(3, device='cuda')\n"
             "        z = x.to('cuda')\n"),
    )
    INVALID = (
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        s = torch.tensor([0.5], device='cuda')\n"),
        Case(_PRE + "def f(g, i):\n    with torch.cuda.graph(g):\n        t = torch.tensor(i)\n"
             "        u = t.to(device='cuda', non_blocking=True)\n"),
        Case(_PRE + "def f(g, x):\n    with torch.cuda.graph(g):\n        x.pin_memory()\n"),
    )


class SynchronizeAnywhere(Rule):
    CODE = "ROC306"
    NAME = "device-wide-synchronize"
    SUMMARY = "torch.cuda.synchronize() waits for every stream; the current stream may be enough."
    DEFAULT_ENABLED = False
    WHAT = """
        Every `torch.cuda.synchronize()` (any spelling), outside ROCm-only branches. Off by
        default: it is a performance hint, not a hazard.
        """
    WHY = """
        `torch.cuda.synchronize()` waits for all streams of the device, which is more
        expensive on ROCm (HIP) than on CUDA. When only the current stream's work matters,
        `torch.cuda.current_stream().synchronize()` is cheaper.
        """
    EXAMPLE = """
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        """
    FIX = """
        Display-only: `torch.cuda.current_stream().synchronize()` waits only for the current
        stream. The two differ when several streams are in use (timing side streams,
        NCCL), so rocmport never applies it.
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    TRIGGERS = ("synchronize",)
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)

    @classmethod
    def may_match(cls, facts) -> bool:
        return any(facts.calls_to(_regions.SYNC_NAMES))
    VALID = (
        Case(_PRE + "torch.cuda.current_stream().synchronize()\n"),
        Case(_PRE + "if torch.version.hip:\n    torch.cuda.synchronize()\n"),
        Case("import threading\nthreading.Event().synchronize()\n"),
    )
    INVALID = (
        Case(_PRE + "torch.cuda.synchronize()\n"),
        Case("from torch.cuda import synchronize\nsynchronize()\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if qualified_names(self, node.func) & _regions.SYNC_NAMES and not self.in_rocm_branch(node):
            self.report(node, "`torch.cuda.synchronize()` waits for every stream of the device; when only the"
                        " current stream matters, `torch.cuda.current_stream().synchronize()` is cheaper on ROCm",
                        fix=Fix(Applicability.DISPLAY_ONLY,
                                "Use `torch.cuda.current_stream().synchronize()` if only the current stream matters"))


RULES = [CaptureHostSync, CaptureDynamicShape, CaptureRngState, CaptureCompileWithoutWarmup,
         CapturePageableCopy, SynchronizeAnywhere]
