"""ROC3xx: CUDA-graph capture hazards.

A host synchronization inside a CUDA-graph capture invalidates the capture on NVIDIA and,
on ROCm before 7.14, can be swallowed silently and leave a corrupt graph. The bad call is
rarely lexically inside the ``with`` block: it sits in a ``forward`` or a helper that the
captured code calls, so these rules follow the calls: the shared analysis (``_regions``)
walks each capture and lists what the code it reaches does as typed events (``_events``);
each rule below picks its events in ``on_event`` and writes its own message and fix. Every
finding names the capture (its line) and the chain of calls that reaches the hazard.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.findings import Applicability, Fix

from . import _regions, _walk
from ._events import (BooleanMaskIndex, CompiledCall, CopyToHost, DataDependentShape, DeviceSynchronize,
                      HostToDeviceCopy, PinMemory, PrintCall, RegionEvent, RngStateCall, ScalarRead,
                      StreamCreated, StreamEntered, StreamSynchronize, TensorBranch, TensorFormatted,
                      TensorToPython)
from ._torch import qualified_names
from .base import Case, Rule, keyword

_CAPTURE_TRIGGERS = ("graph", "capture_begin")


class _CaptureRule(_regions.RegionRule, Rule):
    """Turns the events that the shared region analysis met in captures into findings: each
    rule's ``on_event`` reports the events it cares about through ``hazard``."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    TRIGGERS = _CAPTURE_TRIGGERS
    # ``may_match``'s calls: ``.capture_begin()``, or a callee that resolves to
    # torch.cuda[.graphs].graph / make_graphed_callables, whose code spells the last part
    # (an attribute, or the name an import binds) and ``cuda`` (the attribute or the module
    # its import names).
    WORDS = (("capture_begin", "graph", "make_graphed_callables"), ("capture_begin", "cuda"))
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    REGION = "in_capture"

    @classmethod
    def may_match(cls, facts) -> bool:
        # A capture region needs a call of torch.cuda.graph (in a `with`), of
        # make_graphed_callables, or of `.capture_begin()` (``_regions._Collector``).
        return ("capture_begin" in facts.calls
                or any(facts.calls_to(_regions.GRAPH_CM_NAMES | _regions.GRAPHED_CALLABLES_NAMES)))

    def hazard(self, node: cst.CSTNode, message: str, fix: Optional[Fix] = None,
               start: Optional[cst.CSTNode] = None) -> None:
        """Report ``node`` once (the first event of a node names the shortest chain); from
        ``start`` to ``node`` when the fix rewrites lines before it."""
        if id(node) in self._reported:
            return
        self._reported.add(id(node))
        if start is None:
            self.report(node, message, fix=fix or Fix(Applicability.DISPLAY_ONLY, self.SUMMARY))
        else:
            self.report(start, message, fix=fix, end_node=node)

    @staticmethod
    def where(event: RegionEvent) -> str:
        """``inside the capture begun at line 40, via step() → norm()``."""
        region = event.region
        if region.origin == "make_graphed_callables":
            text = f"inside the capture by make_graphed_callables at line {region.line}"
        else:
            text = f"inside the capture begun at line {region.line}"
        return text + (", via " + " → ".join(f"{s.label}()" for s in event.via) if event.via else "")


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
    INVALIDATES = ("a host synchronization invalidates the capture on CUDA and can be swallowed"
                   " silently on ROCm before 7.14, leaving a corrupt graph")

    def on_event(self, event: RegionEvent) -> None:
        node, where, invalid = event.node, self.where(event), self.INVALIDATES
        if isinstance(event, ScalarRead):
            self.hazard(node, f"`.{event.method}()` copies a tensor to the host {where}; {invalid}:"
                        " keep the value on the device, or read it after the capture")
        elif isinstance(event, CopyToHost):
            what = ".cpu()" if event.device is None else f".to({self.found.short(event.device, 20)})"
            self.hazard(node, f"`{what}` copies a tensor to the host {where}; {invalid}:"
                        " move the copy out of the captured code")
        elif isinstance(event, DeviceSynchronize):
            stmt = None if event.via else event.region.trailing_syncs.get(id(node))
            fix = self._sync_fix(event.region.with_node, stmt) if stmt is not None else None
            remedy = ("move it to just after the `with` block" if fix is not None
                      else "synchronize before or after the capture instead")
            self.hazard(node, f"`torch.cuda.synchronize()` {where}; {invalid}: {remedy}",
                        fix or Fix(Applicability.DISPLAY_ONLY, "Synchronize before or after the capture"))
        elif isinstance(event, StreamSynchronize):
            self.hazard(node, f"`{self.found.short(node.func)}()` waits on the host {where}; {invalid}:"
                        " synchronize before or after the capture instead")
        elif isinstance(event, PrintCall) and event.of_tensor:
            self.hazard(node, f"printing a tensor copies it to the host {where}; {invalid}:"
                        " print outside the captured code")
        elif isinstance(event, TensorFormatted):
            self.hazard(node, f"formatting a tensor in an f-string copies it to the host {where};"
                        f" {invalid}: format it outside the captured code")
        elif isinstance(event, TensorToPython):
            self.hazard(node, f"`{event.builtin}()` of a tensor copies it to the host {where}; {invalid}:"
                        " keep the value on the device")
        elif isinstance(event, TensorBranch):
            self.hazard(node, f"`{event.keyword}` on a tensor value reads it on the host {where};"
                        f" {invalid}: use `torch.where`, or decide before the capture")

    def _sync_fix(self, with_node: cst.With, stmt: cst.CSTNode) -> Optional[Fix]:
        """Dedent the block's last statement, ``torch.cuda.synchronize()``, to the ``with``'s
        own indentation: it then runs just after the block. One edit, on one line."""
        ctx, found = self.context, self.found
        stmt_start, with_start = found.offset(stmt), found.offset(with_node)
        line_start = ctx.text.rfind("\n", 0, stmt_start) + 1
        line_start = max(line_start, ctx.text.rfind("\r", 0, stmt_start) + 1)
        with_line = max(ctx.text.rfind("\n", 0, with_start), ctx.text.rfind("\r", 0, with_start)) + 1
        indent = ctx.text[with_line:with_start]
        if indent.strip(" \t") or ctx.text[line_start:stmt_start].strip(" \t"):
            return None
        return Fix(Applicability.SAFE, "Move `torch.cuda.synchronize()` to just after the capture block",
                   (ctx.edit(line_start, stmt_start, indent),))


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

    def on_event(self, event: RegionEvent) -> None:
        where = self.where(event)
        if isinstance(event, DataDependentShape):
            label = f".{event.op}()" if event.method else f"{event.op}()"
            if "repeat_interleave" in label:
                remedy = "pass `output_size=` so the shape is known without reading the data"
            elif "unique" in label:
                remedy = "compute it before the capture, or keep a fixed-size result"
            else:
                remedy = ("pad to a fixed shape (`torch.where(mask, x, 0)`, or a fixed `size=`),"
                          " or move it out of the capture")
            self.hazard(event.node, f"`{label}` has a data-dependent output shape {where}; its size is read on"
                        f" the host, and a replay reuses the shape of the capture: {remedy}")
        elif isinstance(event, BooleanMaskIndex):
            self.hazard(event.node, f"boolean-mask indexing `{self.found.short(event.node)}` has a data-dependent"
                        f" output shape {where}; its size is read on the host, and a replay reuses the shape of"
                        " the capture: pad to a fixed shape with `torch.where(mask, x, 0)` or `masked_fill`")


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

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, RngStateCall):
            short = event.name.replace("torch.cuda.random.", "torch.cuda.").replace("torch.random.", "torch.")
            what = ("reads the generator state, which fails during capture before torch 2.10" if event.op == "get"
                    else "changes the generator state once, when the graph is captured, not at each replay")
            self.hazard(event.node, f"`{short}()` {what} ({self.where(event)}): seed and save or restore RNG"
                        " state before the capture (extra generators: `graph.register_generator_state`)")


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

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, CompiledCall) and not event.warmed_up:
            self.hazard(event.node, f"`{self.found.short(event.node.func)}` is compiled (torch.compile at line"
                        f" {event.compiled_line}) and first called {self.where(event)}: compiling during capture"
                        " fails on CUDA and can corrupt the graph silently on ROCm; call it once before the"
                        " capture (warm-up, e.g. on a side stream)")


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

    def on_event(self, event: RegionEvent) -> None:
        where = self.where(event)
        if isinstance(event, HostToDeviceCopy):
            if event.from_python_data:
                what = "builds a tensor from Python data on the host and copies it to the GPU (pageable)"
                remedy = "pre-allocate the device tensor before the capture and update it with `copy_` between replays"
            else:
                what = "copies a CPU tensor to the GPU (a pageable host-to-device copy)"
                remedy = ("pre-allocate the device tensor before the capture; a replay re-reads host memory"
                          " that may be gone")
            self.hazard(event.node, f"`{self.found.short(event.node)}` {what} {where}; this invalidates the capture"
                        f" on CUDA and can corrupt it silently on ROCm: {remedy}")
        elif isinstance(event, PinMemory):
            self.hazard(event.node, f"`.pin_memory()` allocates pinned host memory (cudaHostAlloc) {where},"
                        " which is not permitted during capture: allocate pinned buffers before the capture")


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
    WORDS = (("synchronize",), ("cuda",))  # torch.cuda.synchronize, as ``may_match`` asks
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


_HIPBLASLT = ("from torch 2.12 ROCm makes a hipBLASLt handle per stream, lazily, and making it during capture"
              " fails or hangs (pytorch#179053, #179892)")
# Calls that do no GPU library work: not a warm-up.
_NOT_WARMUP = frozenset({"wait_stream", "record_stream", "synchronize", "copy_", "fill_", "zero_",
                         "capture_begin", "CUDAGraph", "empty_cache"})
_UNSAFE_TEXT = re.compile(r"'''|\"\"\"|\\\r?\n|\\\r|\x0c")


class CaptureStreamWarmup(_CaptureRule):
    CODE = "ROC307"
    NAME = "capture-stream-warmup"
    SUMMARY = "A CUDA-graph capture on a stream its warm-up did not run on, or a stream made or entered in a capture."
    WHAT = """
        - `with torch.cuda.graph(g):` without `stream=` (third positional argument): the
          capture runs on torch.cuda.graph's own capture stream, which the warm-up never used.
          `stream=` a stream made inline (`stream=torch.cuda.Stream()`) is reported too.
        - `g.capture_begin()` outside a `with torch.cuda.stream(s):` block, or inside one where
          nothing ran on `s` before it (in that block, or an earlier `with torch.cuda.stream(s):`
          of the same function).
        - `torch.cuda.make_graphed_callables(...)`: before pytorch#187745 it warms up on one
          stream and captures on another.
        - In captured code (and what it calls, as for ROC301): `torch.cuda.Stream()`, a stream
          made there; and `with torch.cuda.stream(s):` in the capture's own block when `s` was
          not entered before the capture in the same function. A stream entered in a function
          the capture calls is not reported: the warm-up calls of that function entered it too.

        Not reported: `stream=s` given (the warm-up is assumed to run on `s`) or possibly given
        (`**options`), mentions in strings and comments, and `tf.Graph()` or `networkx`
        look-alikes.
        """
    WHY = """
        From torch 2.12, ROCm's hipBLASLt handles are cached per (device, stream) and created
        lazily, on the first GEMM of a stream (pytorch#179053). Creating one allocates, which is
        not permitted while the stream captures: the capture fails with "operation not
        permitted when stream is capturing" (HIP error 900) or hangs. A warm-up on the current
        stream does not help when the capture runs on another stream: torch.cuda.graph without
        `stream=` uses its own. PyTorch pre-creates the handle of the capturing thread's stream
        in `capture_begin` (pytorch#179892), but not for other threads or auxiliary streams;
        `make_graphed_callables` was fixed to warm up and capture on one stream in
        pytorch#187745, and TransformerEngine#643 made the same change to its own copy. The
        pattern PyTorch's CUDA-graph notes recommend, a warm-up on a side stream that is then
        passed to `torch.cuda.graph(..., stream=)`, avoids all of it and is neutral on NVIDIA.
        """
    EXAMPLE = """
        for _ in range(3):
            y = model(static_x)
        with torch.cuda.graph(g):
            y = model(static_x)
        """
    FIXED_EXAMPLE = """
        side_stream = torch.cuda.Stream()
        side_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side_stream):
            for _ in range(3):
                y = model(static_x)
        torch.cuda.current_stream().wait_stream(side_stream)
        with torch.cuda.graph(g, stream=side_stream):
            y = model(static_x)
        """
    FIX = """
        Safe for `with torch.cuda.graph(...)` without `stream=`, in two shapes:
        - the last compound statement before the capture in its block is
          `with torch.cuda.stream(s):` (a warm-up on `s`; `s` a name not rebound in between):
          `stream=s` is added to the graph call;
        - it is a `for` or `while` loop (the warm-up), and the graph call is spelled
          `<torch.cuda>.graph(...)`: the loop moves into `with torch.cuda.stream(side_stream):`
          (re-indented by one level; loops with multi-line strings, backslash continuations,
          or a `return`, `yield` or `raise`, which would skip the closing wait, are left
          alone), after `side_stream = torch.cuda.Stream()` and
          `side_stream.wait_stream(torch.cuda.current_stream())`, followed by
          `torch.cuda.current_stream().wait_stream(side_stream)`, and `stream=side_stream` is
          added to the graph call (a free name is chosen when `side_stream` is taken).
        This is the documented PyTorch pattern: the streams wait for each other, so the warm-up
        computes the same values in the same order on NVIDIA and ROCm; `stream=` exists since
        torch 1.10 (none of the keywords added in 2.13 is generated). Checked on an H100
        (benchmarks/results/capture_fixture.json): the fixture's replays are bitwise equal
        before and after the fix.

        Everything else is display-only, with the remedy in the message.
        """
    FIX_APPLICABILITY = Applicability.SAFE
    VALID = (
        Case(_PRE + "def f(g, m, x):\n    s = torch.cuda.Stream()\n    with torch.cuda.stream(s):\n        m(x)\n"
             "    with torch.cuda.graph(g, stream=s):\n        y = m(x)\n"),
        Case(_PRE + "def f(g, m, x):\n    s = torch.cuda.Stream()\n    with torch.cuda.stream(s):\n        m(x)\n"
             "        g.capture_begin()\n        y = m(x)\n        g.capture_end()\n"),
        Case(_PRE + "# with torch.cuda.graph(g): y = m(x)\ns = 'g.capture_begin()'\n"),
        Case(_PRE + "import tensorflow as tf\ndef f(m, x):\n    with tf.Graph().as_default():\n        y = m(x)\n"),
        Case(_PRE + "def f(s, m, x):\n    with torch.cuda.stream(s):\n        y = m(x)\n    t = torch.cuda.Stream()\n"),
        Case(_PRE + "def f(g, m, x, **options):\n    for _ in range(3):\n        m(x)\n"
             "    with torch.cuda.graph(g, **options):\n        y = m(x)\n"),
        Case(_PRE + "class M(torch.nn.Module):\n    def forward(self, x):\n        with torch.cuda.stream(self.aux):\n"
             "            return x @ x\ndef f(g, s, m, x):\n    with torch.cuda.stream(s):\n        m(x)\n"
             "    with torch.cuda.graph(g, stream=s):\n        y = m(x)\n"),
    )
    INVALID = (
        Case(_PRE + "def f(g, m, x):\n    for _ in range(3):\n        y = m(x)\n    with torch.cuda.graph(g):\n"
             "        y = m(x)\n",
             _PRE + "def f(g, m, x):\n    side_stream = torch.cuda.Stream()\n"
             "    side_stream.wait_stream(torch.cuda.current_stream())\n    with torch.cuda.stream(side_stream):\n"
             "        for _ in range(3):\n            y = m(x)\n    torch.cuda.current_stream().wait_stream(side_stream)\n"
             "    with torch.cuda.graph(g, stream=side_stream):\n        y = m(x)\n"),
        Case(_PRE + "def f(g, s, m, x):\n    with torch.cuda.stream(s):\n        m(x)\n"
             "    torch.cuda.current_stream().wait_stream(s)\n    with torch.cuda.graph(g):\n        y = m(x)\n",
             _PRE + "def f(g, s, m, x):\n    with torch.cuda.stream(s):\n        m(x)\n"
             "    torch.cuda.current_stream().wait_stream(s)\n    with torch.cuda.graph(g, stream=s):\n        y = m(x)\n"),
        Case(_PRE + "def f(g, m, x):\n    g.capture_begin()\n    y = m(x)\n    g.capture_end()\n"),
        Case(_PRE + "def f(g, m, x):\n    y = torch.cuda.make_graphed_callables(m, (x,))\n"),
        Case(_PRE + "def f(g, m, x, s):\n    with torch.cuda.graph(g, stream=s):\n        t = torch.cuda.Stream()\n"
             "        with torch.cuda.stream(t):\n            y = m(x)\n"),
    )

    def on_event(self, event: RegionEvent) -> None:
        """In captured code. A stream made there is new at every call, so no warm-up can have
        run on it. A stream entered in the capture's own block must have been entered (and
        used) before the capture; one entered in a function the capture calls is not
        reported: the warm-up calls of that function entered it too."""
        where, region = self.where(event), event.region
        if isinstance(event, StreamCreated):
            self.hazard(event.node, f"`{self.found.short(event.node)}` makes a new stream {where}: no warm-up ran"
                        f" on it; {_HIPBLASLT}: make the stream before the capture and run the same work on it once")
        elif (isinstance(event, StreamEntered) and not event.via and region.nodes
              and not self.found.entered_before(region.scope, region.start, event.stream)):
            self.hazard(event.node, f"stream `{event.stream}` is entered {where} but no warm-up ran on it before"
                        f" the capture; {_HIPBLASLT}: run the same work in `with torch.cuda.stream("
                        f"{event.stream}):` once before the capture")

    def check(self, found: _regions.Analysis) -> None:
        super().check(found)  # streams made or entered in captured code
        for scope, node in found.capture_withs:
            _check_graph_with(self, found, node)
        for scope, call in found.capture_begins:
            _check_capture_begin(self, found, scope, call)
        for _scope, call in found.graphed_calls:
            line = found.line(call)
            self.hazard(call, f"`make_graphed_callables` (line {line}) warms up on one stream and captures on"
                        f" another in torch builds without pytorch#187745; {_HIPBLASLT}: use a torch with that fix,"
                        " or capture by hand: warm up on a side stream `s` and capture with"
                        " `torch.cuda.graph(g, stream=s)`")


def _graph_call(found, node: cst.With) -> Optional[cst.Call]:
    for item in node.items:
        expr = item.item
        if isinstance(expr, cst.Call) and found.qnames(expr.func) & _regions.GRAPH_CM_NAMES:
            return expr
    return None


def _stream_arg(call: cst.Call) -> Optional[cst.Arg]:
    arg = keyword(call, "stream")
    if arg is not None:
        return arg
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[2] if len(positional) > 2 else None


def _is_stream_cm(found, expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Call) and found.ctx.may_resolve(expr.func, _regions.STREAM_CM_NAMES)
            and bool(found.qnames(expr.func) & _regions.STREAM_CM_NAMES))


def _check_graph_with(rule, found, node: cst.With) -> None:
    call = _graph_call(found, node)
    if call is None:
        return
    line = found.line(call)
    if any(a.star == "**" for a in call.args):
        return  # `**options` may hold stream=
    arg = _stream_arg(call)
    if arg is not None:
        value = arg.value
        if isinstance(value, cst.Call) and found.qnames(value.func) & _regions.STREAM_NEW_NAMES:
            rule.hazard(value, f"the capture at line {line} runs on a stream made for it, on which no"
                        f" warm-up ran; {_HIPBLASLT}: make the stream first, warm up on it, then pass it as `stream=`")
        return
    # A fix that moves the warm-up reports from the warm-up to the capture: its span holds
    # every line the fix rewrites.
    fix, moved = _graph_fix(rule, found, node, call)
    rule.hazard(call, f"the capture at line {line} runs on torch.cuda.graph's own stream, not the one the"
                f" warm-up ran on; {_HIPBLASLT}: warm up on a side stream and pass it as `stream=`",
                fix or Fix(Applicability.DISPLAY_ONLY, "Warm up on a side stream `s`, then capture with"
                           " `torch.cuda.graph(g, stream=s)`"), start=moved)


def _graph_fix(rule, found, node: cst.With, call: cst.Call) -> Tuple[Optional[Fix], Optional[cst.CSTNode]]:
    """The fix, and the warm-up loop it moves (None when it moves none)."""
    ctx = rule.context
    if not call.args:
        return None, None
    between: List[cst.CSTNode] = []
    warmup, stmt = None, node
    while warmup is None:
        block = rule.parent(stmt)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None, None
        body = list(block.body)
        index = next(i for i, s in enumerate(body) if s is stmt)
        for before in reversed(body[:index]):
            if isinstance(before, cst.SimpleStatementLine):
                between.append(before)
                continue
            warmup = before
            break
        if warmup is None:  # the capture opens a `try:` body: look before the `try`
            owner = rule.parent(block)
            if not isinstance(owner, cst.Try) or owner.body is not block:
                return None, None
            stmt = owner
    insert_at = ctx.span(call.args[-1].value)[1]
    # 1. A warm-up in `with torch.cuda.stream(s):`: capture on s.
    if isinstance(warmup, cst.With):
        if len(warmup.items) != 1 or not _is_stream_cm(found, warmup.items[0].item):
            return None, None
        cm = warmup.items[0].item
        if not cm.args or not isinstance(cm.args[0].value, cst.Name) or cm.args[0].keyword is not None:
            return None, None
        name = cm.args[0].value.value
        if any(_binds(stmt, name) for stmt in between):
            return None, None
        return Fix(Applicability.SAFE, f"Capture on the warm-up stream: `stream={name}`",
                   (ctx.edit(insert_at, insert_at, f", stream={name}"),)), None
    # 2. A warm-up loop: run it on a new side stream, and capture there.
    if not isinstance(warmup, (cst.For, cst.While)) or warmup.orelse is not None:
        return None, None
    if not isinstance(call.func, cst.Attribute) or found.qnames(call.func.value) != {"torch.cuda"}:
        return None, None
    if _mentions_stream(found, warmup) or _leaves_early(warmup):
        return None, None
    cuda = found.code(call.func.value)
    start, end = ctx.span(warmup)
    text, lines = ctx.text, ctx.lines
    line_start = lines.line_span(lines.position(start).row)[0]
    indent = text[line_start:start]
    if indent.strip(" \t") or _UNSAFE_TEXT.search(text[line_start:end]):
        return None, None
    row_end = lines.position(end).row
    if end > lines.line_span(row_end)[0]:
        if row_end >= len(lines.starts):
            return None, None  # the loop ends the file without a newline: no capture follows
        end = lines.starts[row_end]  # through the last line's terminator
    unit = warmup.body.indent if isinstance(warmup.body, cst.IndentedBlock) and warmup.body.indent else None
    unit = unit or found.module.default_indent
    nl = ctx.newline()
    name = _free_name(text, "side_stream")
    moved = "".join(unit + line if line.strip() else line for line in text[line_start:end].splitlines(keepends=True))
    head = (f"{indent}{name} = {cuda}.Stream(){nl}{indent}{name}.wait_stream({cuda}.current_stream()){nl}"
            f"{indent}with {cuda}.stream({name}):{nl}")
    tail = f"{indent}{cuda}.current_stream().wait_stream({name}){nl}"
    return Fix(Applicability.SAFE, "Warm up on a side stream and capture on it (`stream=`)",
               (ctx.edit(line_start, end, head + moved + tail),
                ctx.edit(insert_at, insert_at, f", stream={name}"))), warmup


def _binds(stmt: cst.CSTNode, name: str) -> bool:
    """Does a simple statement line (re)bind ``name``?"""
    hit = False

    class _Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal hit
            hit = hit or node.value == name

    for small in getattr(stmt, "body", ()):
        if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            for target in targets:
                _walk.visit(target, _Visitor())
        elif isinstance(small, (cst.Del, cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom)):
            _walk.visit(small, _Visitor())
    return hit


def _mentions_stream(found, node: cst.CSTNode) -> bool:
    for call in found.calls_in([node]):
        if found.qnames(call.func) & (_regions.STREAM_CM_NAMES | _regions.STREAM_NEW_NAMES | _regions.GRAPH_CM_NAMES):
            return True
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("wait_stream", "capture_begin"):
            return True
    return False


def _leaves_early(loop: cst.CSTNode) -> bool:
    """A `return`, `yield` or `raise` in the loop would skip the closing `wait_stream`: the
    caller could then read the warm-up's results on its stream before they are ready."""
    stack = [loop]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Return, cst.Yield, cst.Raise, cst.Await)):
            return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(node.children)
    return False


def _free_name(text: str, base: str) -> str:
    name, n = base, 1
    while re.search(rf"\b{name}\b", text):
        n += 1
        name = f"{base}_{n}"
    return name


def _check_capture_begin(rule, found, scope, call: cst.Call) -> None:
    line = found.line(call)
    stream_with = None
    for ancestor in rule.ancestors(call):
        if isinstance(ancestor, cst.With) and any(_is_stream_cm(found, i.item) for i in ancestor.items):
            stream_with = ancestor
            break
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
            break
    if stream_with is None:
        rule.hazard(call, f"`{found.short(call.func)}()` (line {line}) captures on the current stream,"
                    f" on which no side-stream warm-up ran; {_HIPBLASLT}: warm up in `with torch.cuda.stream(s):`"
                    " and capture in the same block")
        return
    cm = next(i.item for i in stream_with.items if _is_stream_cm(found, i.item))
    stream = found.code(cm.args[0].value) if cm.args else ""
    begin = found.offset(call)
    block = stream_with.body
    for other in found.calls_in(block.body if isinstance(block, cst.IndentedBlock) else (block,)):
        if found.offset(other) >= begin:
            continue
        name = other.func.attr.value if isinstance(other.func, cst.Attribute) else found.code(other.func)
        if name.rsplit(".", 1)[-1] not in _NOT_WARMUP:
            return  # something ran on the stream before the capture
    if stream and found.entered_before(scope, found.offset(stream_with), stream):
        return
    rule.hazard(call, f"`{found.short(call.func)}()` (line {line}) captures on stream `{stream}`, on"
                f" which nothing ran before; {_HIPBLASLT}: run the work once on `{stream}` before the capture")


RULES = [CaptureHostSync, CaptureDynamicShape, CaptureRngState, CaptureCompileWithoutWarmup,
         CapturePageableCopy, SynchronizeAnywhere, CaptureStreamWarmup]
