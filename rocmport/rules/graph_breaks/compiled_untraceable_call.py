"""ROC405 compiled-untraceable-call: a call Dynamo cannot trace (ctypes, a process, NVML,
amdsmi, a device query that returns a non-tensor, Triton's driver) reached from compiled code.

The rule's documentation is its class's (`rocmport rule ROC405` prints it).
"""

from __future__ import annotations

import libcst as cst

from rocmport.analysis.events import RegionEvent, UntraceableCall
from rocmport.analysis.platforms import ROCM
from rocmport.analysis.syntax import dotted_name
from rocmport.rules.base import Case

from .common import REACH, GraphBreakRule

_WHAT = {
    "ctypes": "a ctypes foreign-function call",
    "subprocess": "a process call",
    "nvml": "an NVML call",
    "amdsmi": "an amdsmi call (a ctypes call into libamd_smi)",
    "non-tensor": "a `torch.*` call that returns a non-tensor",
    "triton-driver": "a call into Triton's driver",
}
_ADVICE = {
    "torch.cuda.get_device_name": ("read `torch.cuda.get_device_properties(i).name` instead (Dynamo folds"
                                   " `get_device_properties` to a constant), or compute the value once before the"
                                   " compiled call"),
    "triton-driver": ("read `torch.cuda.get_device_properties(i).gcnArchName` instead (Dynamo folds it to a"
                      " constant), or compute the value once before the compiled call"),
}
_DEFAULT_ADVICE = "compute the value once outside the compiled code (before the first compiled call) and keep it"
_CACHES = frozenset({"functools.lru_cache", "functools.cache"})


class CompiledUntraceableCall(GraphBreakRule):
    CODE = "ROC405"
    NAME = "compiled-untraceable-call"
    SUMMARY = "A call Dynamo cannot trace (ctypes, a process, NVML, amdsmi, a device query) in compiled code."
    WHAT = """
        A call that Dynamo cannot trace, reached from compiled code: a ctypes foreign
        function (`ctypes.*`, or a function of a library bound with `ctypes.CDLL(...)` at
        module level), a process (`subprocess.*`, `os.system`, `os.popen`), NVML (`pynvml`,
        `py3nvml`), `amdsmi`, `torch.cuda.device_count()`, `torch.cuda.get_device_name()`,
        `torch.cuda.get_arch_list()` (`torch.*` functions that return a non-tensor) and
        `triton.runtime.driver.active.get_current_target()`. A function of another module of
        the project that makes such a call (directly or through its own calls, found through
        the project index) is reported where the compiled code calls it, with the module and
        line of the call it makes. `functools.lru_cache` / `functools.cache` on such a
        function does not help: Dynamo ignores the cache and traces the wrapped function's
        body on every compile. Not reported: `torch.cuda.get_device_properties(i)` (with
        `.gcnArchName`, `.major`, `.name`), `get_device_capability()`, `current_device()`,
        `mem_get_info()` and `is_available()`, which Dynamo traces without a break (checked
        on an H100; it folds `get_device_properties`, `is_available` and `current_device` to
        constants); a helper under `@torch.compiler.disable` (an eager island); a call on
        the eager side of `if not torch.compiler.is_compiling():`; code that never runs on
        ROCm.
        """ + REACH
    WHY = """
        Dynamo cannot trace into C code it does not know: a ctypes foreign function gives
        "Unsupported method call" (with `CDLL.__getattr__` in the traced code, Dynamo gives
        up on the whole function: "Failed to handle graph break gracefully. Skipping the
        function and falling back to eager"), `subprocess`, NVML and Triton's driver are
        "Attempted to call function marked as skipped", and `torch.cuda.device_count()`,
        `get_device_name()` and `get_arch_list()` are "torch.* op returned non-Tensor". Each
        is a graph break (the compiled function runs in pieces with eager Python between
        them) and, under `torch.compile(..., fullgraph=True)`, a hard
        `torch._dynamo.exc.Unsupported` error. All of this was run on torch 2.13 (CPU,
        `backend="eager"`) and on torch 2.11 on an H100; `functools.lru_cache` changes
        nothing, even with the cache warm: torch 2.13 wraps a cached function in
        `WrapperUserFunctionVariable(value, "__wrapped__")` and traces its body
        (`torch/_dynamo/variables/builder.py` line 1737, with the warning "Dynamo detected a
        call to a `functools.lru_cache`-wrapped function ... Dynamo ignores the cache wrapper
        and directly traces the wrapped function", `variables/functions.py` line 2580). What
        Dynamo traces instead: `get_device_properties`, `is_available` (and `current_device`,
        with a guard) are in its `constant_fold_functions` (`torch/_dynamo/variables/torch.py`
        lines 176-210), so it calls them while tracing and keeps the answer;
        `device_count`, `get_device_name` and `get_arch_list` are in-graph functions
        (`torch/_dynamo/trace_rules.py`) that it is not allowed to fold, and their non-tensor
        result breaks the graph.

        ROCm ports add exactly these calls to compiled models: the GPU architecture
        (`gfx942`, `gfx950`) read through amdsmi, `rocminfo` / `rocm_agent_enumerator`, or
        Triton's driver target, usually in a cached helper of a platform module, one import
        away from the model whose `forward` is compiled by a project decorator. The break
        appears only on the path that ROCm takes. Threads that show the failures:
        pytorch/pytorch#128095 (a ctypes `_SimpleCData.__new__` call in bitsandbytes'
        functional code: "Attempted to call function marked as skipped"),
        pytorch/pytorch#150240 (`torch.* op returned non-Tensor` raising `Unsupported` under
        `fullgraph=True`), pytorch/pytorch#128071 (third-party C extension calls breaking
        the graph).
        """
    EXAMPLE = """
        import functools
        import subprocess

        @functools.lru_cache
        def gpu_arch():
            return subprocess.check_output(["rocm_agent_enumerator"]).split()[-1]

        @torch.compile(fullgraph=True)
        def scale(x):
            factor = 2 if gpu_arch() == b"gfx942" else 1
            return x * factor
        """
    FIX = """
        Display-only: compute the value once, outside the compiled code (in `__init__`, or
        before the first compiled call) and pass it in or keep it in a plain global; for the
        architecture on ROCm, read `torch.cuda.get_device_properties(i).gcnArchName`, which
        Dynamo folds to a constant. Marking the helper `@torch.compiler.disable` keeps the
        program running but still breaks the graph there.
        """
    VALID = (
        # the call outside compiled code
        Case("""
            import subprocess
            import torch

            def arch():
                return subprocess.check_output(["rocminfo"])

            @torch.compile
            def f(x):
                return x * 2
            """),
        # Dynamo folds get_device_properties (and its gcnArchName) to a constant
        Case("""
            import functools
            import torch

            @functools.lru_cache
            def is_gfx950():
                return "gfx950" in torch.cuda.get_device_properties(0).gcnArchName

            @torch.compile
            def f(x):
                return x * 2 if is_gfx950() else x
            """),
        # a plain Python helper Dynamo traces fine
        Case("""
            import torch

            def scale_of(n):
                return n * 2

            @torch.compile
            def f(x):
                return x * scale_of(3)
            """),
        # an eager island
        Case("""
            import subprocess
            import torch

            @torch.compiler.disable
            def log_gpu():
                subprocess.run(["amd-smi", "monitor"])

            @torch.compile
            def f(x):
                log_gpu()
                return x * 2
            """),
        # the eager side of is_compiling()
        Case("""
            import torch
            import pynvml

            @torch.compile
            def f(x):
                if not torch.compiler.is_compiling():
                    pynvml.nvmlDeviceGetCount()
                return x * 2
            """),
        # code that never runs on ROCm
        Case("""
            import torch
            import pynvml

            @torch.compile
            def f(x):
                if torch.version.hip is None:
                    pynvml.nvmlDeviceGetCount()
                return x * 2
            """),
        # the words in a string, a comment, a look-alike name
        Case("""
            import torch

            @torch.compile
            def f(x):
                # subprocess.run(["rocminfo"])
                note = "ctypes.CDLL('libamd_smi.so')"
                return x * 2

            def device_count():
                return 1
            """),
    )
    INVALID = (
        Case("""
            import subprocess
            import torch

            @torch.compile
            def f(x):
                out = subprocess.run(["rocminfo"], capture_output=True)
                return x * 2
            """, line=6, column=11,
             message="`subprocess.run()` is a process call, which Dynamo cannot trace: the graph breaks inside `f`,"
                     " compiled at line 4 (`torch._dynamo.exc.Unsupported` under `fullgraph=True`): compute the value"
                     " once outside the compiled code (before the first compiled call) and keep it"),
        Case("""
            import functools
            import amdsmi
            import torch

            @functools.lru_cache
            def arch():
                handle = amdsmi.amdsmi_get_processor_handles()[0]
                return amdsmi.amdsmi_get_gpu_asic_info(handle)["target_graphics_version"]

            class Model(torch.nn.Module):
                def forward(self, x):
                    if arch() == "gfx950":
                        return x * 2
                    return x

            model = torch.compile(Model())
            """, line=7, column=14,
             message="`amdsmi.amdsmi_get_processor_handles()` is an amdsmi call (a ctypes call into libamd_smi), which "
                     "Dynamo cannot trace (a `functools` cache on the helper does not help: Dynamo traces its body): "
                     "the graph breaks inside `Model.forward`, compiled at line 16, via arch() "
                     "(`torch._dynamo.exc.Unsupported` under `fullgraph=True`): compute the value once outside the "
                     "compiled code (before the first compiled call) and keep it"),
        Case("""
            import torch

            @torch.compile(fullgraph=True)
            def f(x):
                n = torch.cuda.device_count()
                return x / n
            """, line=5, column=9,
             message="`torch.cuda.device_count()` is a `torch.*` call that returns a non-tensor, which Dynamo cannot "
                     "trace: the graph breaks inside `f`, compiled at line 3 (`torch._dynamo.exc.Unsupported` under "
                     "`fullgraph=True`): compute the value once outside the compiled code (before the first compiled "
                     "call) and keep it"),
        Case("""
            import ctypes
            import torch

            _lib = ctypes.CDLL("libamdhip64.so")

            @torch.compile
            def f(x):
                _lib.hipDeviceSynchronize()
                return x
            """, line=8, column=5,
             message="`_lib.hipDeviceSynchronize()` is a ctypes foreign-function call, which Dynamo cannot trace: the "
                     "graph breaks inside `f`, compiled at line 6 (`torch._dynamo.exc.Unsupported` under "
                     "`fullgraph=True`): compute the value once outside the compiled code (before the first compiled "
                     "call) and keep it"),
        Case("""
            import torch
            import triton

            @torch.compile
            def f(x):
                arch = triton.runtime.driver.active.get_current_target().arch
                return x * 2 if arch == "gfx942" else x
            """, line=6, column=12,
             message="`triton.runtime.driver.active.get_curr...()` is a call into Triton's driver, which Dynamo cannot "
                     "trace: the graph breaks inside `f`, compiled at line 4 (`torch._dynamo.exc.Unsupported` under "
                     "`fullgraph=True`): read `torch.cuda.get_device_properties(i).gcnArchName` instead (Dynamo folds "
                     "it to a constant), or compute the value once before the compiled call"),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._functions: set = set()

    def on_event(self, event: RegionEvent) -> None:
        if not isinstance(event, UntraceableCall):
            return
        if ROCM not in self.platforms(event.node):
            return
        holder = next((a for a in self.ancestors(event.node) if isinstance(a, cst.FunctionDef)), None)
        if id(holder) in self._functions:
            return  # one finding per function: its first such call
        self._functions.add(id(holder))
        what = _WHAT.get(event.kind, "a call")
        advice = _ADVICE.get(event.what) or _ADVICE.get(event.kind, _DEFAULT_ADVICE)
        breaks = "the graph breaks " + self.where(event) + " (`torch._dynamo.exc.Unsupported` under `fullgraph=True`)"
        if event.through:
            cached = " (its `functools` cache does not help: Dynamo traces the cached function's body)" \
                if event.cached else ""
            message = (f"`{event.through}()` calls `{_spelled(event.what)}()` at line {event.line} of"
                       f" `{event.module}`, {what}, which Dynamo cannot trace{cached}: {breaks}: {advice}")
        else:
            cached = ""
            if any(_is_cached(self, scope) for scope in event.via):
                cached = " (a `functools` cache on the helper does not help: Dynamo traces its body)"
            message = (f"`{_spelled(event.what, self.found.short(event.node.func))}()` is {what}, which Dynamo"
                       f" cannot trace{cached}: {breaks}: {advice}")
        self.hazard(event.node, message)


def _spelled(what: str, text: str = "") -> str:
    """How to name the callee: its text here, else its qualified name (``torch.cuda.x``)."""
    return text or what


def _is_cached(rule: CompiledUntraceableCall, scope) -> bool:
    node = getattr(scope, "node", None)
    if not isinstance(node, cst.FunctionDef):
        return False
    for decorator in node.decorators:
        expr = decorator.decorator
        target = expr.func if isinstance(expr, cst.Call) else expr
        name = dotted_name(target) or ""
        if name.rsplit(".", 1)[-1] in ("lru_cache", "cache") and (
                rule.found.qnames(target) & _CACHES or name in ("lru_cache", "cache")):
            return True
    return False
