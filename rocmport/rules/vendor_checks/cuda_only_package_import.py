"""ROC704 cuda-only-package-import: A CUDA-only package imported unconditionally at module level.

The rule's documentation is its class's (`rocmport rule ROC704` prints it).
"""

from __future__ import annotations

import libcst as cst

from rocmport.analysis.needs import Import
from rocmport.analysis.syntax import dotted_name
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import VendorRule, facts_doc

# import name -> what it is (why it has no ROCm build)
CUDA_ONLY_PACKAGES = {
    "flash_attn_interface": "FlashAttention 3, built from flash-attention's hopper/ directory (SM90+ only)",
    "flash_attn_3": "FlashAttention 3's package (SM90+ only)",
    "deep_gemm": "DeepGEMM, FP8 GEMM kernels for SM90 / SM100 only",
    "flash_mla": "FlashMLA, MLA decoding kernels for SM90 / SM100 only",
    "pycuda": "PyCUDA, bindings to NVIDIA's CUDA driver",
    "tensorrt": "TensorRT, NVIDIA's inference runtime",
    "torch_tensorrt": "Torch-TensorRT, NVIDIA's TensorRT backend for torch",
}


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
        Case("try:\n    from flash_attn_interface import flash_attn_func\nexcept ImportError:\n"
             "    flash_attn_func = None\n"),
        Case("import torch\nif not is_rocm:\n    import flash_attn_interface\n"),
        Case("def load():\n    import deep_gemm\n    return deep_gemm\n"),
        Case("import flash_attn\nfrom flash_attn import flash_attn_func\n"),
        Case("# import flash_attn_interface\nx = 'flash_attn_interface'\n"),
        Case("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tensorrt\n"),
    )
    INVALID = (
        Case("from flash_attn_interface import flash_attn_func\n"),
        Case("import flash_attn_3.flash_attn_interface as fa3\n"),
        Case("import deep_gemm\n"),
        Case("from flash_attn_3 import flash_attn_interface\n"),
    )

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
