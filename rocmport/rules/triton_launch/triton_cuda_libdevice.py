"""ROC507 triton-cuda-libdevice: triton.language.extra.cuda.libdevice: NVIDIA's libdevice, absent on ROCm.

The rule's documentation is its class's (`rocmport rule ROC507` prints it).
"""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from rocmport.analysis.needs import Import, Name
from rocmport.analysis.syntax import dotted_name
from rocmport.analysis.triton import (
    CUDA_LIBDEVICE,
)
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Case

from .common import TritonNameRule


class TritonCudaLibdevice(TritonNameRule):
    CODE = "ROC507"
    NAME = "triton-cuda-libdevice"
    SUMMARY = "triton.language.extra.cuda.libdevice: NVIDIA's libdevice, absent on ROCm."
    NEEDS = Import(CUDA_LIBDEVICE) | Name(CUDA_LIBDEVICE)
    WHAT = """
        An import of `triton.language.extra.cuda.libdevice` (`from triton.language.extra.cuda
        import libdevice`, `import triton.language.extra.cuda.libdevice as ld`, `from
        triton.language.extra.cuda.libdevice import fast_expf`) or a use of it through
        attributes (`tl.extra.cuda.libdevice.exp(x)`). Not findings: imports in a ROCm-only
        branch, fallbacks (in an `except` handler, or in the other arm of an `if` that imports
        the backend-neutral module), and the backend-neutral `triton.language.extra.libdevice`
        itself.
        """
    WHY = """
        The module wraps NVIDIA's libdevice (`__nv_*` functions): kernels that call it do not
        compile for AMD GPUs (triton-lang/triton#3825, state-spaces/mamba#1018). From Triton 3.0
        `triton.language.extra.libdevice` is the same API for every backend: each backend maps
        it to its own library (`get_module_map` in `triton/backends/amd/compiler.py` maps it to
        `triton.language.extra.hip.libdevice`).
        """
    EXAMPLE = """
        from triton.language.extra.cuda import libdevice
        """
    FIX = """
        Display-only: import `from triton.language.extra import libdevice` instead (Triton 3.0
        or later; older Triton has only the per-backend modules, so rocmport does not rewrite
        the import). Functions with no HIP counterpart are reported separately (ROC508).
        """
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    VALID = (
        Case("""
            from triton.language.extra import libdevice
            """),
        Case("""
            import triton.language as tl
            x = tl.extra.libdevice.exp
            """),
        Case("""
            import torch
            if torch.version.hip:
                from triton.language.extra.hip import libdevice
            else:
                from triton.language.extra.cuda import libdevice
            """),
        Case('''
            import triton
            """Uses triton.language.extra.cuda.libdevice on NVIDIA."""
            # from triton.language.extra.cuda import libdevice
            '''),
        Case("""
            import triton
            from mypkg.cuda import libdevice
            """),
        Case("""
            try:
                from triton.language.extra import libdevice
            except ImportError:
                from triton.language.extra.cuda import libdevice
            """),
        Case("""
            import triton
            if triton.__version__ >= '3.0':
                from triton.language.extra import libdevice
            else:
                from triton.language.extra.cuda import libdevice
            """),
    )
    INVALID = (
        Case(
            """
            from triton.language.extra.cuda import libdevice
            """,
            line=1,
            column=1,
            message=(
                "this imports NVIDIA's libdevice (triton.language.extra.cuda.libdevice), which AMD GPUs do not have: "
                "the kernels that call it fail to compile on ROCm; import `from triton.language.extra import "
                "libdevice` (Triton >= 3.0 maps it per backend)"
            ),
        ),
        Case(
            """
            import triton.language.extra.cuda.libdevice as ld
            """,
            line=1,
            column=1,
            message=(
                "this imports NVIDIA's libdevice (triton.language.extra.cuda.libdevice), which AMD GPUs do not have: "
                "the kernels that call it fail to compile on ROCm; import `from triton.language.extra import "
                "libdevice` (Triton >= 3.0 maps it per backend)"
            ),
        ),
        Case(
            """
            import triton.language as tl
            import triton
            @triton.jit
            def k(p):
                tl.store(p, tl.extra.cuda.libdevice.tanh(tl.load(p)))
            """,
            line=5,
            column=17,
            message=(
                "this uses NVIDIA's libdevice (triton.language.extra.cuda.libdevice), which AMD GPUs do not have: "
                "the kernels that call it fail to compile on ROCm; import `from triton.language.extra import "
                "libdevice` (Triton >= 3.0 maps it per backend)"
            ),
        ),
        Case(
            """
            from triton.language.extra.cuda.libdevice import fast_expf
            """,
            line=1,
            column=1,
            message=(
                "this imports from NVIDIA's libdevice (triton.language.extra.cuda.libdevice), which AMD GPUs do not "
                "have: the kernels that call it fail to compile on ROCm; import `from triton.language.extra import "
                "libdevice` (Triton >= 3.0 maps it per backend)"
            ),
        ),
        # tried first, the CUDA module is what ROCm gets too (Triton wheels ship both)
        Case(
            """
            try:
                from triton.language.extra.cuda import libdevice
            except ImportError:
                from triton.language.extra import libdevice
            """,
            line=2,
            column=5,
            message=(
                "this imports NVIDIA's libdevice (triton.language.extra.cuda.libdevice), which AMD GPUs do not have: "
                "the kernels that call it fail to compile on ROCm; import `from triton.language.extra import "
                "libdevice` (Triton >= 3.0 maps it per backend)"
            ),
        ),
    )

    def __init__(self, context):
        super().__init__(context)
        self._in_import = 0

    def _flag(self, node: cst.CSTNode, how: str) -> None:
        if self.foreign(node) or self._fallback(node):
            return
        self.report(node, f"{how} NVIDIA's libdevice (triton.language.extra.cuda.libdevice), which AMD GPUs do not"
                          " have: the kernels that call it fail to compile on ROCm; import"
                          " `from triton.language.extra import libdevice` (Triton >= 3.0 maps it per backend)",
                    fix=Fix(Applicability.DISPLAY_ONLY, "Use triton.language.extra.libdevice"))

    def _fallback(self, node: cst.CSTNode) -> bool:
        """An import that runs only when the backend-neutral one is not there: in an ``except``
        handler, or in one arm of an ``if`` whose other arm imports the neutral module."""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.ExceptHandler):
                return True
            if isinstance(ancestor, cst.If) and child is not ancestor.test:
                other = ancestor.orelse if child is ancestor.body else ancestor.body
                if other is not None and _NEUTRAL_IMPORT.search(self.context.module.code_for_node(other)):
                    return True
            child = ancestor
        return False

    def visit_Import(self, node: cst.Import) -> None:
        self._in_import += 1
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            if name == CUDA_LIBDEVICE or name.startswith(CUDA_LIBDEVICE + "."):
                self._flag(node, "this imports")
                return

    def leave_Import(self, node: cst.Import) -> None:
        self._in_import -= 1

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._in_import += 1
        if node.relative or node.module is None:
            return
        module = dotted_name(node.module) or ""
        if module == CUDA_LIBDEVICE or module.startswith(CUDA_LIBDEVICE + "."):
            self._flag(node, "this imports from")
        elif module == "triton.language.extra.cuda" and not isinstance(node.names, cst.ImportStar):
            if any(isinstance(a.name, cst.Name) and a.name.value == "libdevice" for a in node.names):
                self._flag(node, "this imports")

    def leave_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._in_import -= 1

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        if self._in_import or node.attr.value != "libdevice":
            return None
        if self.qnames(node, {CUDA_LIBDEVICE}):
            self._flag(node, "this uses")
            return False
        return None


_NEUTRAL_IMPORT = re.compile(r"triton\.language\.extra\s+import\s+[^\n]*\blibdevice\b|triton\.language\.extra\.libdevice\b")
