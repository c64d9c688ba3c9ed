"""ROC704 cuda-only-package-import: A CUDA-only package imported unconditionally at module level.

The rule's documentation is its class's (`rocmport rule ROC704` prints it).
"""

from __future__ import annotations

import re

import libcst as cst

from rocmport.analysis.needs import Import
from rocmport.analysis.platforms import CUDA_ONLY_PACKAGES, cuda_only_package
from rocmport.analysis.syntax import dotted_name
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import VendorRule, facts_doc


class CudaOnlyImport(VendorRule):
    CODE = "ROC704"
    NAME = "cuda-only-package-import"
    SUMMARY = "A CUDA-only package imported unconditionally at module level."
    NEEDS = Import(*CUDA_ONLY_PACKAGES)
    LOCAL = True
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        `import X` / `from X import ...` at the top level of a module (not inside `try`, `if`,
        a function or a class) where X is one of these packages, which have no ROCm build:

""" + "\n".join(f"        - `{name}`: {why}" for name, why in CUDA_ONLY_PACKAGES.items()) + """

        Not reported: the import inside `try: ... except ImportError:` (or any `try`), inside
        `if not is_rocm:` or any other `if`, or inside a function; and a module that exists for
        that package, which its path names (`third_party/deep_gemm/__init__.py`,
        `flash_attn_interface.py`, `stable_diffusion_tensorrt_img2img.py`, `ops/tlx/fwd.py`):
        without the package it has nothing to do, so failing to load on ROCm is what it should
        do, and only code that chooses it (TensorRT, DeepGEMM) imports it.
        """
    WHY = """
        On ROCm the import raises ModuleNotFoundError (or the package cannot be installed),
        so the whole module, and everything importing it, fails to load even when the code
        path would never call the kernel (theroyallab/tabbyAPI#5: the server failed to start on AMD
        because a module imported flash-attention's CUDA build at its top, with flash attention
        turned off in the configuration).

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
        # a module whose path names the package: its wrapper, its pipeline, its kernels
        Case("""
            import tensorrt as trt
            import pycuda.driver as cuda

            class Engine:
                def __init__(self, blob):
                    self.engine = trt.Runtime(trt.Logger()).deserialize_cuda_engine(blob)
            """, path="examples/community/run_tensorrt_controlnet.py"),
        Case("""
            from deep_gemm import ceil_div, get_m_alignment_for_contiguous_layout  # noqa: F401
            """, path="pkg/third_party/deep_gemm/__init__.py"),
        Case("""
            import triton.language.extra.tlx as tlx
            """, path="simplicial/ops/tlx/fwd_ws.py"),
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
        # near misses of a dedicated module: a shared module that merely mentions the package,
        # and a module of a TLX-named package one level too far up
        Case(
            """
            import tensorrt
            from .attention import sdpa
            """,
            line=1,
            column=8,
            message=(
                "`tensorrt` (TensorRT, NVIDIA's inference runtime) has no ROCm build: importing it unconditionally "
                "fails on AMD GPUs"
            ),
        ),
        Case(
            """
            from flash_mla import flash_mla_with_kvcache
            """,
            line=1,
            column=6,
            message=(
                "`flash_mla` (FlashMLA, MLA decoding kernels for SM90 / SM100 only) has no ROCm build: importing it "
                "unconditionally fails on AMD GPUs"
            ),
        ),
        Case(
            """
            import triton.language.extra.tlx as tlx
            """,
            line=1,
            column=8,
            message=(
                "`triton.language.extra.tlx` (TLX, Triton's low-level extension for NVIDIA Hopper and Blackwell warp "
                "specialisation (Meta's Triton; not in ROCm's Triton)) has no ROCm build: importing it "
                "unconditionally fails on AMD GPUs"
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

    def _dedicated(self) -> bool:
        """Does the module's path (its file and the two folders above it) name one of the
        packages with no ROCm build that it imports unconditionally (or their usual words:
        ``trt`` for TensorRT, ``fa3`` for FlashAttention 3)? Then the module exists for it."""
        found = self.context.shared("roc704-dedicated", lambda ctx: _names_package(ctx.path))
        return found

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._check(node, alias.name)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not node.relative and node.module is not None:
            self._check(node, node.module)

    def _check(self, statement: cst.CSTNode, module: cst.CSTNode) -> None:
        name = dotted_name(module) or ""
        root = cuda_only_package(name)
        if root is None:
            return
        line = self.parent(statement)
        if not isinstance(line, cst.SimpleStatementLine) or not isinstance(self.parent(line), cst.Module):
            return  # inside try / if / with / a function: not unconditional at module level
        if self._dedicated():
            return  # the module exists for such a package: only code that chooses it imports it
        self.display_only(module, f"`{name}` ({CUDA_ONLY_PACKAGES[root]}) has no ROCm build: importing it "
                                  "unconditionally fails on AMD GPUs",
                          "Import it in try/except ImportError and fall back to "
                          "torch.nn.functional.scaled_dot_product_attention (or the portable path)")


# The words a module's path uses for each package (beside the package's own name).
_PACKAGE_WORDS = {
    "tensorrt": ("tensorrt", "trt"), "torch_tensorrt": ("tensorrt", "trt"), "pycuda": ("pycuda",),
    "flash_attn_interface": ("flash_attn_interface", "fa3", "flash_attn_3"), "flash_attn_3": ("flash_attn_3", "fa3"),
    "deep_gemm": ("deep_gemm", "deepgemm"), "flash_mla": ("flash_mla", "flashmla"),
    "triton.language.extra.tlx": ("tlx",),
}


def _names_package(path: str) -> bool:
    parts = [p for p in re.split(r"[/\\]", path) if p]
    if not parts:
        return False
    stem = parts[-1].rsplit(".", 1)[0]
    words = [stem] + parts[-3:-1]
    wanted = {w for name in CUDA_ONLY_PACKAGES for w in _PACKAGE_WORDS.get(name, (name,))}
    for part in words:
        lowered = part.lower()
        for word in wanted:
            if re.search(rf"(?:^|[_.-]){re.escape(word)}(?:$|[_.-])", lowered):
                return True
    return False
