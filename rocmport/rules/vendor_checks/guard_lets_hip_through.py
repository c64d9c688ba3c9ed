"""ROC708 guard-lets-hip-through: A platform test that is true on ROCm guards CUDA-only code.

The rule's documentation is its class's (`rocmport rule ROC708` prints it).
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Optional, Tuple

import libcst as cst

from rocmport.analysis import gates
from rocmport.analysis.cuda_only import (LIBRARY_LOADERS, NVML_MODULES, PACKAGES, TOOLCHAIN_CALLS, branch_nodes,
                                         imported_names, loads_cuda_library, package_of)
from rocmport.analysis.platforms import ON_GPU
from rocmport.analysis.syntax import dotted_name, literal_string
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import NVIDIA_ONLY, VendorRule, describe_chain, guard_reason, hip_guard, mentions, tolerated, walk

_ROOTS = frozenset(name.split(".", 1)[0] for name in PACKAGES) | NVML_MODULES
_CALLS = frozenset(TOOLCHAIN_CALLS) | LIBRARY_LOADERS
# the text holds one of these wherever such an import or call is (substrings: the package's
# own name, or ``import cuda`` / ``from cuda`` for cuda-python, whose name torch.cuda spells)
_COMMON = frozenset({"cuda", "cudnn", "numba", "flash_attn", "triton"})  # words torch code spells anyway
_TRIGGERS = tuple(sorted({root for root in _ROOTS - _COMMON} | {f"{kw} {root}" for root in _COMMON
                                                                for kw in ("import", "from")}
                         | {"_get_cuda_arch_flags", "DLL", "LoadLibrary"}))


class GuardLetsHipThrough(VendorRule):
    CODE = "ROC708"
    NAME = "guard-lets-hip-through"
    SUMMARY = "A platform test that is true on ROCm guards CUDA-only code."
    # No NEEDS: the CUDA-only statement may import a project module whose import runs
    # CUDA-only code, which only the project's other modules decide (``index_triggers``).
    TRIGGERS = _TRIGGERS
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        An `if` / `elif` / `else`, `while` or conditional expression whose test is a platform
        test that is true on ROCm too, around CUDA-only code:

        - the tests: `torch.cuda.is_available()`, `device_count() > 0`, `device.type == "cuda"`,
          `not is_cpu() and not is_npu()`, `_is_cuda or _is_hip`, a capability threshold
          (`get_device_capability()[0] >= 8`: MI300 is (9, 4)), and the project's own
          predicates that mean one of these;
        - the code: an import of a package with no ROCm build (ROC707's list), of NVML
          (`pynvml`, `py3nvml`, `nvidia_smi`, `GPUtil`), of a project module whose import runs
          CUDA-only code (ROC707's chain), a call of `torch.utils.cpp_extension._get_cuda_arch_flags()`
          or `ctypes.CDLL("libcudart.so")` and its spellings.

        The finding is on the test, once per guard, naming the first CUDA-only statement it
        lets ROCm reach. For NVML the finding is here, on the decision, and ROC703 leaves
        the import under such a guard alone (one finding per decision).

        Not reported: the same code under a test that excludes ROCm (`if torch.version.hip is
        None:`, `if is_cuda():`, the `else` of `if is_rocm_available():`), after an earlier
        `if torch.version.hip: return`, inside `try` (the code copes with the failure), under
        a test rocmport cannot read (`if use_nvml:`) nearer than the platform test.
        """
    WHY = """
        On a ROCm build `torch.cuda` is HIP: `torch.cuda.is_available()` is True on AMD GPUs,
        and an AMD GPU reports capability (9, 4) (MI300) or (9, 5) (MI350), which meets
        NVIDIA thresholds. The branch meant for NVIDIA GPUs runs there and fails:
        accelerate's NUMA affinity tested `torch.cuda.is_available()` and then called NVML
        (`nvmlInit`, `nvmlDeviceGetCpuAffinity`), which fails on ROCm: the feature was built
        for NVIDIA first, AMD "as a follow up" (huggingface/accelerate#2241), and the NVML
        branch ran on AMD GPUs until huggingface/accelerate#4025 gave ROCm an amdsmi branch.
        """
    EXAMPLE = """
        def set_affinity(index):
            if torch.cuda.is_available():
                import pynvml
                pynvml.nvmlInit()
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        """
    FIX = """
        Display-only: test the vendor, and give ROCm its own branch (or none):

            if torch.cuda.is_available() and torch.version.hip is not None:
                import amdsmi  # ROCm: amdsmi / torch's own queries
                ...
            elif torch.cuda.is_available():
                import pynvml
                ...
        """
    VALID = (
        Case("""
            import torch
            if torch.cuda.is_available() and torch.version.hip is None:
                import pynvml
            """),
        Case("""
            import torch
            def affinity():
                if torch.cuda.is_available():
                    if is_rocm_available():
                        import amdsmi
                    else:
                        import pynvml
            """),
        Case("""
            import torch
            def f():
                if torch.version.hip:
                    return None
                if torch.cuda.is_available():
                    import pynvml
            """),
        Case("""
            import torch
            if torch.cuda.is_available():
                try:
                    import pynvml
                except ImportError:
                    pynvml = None
            """),
        Case("""
            import torch
            if torch.cuda.is_available():
                if use_nvml:
                    import pynvml
            """),
        # an availability probe decides, not the GPU test beside it
        Case("""
            import importlib.util
            import torch
            cutedsl_available = importlib.util.find_spec("cutlass") is not None and torch.cuda.is_available()
            if cutedsl_available:
                import cutlass
            """),
        # flash_attn and triton ship ROCm builds
        Case("""
            import torch
            if torch.cuda.is_available():
                import flash_attn
                import triton
            """),
        # the hazard's words in a string
        Case("""
            import torch
            if torch.cuda.is_available():
                print("import pynvml to see the GPUs")
            """),
        Case("""
            import torch
            if is_cuda():
                import cuda.bindings.driver as cuda
            """),
        # ROC702's decision: a Hopper threshold, or one that turns on an NVIDIA-only feature
        Case("""
            import torch
            if torch.cuda.get_device_capability()[0] >= 9:
                import pynvml
            if torch.cuda.get_device_capability()[0] >= 8:
                import deep_gemm
            """),
    )
    INVALID = (
        Case("""
            import torch
            if torch.cuda.is_available():
                import pynvml
            """, line=2, column=4,
            message=(
                '`torch.cuda.is_available()` lets ROCm through (HIP is torch.cuda on ROCm, so this is true on AMD '
                'GPUs), and the code it guards is CUDA-only: `import pynvml` at line 3 (NVML does not exist on ROCm; '
                'ROC703 leaves this import to this finding)')),
        Case("""
            def build():
                if not is_cpu() and not is_npu():
                    import torch.utils.cpp_extension as cx
                    return cx._get_cuda_arch_flags()
            """, line=2,
            column=8,
            message=(
                '`not is_cpu() and not is_npu()` lets ROCm through (it tells other platforms apart, not NVIDIA from '
                'AMD), and the code it guards is CUDA-only: `torch.utils.cpp_extension._get_cuda_arch_flags()` at line '
                "4 (derives nvcc -gencode flags from the GPUs' capabilities and raises on a ROCm build, whose arch "
                'list holds no sm_ entry)')),
        Case("""
            import torch
            if torch.cuda.get_device_capability()[0] >= 8:
                from cuda.bindings import driver
            """, line=2,
            column=4,
            message=(
                '`torch.cuda.get_device_capability()[0] >= 8` lets ROCm through (AMD GPUs report capabilities (9, 4), '
                '(9, 5), (11, 0), which meet NVIDIA thresholds), and the code it guards is CUDA-only: `import '
                "cuda.bindings` at line 3 (cuda-python (cuda.bindings, cuda.core, cuda.tile), bindings to NVIDIA's "
                'driver and runtime, which has no ROCm build)')),
        Case("""
            if _is_cuda or _is_hip:
                from cutlass import cute
            """, line=1,
            column=4,
            message=(
                '`_is_cuda or _is_hip` lets ROCm through (it is true on ROCm by its own terms), and the code it guards '
                'is CUDA-only: `import cutlass` at line 2 (the CUTLASS / CuTe DSL (nvidia-cutlass-dsl), for NVIDIA '
                'GPUs only, which has no ROCm build)')),
        Case("""
            import torch
            if is_cpu():
                pass
            else:
                import pynvml
            """, line=2,
            column=4,
            message=(
                'the `else` of `is_cpu()` runs on ROCm too, and the code it guards is CUDA-only: `import pynvml` at '
                'line 5 (NVML does not exist on ROCm; ROC703 leaves this import to this finding)')),
        Case("""
            import ctypes
            import torch
            lib = ctypes.CDLL("libcudart.so") if torch.cuda.is_available() else None
            """, line=3,
            column=38,
            message=(
                '`torch.cuda.is_available()` lets ROCm through (HIP is torch.cuda on ROCm, so this is true on AMD '
                'GPUs), and the code it guards is CUDA-only: `ctypes.CDLL("libcudart.so")` at line 3 (loads an NVIDIA '
                'library, which a ROCm system does not have)')),
        Case("""
            import torch
            if torch.cuda.is_available():
                from .kernels import cute_gemm
            """, path="pkg/ops.py", line=2, files=(("pkg/__init__.py", ""), ("pkg/kernels/__init__.py", ""),
                                                   ("pkg/kernels/cute_gemm.py", "import cutlass\n")),
            column=4,
            message=(
                '`torch.cuda.is_available()` lets ROCm through (HIP is torch.cuda on ROCm, so this is true on AMD '
                'GPUs), and the code it guards is CUDA-only: `import pkg.kernels.cute_gemm` at line 3 (its import runs '
                'CUDA-only code: `pkg.kernels.cute_gemm` imports `cutlass` at line 1: the CUTLASS / CuTe DSL '
                '(nvidia-cutlass-dsl), for NVIDIA GPUs only, which has no ROCm build)')),
    )

    def __init__(self, context):
        super().__init__(context)
        self._reported: Dict[int, bool] = {}

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """The CUDA-only statement spells a package, NVML, a call or a project module's name,
        and its guard is around it (in the same definition)."""
        index = getattr(facts, "index", None)
        words = set(_ROOTS) | {"_get_cuda_arch_flags", "CDLL", "LoadLibrary", "PyDLL", "WinDLL"}
        return frozenset(words | (index.cuda_words() if index is not None else set()))

    @classmethod
    def index_triggers(cls, index):
        """With the project index: also the names of the project's modules whose import runs
        CUDA-only code."""
        return _TRIGGERS, index.cuda_words()

    @classmethod
    def may_match(cls, facts) -> bool:
        """In a branch and not in a ``try`` that copes (``cuda_only.branch_nodes``): an import of
        a CUDA-only package, NVML or a project module that runs CUDA-only code at import, or a
        call of a CUDA toolchain helper or library loader."""
        if facts.tree is None:
            return True
        if not any(True for _ in facts.nodes(ast.If, ast.IfExp, ast.While)):
            return False
        index, path = getattr(facts, "index", None), getattr(facts, "path", None)
        own = index.module_name(path) if index is not None and path else None

        def cuda_only(node) -> bool:
            if isinstance(node, ast.Call):
                return facts.may_be(node.func, _CALLS)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0) and any(
                    name.split(".", 1)[0] in NVML_MODULES or package_of(name) is not None
                    for name in imported_names(node, lambda module, level: None)):
                return True  # as ``_imported`` reads it: `import triton` is not TLX's import
            if own is not None:
                for name in imported_names(node, lambda module, level: index.absolute(own, module, level)):
                    if name != own and index.path_of(name) is not None and index.cuda_chain(name) is not None:
                        return True
            return False

        # first the candidates anywhere (cheap); only then where they sit
        if not any(cuda_only(n) for n in list(facts.nodes(ast.Import, ast.ImportFrom)) + list(facts.calls_to(_CALLS))):
            return False
        return any(cuda_only(node) for node in branch_nodes(facts.tree))

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            found = self._imported(dotted_name(alias.name) or "", relative=False)
            if found is not None:
                self._check(node, *found)
                return

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None else None
        level = len(node.relative)
        names = [module] if module else []
        if level:
            index = self.context.index
            own = index.module_name(self.context.path) if index is not None else None
            base = index.absolute(own, module, level) if own is not None else None
            names = [base] if base else []
        if names and not isinstance(node.names, cst.ImportStar):
            names += [f"{names[0]}.{dotted_name(alias.name)}" for alias in node.names]
        for name in names:
            found = self._imported(name, relative=bool(level))
            if found is not None:
                self._check(node, *found)
                return

    def _imported(self, name: str, relative: bool) -> Optional[Tuple[str, str]]:
        """(what, why) when importing ``name`` is CUDA-only."""
        if not relative:
            root = name.split(".", 1)[0]
            if root in NVML_MODULES:
                return f"import {name}", "NVML does not exist on ROCm; ROC703 leaves this import to this finding"
            found = package_of(name)
            if found is not None:
                return f"import {name}", f"{found[1]}, which has no ROCm build"
        index = self.context.index
        own = index.module_name(self.context.path) if index is not None else None
        if own is None or name == own or index.path_of(name) is None:
            return None
        chain = index.cuda_chain(name)
        if chain is None:
            return None
        return f"import {name}", f"its import runs CUDA-only code: {describe_chain(chain)}"

    def visit_Call(self, node: cst.Call) -> None:
        if not self.is_name(node.func, _CALLS):
            return
        names = {n for n in _CALLS if self.is_name(node.func, frozenset({n}))}
        if names & set(TOOLCHAIN_CALLS):
            name = sorted(names & set(TOOLCHAIN_CALLS))[0]
            self._check(node, f"{name}()", TOOLCHAIN_CALLS[name])
            return
        if node.args and loads_cuda_library(literal_string(node.args[0].value)):
            self._check(node, self.context.module.code_for_node(node).split("\n", 1)[0],
                        "loads an NVIDIA library, which a ROCm system does not have")

    def _roc702s(self, test: cst.BaseExpression) -> bool:
        """A capability threshold that ROC702 reports (a Hopper-or-later one, or one that turns
        on an NVIDIA-only feature it knows by name): one finding per decision, with its fix."""
        read = gates.of(self.context).test(test)
        if read.true != ON_GPU.true or read.false != ON_GPU.false:
            return False
        for node in walk(test):
            if isinstance(node, cst.Integer):
                value = int(node.value.replace("_", ""), 0)
                if (value // 10 if value >= 20 else value) >= 9:
                    return True
        holder = self.parent(test)
        return isinstance(holder, (cst.If, cst.IfExp)) and mentions(holder.body, NVIDIA_ONLY)

    def _check(self, node: cst.CSTNode, what: str, why: str) -> None:
        if tolerated(self, node):
            return
        guard = hip_guard(self, node)
        if guard is None:
            return
        test, body = guard
        if id(test) in self._reported or self._roc702s(test):
            return
        self._reported[id(test)] = True
        code = self.context.module.code_for_node(test).strip()
        line = self.context.position(node).start.line
        head = f"`{code}` lets ROCm through ({guard_reason(self, test)})" if body else \
            f"the `else` of `{code}` runs on ROCm too"
        self.display_only(
            test, f"{head}, and the code it guards is CUDA-only: `{what}` at line {line} ({why})",
            "Test the vendor (`torch.version.hip is None`, or the project's is_cuda()) and give ROCm its own "
            "branch (amdsmi or torch's own queries for NVML)")
