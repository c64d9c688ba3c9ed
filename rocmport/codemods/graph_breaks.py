"""ROC4xx: graph breaks inside compiled code.

Compiled code is a function decorated with ``@torch.compile`` (with or without arguments),
a function compiled by assignment (``f = torch.compile(f)``, ``self.forward =
torch.compile(self.forward)``), or the ``forward`` of a module whose instance is compiled
(``model = torch.compile(Model())``, ``self.net = torch.compile(self.net)``), followed
through the calls it makes to functions and methods of the same file: the shared analysis
(``_regions``) walks each compiled function and lists what the code it reaches does as typed
events (``_events``); each rule below picks its events in ``on_event`` and writes its own
message. Code under ``@torch.compiler.disable`` / ``torch._dynamo.disable`` is an eager
island: it is neither reported nor followed.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport.findings import Applicability, Fix

from . import _regions
from ._events import BooleanMaskIndex, DataDependentShape, LoggingCall, PrintCall, RegionEvent, ScalarRead, TensorBranch
from ._torch import COMPILE_NAMES
from .base import Case, Rule


class _GraphBreakRule(_regions.RegionRule, Rule):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)
    TRIGGERS = ("compile",)
    # torch.compile or torch.compiler.compile, as a decorator or a call: its code spells
    # ``compile`` and the import it resolves through names ``torch``
    WORDS = (("compile",), ("torch",))
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    REGION = "in_compiled"

    @classmethod
    def may_match(cls, facts) -> bool:
        # Compiled code is a function decorated with torch.compile, or the first positional
        # argument of a torch.compile call (``_regions.Analysis._mark_compiled``).
        return facts.decorated_with(COMPILE_NAMES) or any(
            call.args and not isinstance(call.args[0], ast.Starred) for call in facts.calls_to(COMPILE_NAMES))

    def hazard(self, node: cst.CSTNode, message: str) -> None:
        """Report ``node`` once: the first event of a node names the shortest chain."""
        if id(node) not in self._reported:
            self._reported.add(id(node))
            self.report(node, message, fix=Fix(Applicability.DISPLAY_ONLY, self.SUMMARY))

    @staticmethod
    def where(event: RegionEvent) -> str:
        """``inside `Model.forward`, compiled at line 40, via step() → norm()``."""
        text = f"inside `{event.region.compiled_label}`, compiled at line {event.region.line}"
        return text + (", via " + " → ".join(f"{s.label}()" for s in event.via) if event.via else "")


_PRE = "import torch\n"
_REACH = """
        Compiled code is a function decorated with `@torch.compile` (or `@torch.compile(...)`),
        a function compiled by assignment (`f = torch.compile(f)`), a method compiled in place
        (`self.forward = torch.compile(self.forward)`: that class's method only), and the
        `forward` (or `__call__`) of a class of the file whose instance is compiled
        (`model = torch.compile(Model())`, `self.net = torch.compile(self.net)`). The analysis
        follows calls to functions and methods of the same file, through `self.method()` and
        instances of classes defined in the file, transitively; it does not enter code under
        `@torch.compiler.disable` / `torch._dynamo.disable` (an eager island), and follows only
        the compiled side of an `if torch.compiler.is_compiling():` guard. The message names
        the compiled function, the line where it is compiled and the call chain.
        """


class CompiledScalarRead(_GraphBreakRule):
    CODE = "ROC401"
    NAME = "compiled-scalar-read"
    SUMMARY = "`.item()`, `.tolist()` or `.numpy()` in compiled code breaks the graph."
    WHAT = """
        `.item()`, `.tolist()` and `.numpy()` in compiled code. `.item()` and `.tolist()` are
        not reported when the file turns `capture_scalar_outputs` on.
        """ + _REACH
    WHY = """
        Dynamo cannot trace a tensor's value into Python: it breaks the graph, runs the rest
        eagerly and synchronizes with the device. With a CUDA-graph mode a break also splits
        the captured graphs, which is where ROCm's HIP graphs are slowest and least tested.
        """
    EXAMPLE = """
        @torch.compile
        def step(x):
            scale = x.abs().max().item()
            return x / scale
        """
    FIX = """
        Display-only: keep the value a tensor (`x / x.abs().max()`), move the read out of the
        compiled function, or set `torch._dynamo.config.capture_scalar_outputs = True` for
        `.item()`.
        """
    VALID = (
        Case(_PRE + "def f(x):\n    return x.item()\n"),
        Case(_PRE + "import torch._dynamo\ntorch._dynamo.config.capture_scalar_outputs = True\n"
             "@torch.compile\ndef f(x):\n    return x.sum().item()\n"),
        Case(_PRE + "@torch.compile\ndef f(d):\n    return [k for k, v in d.items()]\n"),
        Case(_PRE + "@torch.compiler.disable\ndef f(x):\n    return x.item()\n"),
        Case(_PRE + "@torch.compiler.disable\ndef h(x):\n    return x.item()\n"
             "@torch.compile\ndef f(x):\n    return h(x)\n"),
    )
    INVALID = (
        Case(_PRE + "@torch.compile\ndef f(x):\n    return x.sum().item()\n"),
        Case(_PRE + "def h(x):\n    return x.tolist()\n@torch.compile(fullgraph=True)\ndef f(x):\n    return h(x)\n"),
        Case(_PRE + "class M(torch.nn.Module):\n    def forward(self, x):\n        return x.numpy()\n"
             "model = torch.compile(M())\n"),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, ScalarRead):
            if event.method in ("item", "tolist") and self.found.capture_scalars:
                return
            remedy = ("keep it a tensor, or set `torch._dynamo.config.capture_scalar_outputs = True`"
                      if event.method in ("item", "tolist") else "keep it a tensor, or move it out of the compiled code")
            self.hazard(event.node, f"`.{event.method}()` breaks the graph {self.where(event)}: {remedy}")


class CompiledPrint(_GraphBreakRule):
    CODE = "ROC402"
    NAME = "compiled-print-or-log"
    SUMMARY = "`print()` or a logging call in compiled code breaks the graph."
    WHAT = """
        The built-in `print` and logging calls (`logging.info(...)`, `logger.warning(...)`
        on a `logging.getLogger()` logger or a name such as `logger` / `log`) in compiled code.
        Functions that merely contain "print" in their name (device-side printf kernels) are
        not Python's `print`.
        """ + _REACH
    WHY = """
        Dynamo graph-breaks on `print` and on logging calls: the compiled function is split
        in pieces that run with eager Python in between, losing most of the speed-up (and,
        with CUDA graphs, splitting the captured graphs).
        """
    EXAMPLE = """
        @torch.compile
        def step(x):
            print("step", x.shape)
            return x * 2
        """
    FIX = """
        Display-only: move the print out of the compiled function, or guard it with
        `if not torch.compiler.is_compiling():`.
        """
    VALID = (
        Case(_PRE + "def f(x):\n    print(x)\n"),
        Case(_PRE + "@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n"
             "    return x\n"),
        Case(_PRE + "import debug_print\n@torch.compile\ndef f(x):\n    debug_print.print_tensor(x)\n"),
    )
    INVALID = (
        Case(_PRE + "@torch.compile\ndef f(x):\n    print('step')\n    return x\n"),
        Case(_PRE + "import logging\nlogger = logging.getLogger(__name__)\n"
             "def f(x):\n    logger.info('x')\n    return x\nf = torch.compile(f)\n"),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, (PrintCall, LoggingCall)):
            what = ("`print()`" if isinstance(event, PrintCall)
                    else f"logging call `{self.found.short(event.node.func)}()`")
            self.hazard(event.node, f"{what} breaks the graph {self.where(event)}: move it out of the compiled"
                        " code, or guard it with `if not torch.compiler.is_compiling():`")


class CompiledTensorBranch(_GraphBreakRule):
    CODE = "ROC403"
    NAME = "compiled-tensor-branch"
    SUMMARY = "Python `if` / `while` on a tensor value in compiled code breaks the graph."
    WHAT = """
        An `if` or `while` whose test is a tensor value (`if x.sum() > 0:`, `if mask.any():`,
        `if t:` on a parameter annotated `Tensor`) in compiled code. Tests on shapes, sizes,
        `None` and other Python values are not flagged.
        """ + _REACH
    WHY = """
        Dynamo cannot decide the branch without the tensor's value: it breaks the graph
        (data-dependent control flow) and reads the value on the host, a synchronization.
        """
    EXAMPLE = """
        @torch.compile
        def f(x):
            if x.sum() > 0:
                return x
            return -x
        """
    FIX = """
        Display-only: `torch.where(cond, a, b)` for values, `torch.cond` for branches, or decide
        the branch before the compiled call.
        """
    VALID = (
        Case(_PRE + "@torch.compile\ndef f(x, k=None):\n    if k is not None and x.shape[0] > 1:\n"
             "        return x\n    return -x\n"),
        Case(_PRE + "def f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"),
    )
    INVALID = (
        Case(_PRE + "@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"),
        Case(_PRE + "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.forward = torch.compile(self.forward)\n"
             "    def forward(self, x: torch.Tensor):\n        while x:\n            x = x - 1\n        return x\n"),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, TensorBranch):
            self.hazard(event.node, f"`{event.keyword}` on a tensor value breaks the graph {self.where(event)}"
                        " (data-dependent control flow): use `torch.where` or `torch.cond`, or decide before"
                        " the compiled call")


class CompiledDynamicShape(_GraphBreakRule):
    CODE = "ROC404"
    NAME = "compiled-dynamic-shape"
    SUMMARY = "An operation whose output shape depends on the data (`nonzero`, `unique`, ...) in compiled code."
    WHAT = """
        `torch.nonzero` / `.nonzero()`, `argwhere`, `masked_select`, `unique`,
        `unique_consecutive`, one-argument `torch.where`, `repeat_interleave` without
        `output_size=`, and boolean-mask indexing (`x[mask]`) whose size is then read
        (`.numel()`, `.size()`, `.shape`, `len()`), in compiled code.
        """ + _REACH
    WHY = """
        The output's shape depends on the tensor's values. Unless
        `torch._dynamo.config.capture_dynamic_output_shape_ops` is on, dynamo breaks the graph
        there; otherwise the shape is a fresh symbol and reading it recompiles or breaks.
        Each break splits the compiled function (and, with a CUDA-graph mode, the captured
        graphs, where ROCm's HIP graphs are slowest and least tested).
        """
    EXAMPLE = """
        @torch.compile
        def route(x, scores):
            idx = scores.argmax(-1).nonzero()
            return x[idx]
        """
    FIX = """
        Display-only: keep a fixed shape (`torch.where(mask, x, 0)`, a fixed `size=` for
        `nonzero_static`/`unique`, `output_size=` for `repeat_interleave`), or move the
        operation out of the compiled code.
        """
    VALID = (
        Case(_PRE + "def f(x):\n    return x.nonzero()\n"),
        Case(_PRE + "@torch.compile\ndef f(x, mask):\n    y = x[mask]\n    return y * 2\n"),
        Case(_PRE + "@torch.compile\ndef f(x):\n    return x.repeat_interleave(2)\n"),
        Case(_PRE + "@torch.compile\ndef f(x, mask):\n    return torch.where(mask, x, 0)\n"),
    )
    INVALID = (
        Case(_PRE + "@torch.compile\ndef f(x):\n    return torch.nonzero(x)\n"),
        Case(_PRE + "@torch.compile\ndef f(x, mask: torch.Tensor):\n    y = x[mask > 0]\n    n = y.numel()\n"
             "    return y, n\n"),
        Case(_PRE + "class M(torch.nn.Module):\n    def forward(self, x):\n        return x.unique()\n"
             "model = torch.compile(M().cuda().eval())\n"),
    )

    def on_event(self, event: RegionEvent) -> None:
        if isinstance(event, DataDependentShape):
            label = f".{event.op}()" if event.method else f"{event.op}()"
        elif isinstance(event, BooleanMaskIndex) and event.size_read:
            label = "boolean-mask indexing whose size is then read"
        else:
            return
        self.hazard(event.node, f"`{label}` has a data-dependent shape {self.where(event)}: dynamo breaks the"
                    " graph there (or recompiles per shape); keep a fixed shape (`torch.where(mask, x, 0)`, a"
                    " fixed `size=`) or move it out of the compiled code")


RULES = [CompiledScalarRead, CompiledPrint, CompiledTensorBranch, CompiledDynamicShape]
