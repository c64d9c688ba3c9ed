"""ROC704 cuda-only-package-import: A CUDA-only package imported unconditionally at module level.

The rule's documentation is its class's (`rocmport rule ROC704` prints it).
"""

from __future__ import annotations

from typing import FrozenSet, Optional

import libcst as cst

from rocmport.analysis.platforms import CUDA_ONLY_PACKAGES
from rocmport.analysis.syntax import dotted_name
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import VendorRule, facts_doc



class CudaOnlyImport(VendorRule):
    CODE = "ROC704"
    NAME = "cuda-only-package-import"
    SUMMARY = "A CUDA-only package imported unconditionally at module level."
    TRIGGERS = tuple(CUDA_ONLY_PACKAGES)
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        `import X` / `from X import ...` at the top level of a module (not inside `try`, `if`,
        a function or a class) where X is one of these packages, which have no ROCm build:

""" + "\n".join(f"        - `{name}`: {why}" for name, why in CUDA_ONLY_PACKAGES.items()) + """

        Not reported: the import inside `try: ... except ImportError:` (or any `try`), inside
        `if not is_rocm:` or any other `if`, or inside a function.
        """
    WHY = """
        On ROCm the import raises ModuleNotFoundError (or the package cannot be installed),
        so the whole module, and everything importing it, fails to load even when the code
        path would never call the kernel (10 threads, e.g. vllm#42123, ComfyUI#14865).

""" + facts_doc("packages") + """
        """
    EXAMPLE = """
        from flash_attn_interface import flash_attn_func
        """
    FIX = """
        Display-only: import it optionally and fall back to
        `torch.nn.functional.scaled_dot_product_attention` (which uses AMD's flash / efficient
        kernels on ROCm):

            try:
                from flash_attn_interface import flash_attn_func
            except ImportError:
                flash_attn_func = None  # use F.scaled_dot_product_attention instead
        """
    VALID = (
        Case("""
            try:
                from flash_attn_interface import flash_attn_func
            except ImportError:
                flash_attn_func = None
            """),
        Case("""
            import torch
            if not is_rocm:
                import flash_attn_interface
            """),
        Case("""
            def load():
                import deep_gemm
                return deep_gemm
            """),
        Case("""
            import flash_attn
            from flash_attn import flash_attn_func
            """),
        Case("""
            # import flash_attn_interface
            x = 'flash_attn_interface'
            """),
        Case("""
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                import tensorrt
            """),
    )
    INVALID = (
        Case(
            """
            from flash_attn_interface import flash_attn_func
            """,
            line=1,
            column=6,
            message=(
                "`flash_attn_interface` (FlashAttention 3, built from flash-attention's hopper/ directory (SM90+ "
                "only)) has no ROCm build: importing it unconditionally fails on AMD GPUs"
            ),
        ),
        Case(
            """
            import flash_attn_3.flash_attn_interface as fa3
            """,
            line=1,
            column=8,
            message=(
                "`flash_attn_3.flash_attn_interface` (FlashAttention 3's package (SM90+ only)) has no ROCm build: "
                "importing it unconditionally fails on AMD GPUs"
            ),
        ),
        Case(
            """
            import deep_gemm
            """,
            line=1,
            column=8,
            message=(
                "`deep_gemm` (DeepGEMM, FP8 GEMM kernels for SM90 / SM100 only) has no ROCm build: importing it "
                "unconditionally fails on AMD GPUs"
            ),
        ),
        Case(
            """
            from flash_attn_3 import flash_attn_interface
            """,
            line=1,
            column=6,
            message=(
                "`flash_attn_3` (FlashAttention 3's package (SM90+ only)) has no ROCm build: importing it "
                "unconditionally fails on AMD GPUs"
            ),
        ),
    )

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        return frozenset()  # an import statement_of of the module's own body: never in a definition

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._check(node, alias.name)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not node.relative and node.module is not None:
            self._check(node, node.module)

    def _check(self, statement: cst.CSTNode, module: cst.CSTNode) -> None:
        name = dotted_name(module) or ""
        root = name.split(".", 1)[0]
        if root not in CUDA_ONLY_PACKAGES:
            return
        line = self.parent(statement)
        if not isinstance(line, cst.SimpleStatementLine) or not isinstance(self.parent(line), cst.Module):
            return  # inside try / if / with / a function: not unconditional at module level
        self.display_only(module, f"`{name}` ({CUDA_ONLY_PACKAGES[root]}) has no ROCm build: importing it "
                                  "unconditionally fails on AMD GPUs",
                          "Import it in try/except ImportError and fall back to "
                          "torch.nn.functional.scaled_dot_product_attention (or the portable path)")
