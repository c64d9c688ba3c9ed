"""ROC707 cuda-only-module-reached: A module that is not CUDA-only imports, at module level, a project module whose import runs CUDA-only code.

The rule's documentation is its class's (`rocmport rule ROC707` prints it).
"""

from __future__ import annotations

from typing import FrozenSet, List, Optional, Tuple

import libcst as cst

from rocmport.analysis.cuda_only import imported_names, nvidia_folder, nvidia_named, unconditional_imports
from rocmport.analysis.platforms import ROCM
from rocmport.analysis.syntax import dotted_name
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import VendorRule, describe_chain

_KERNEL = ("pkg/kernels/__init__.py", ""), ("pkg/kernels/cute_gemm.py", """
    import cutlass
    import cutlass.cute as cute

    @cute.jit
    def gemm(a, b, c):
        ...
    """)


class CudaOnlyModuleReached(VendorRule):
    CODE = "ROC707"
    NAME = "cuda-only-module-reached"
    SUMMARY = ("A module that is not CUDA-only imports, at module level, a project module whose import runs "
               "CUDA-only code.")
    # No NEEDS: what a file must hold is decided by the project's other modules (the names of
    # those whose import runs CUDA-only code, ``index_triggers``), not by the file alone.
    TRIGGERS = ("import",)
    PROJECT = True
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        An import that runs when a module is imported (module level, not inside `try`, an `if`
        or a function), in a module that is not CUDA-only itself, of a module of the same
        project whose own module-level code is CUDA-only:

        - an import of a package that has no ROCm build (`cuda` / `cuda.bindings` of
          cuda-python, the CUTLASS / CuTe DSL `cutlass`, `flash_attn.cute`, `quack`,
          `deep_gemm`, `flash_mla`, `tensorrt_llm`, `pycuda`, `cudnn`, `nvmath`, `numba.cuda`,
          FlashAttention 3), or
        - a call that raises on a ROCm build (`torch.utils.cpp_extension._get_cuda_arch_flags()`,
          `ctypes.CDLL("libcudart.so")`),

        or a module whose name says it is NVIDIA's (`kernels/cutlass/`, `flashinfer_backend.py`,
        `sm90_ops.py`) and which imports such a module. The finding is on the import where code
        that every platform imports enters that closure, with the chain in the message; not
        on every importer above it, and not in the CUDA-only modules themselves.

        Not reported: the import inside `try` (the caller copes), under a test that excludes
        ROCm (`if torch.version.hip is None:`, `if is_cuda():`), under a test rocmport cannot
        read (`if HAS_CUTLASS:`), under a test that lets ROCm through (ROC708 reports that
        guard), inside a function (imported when the CUDA path is taken), and imports of
        packages that ship ROCm builds (`flash_attn`, `triton`, `flashinfer`, `xformers`).
        Only the linted files are followed: lint the project's folder.
        """
    WHY = """
        The import fails on ROCm for every user of the package, not only those that use the
        CUDA kernel: `import yunchang` failed on AMD GPUs because `yunchang/ring/__init__.py`
        imported `ring_flashinfer_attn`, whose module level called
        `torch.utils.cpp_extension._get_cuda_arch_flags()` (feifeibear/long-context-attention#148,
        fixed in #150). `_get_cuda_arch_flags` derives the flags from the GPUs' capabilities
        and the `sm_` entries of `torch.cuda.get_arch_list()`, which a ROCm build does not
        have, so it raises there (torch/utils/cpp_extension.py). Packages such as cuda-python
        and the CUTLASS DSL have no ROCm wheels at all, so importing them raises
        ModuleNotFoundError: Genesis' rigid solver imports `cuda.bindings` and fails on an
        MI300 (Genesis-Embodied-AI/genesis-world#2662). FlashInfer is left off the list: AMD
        ships a ROCm build of it for MI300 / MI355 (AMD-Ecosystem/flashinfer), though its
        maintainers support NVIDIA only (flashinfer-ai/flashinfer#1678; ROC710 reports it
        chosen as a kernel backend).
        """
    EXAMPLE_FILES = _KERNEL
    EXAMPLE_PATH = "pkg/__init__.py"
    EXAMPLE = """
        from .kernels.cute_gemm import gemm
        """
    FIX = """
        Display-only: import the CUDA-only module where its CUDA path is taken (inside the
        function that dispatches to it, under a CUDA test), or guard the import:

            if torch.version.hip is None:
                from .kernels.cute_gemm import gemm

        or move the CUDA-only call out of the module's top level (into the function that
        builds the extension).
        """
    VALID = (
        # the module imported has nothing CUDA-only at its top level
        Case("from .kernels.plain import add\n", path="pkg/__init__.py",
             files=(("pkg/kernels/__init__.py", ""), ("pkg/kernels/plain.py", "import torch\nimport triton\n"
                                                                           "def add(a, b):\n    return a + b\n"))),
        # guarded: try / except ImportError
        Case("""
            try:
                from .kernels.cute_gemm import gemm
            except ImportError:
                gemm = None
            """, path="pkg/__init__.py", files=_KERNEL),
        # under a test that excludes ROCm
        Case("""
            import torch
            if torch.version.hip is None:
                from .kernels.cute_gemm import gemm
            """, path="pkg/__init__.py", files=_KERNEL),
        # under a test rocmport cannot read: an availability flag
        Case("""
            from .flags import HAS_CUTLASS
            if HAS_CUTLASS:
                from .kernels.cute_gemm import gemm
            """, path="pkg/__init__.py", files=_KERNEL + (("pkg/flags.py", "HAS_CUTLASS = False\n"),)),
        # imported where the CUDA path is taken
        Case("""
            def run(a, b, c):
                from .kernels.cute_gemm import gemm
                return gemm(a, b, c)
            """, path="pkg/__init__.py", files=_KERNEL),
        # the CUDA-only module's own package: it is CUDA-only by content, not an entry
        Case("from .cute_gemm import gemm\nimport cutlass\n", path="pkg/kernels/__init__.py",
             files=((_KERNEL[1]),)),
        # a package that ships ROCm builds is not CUDA-only
        Case("from .kernels.fa import attn\n", path="pkg/__init__.py",
             files=(("pkg/kernels/__init__.py", ""), ("pkg/kernels/fa.py", "import flash_attn\nimport flashinfer\n"
                                                                        "import triton\n"))),
        # extensions built from .cu sources are hipified on ROCm: not CUDA-only by themselves
        Case("from .kernels.ext import op\n", path="pkg/__init__.py",
             files=(("pkg/kernels/__init__.py", ""), ("pkg/kernels/ext.py", """
                 from torch.utils.cpp_extension import load
                 op = load("op", sources=["op.cu"])
                 """))),
        # the call in a function of the imported module does not run at import
        Case("from .kernels.build import flags\n", path="pkg/__init__.py",
             files=(("pkg/kernels/__init__.py", ""), ("pkg/kernels/build.py", """
                 import torch.utils.cpp_extension as cx
                 def flags():
                     return cx._get_cuda_arch_flags()
                 """))),
        # a script in a folder named for NVIDIA (an export example for TensorRT-LLM) importing it
        Case("from pkg.export.trtllm_helper import export\n", path="examples/trtllm_export/run.py",
             files=(("pkg/__init__.py", ""), ("pkg/export/__init__.py", ""),
                    ("pkg/export/trtllm_helper.py", "import tensorrt_llm\ndef export(m):\n    return m\n"))),
        # a test of Triton's NVIDIA-only TLX kernels, named for them, importing them
        Case("from pkg.ops.tlx.fwd_ws import attention\n", path="tests/test_tlx_fwd_ws.py",
             files=(("pkg/__init__.py", ""), ("pkg/ops/__init__.py", ""), ("pkg/ops/tlx/__init__.py", ""),
                    ("pkg/ops/tlx/fwd_ws.py", "import triton.language.extra.tlx as tlx\n"
                                              "def attention(q):\n    return q\n"))),
        # one entry: the importer of a neutral package that enters the closure is not reported
        Case("import pkg.kernels\n", path="app.py",
             files=(("pkg/__init__.py", ""), ("pkg/kernels/__init__.py", "from .cute_gemm import gemm\n"),
                    _KERNEL[1])),
    )
    INVALID = (
        Case("""
            from .kernels.plain import add
            from .kernels.cute_gemm import gemm
            from .kernels.cute_gemm import gemm as gemm2
            """, path="pkg/__init__.py", files=_KERNEL, line=2, column=1,
             message="importing `pkg.kernels.cute_gemm` runs CUDA-only code: `pkg.kernels.cute_gemm` imports "
                     "`cutlass` at line 1: the CUTLASS / CuTe DSL (nvidia-cutlass-dsl), for NVIDIA GPUs only, which "
                     "has no ROCm build. This module is not CUDA-only, yet importing it fails on ROCm (1 more import "
                     "here enters CUDA-only modules: line 3)"),
        Case("""
            import torch.utils.cpp_extension
            from . import ring_attn, fi_attn
            """, path="pkg/ring/__init__.py", line=2,
             files=(("pkg/__init__.py", "from .ring import *\n"), ("pkg/ring/ring_attn.py", "import torch\n"),
                    ("pkg/ring/fi_attn.py", "import torch.utils.cpp_extension as cx\ncx._get_cuda_arch_flags()\n")),
            column=1,
            message=(
                'importing `pkg.ring.fi_attn` runs CUDA-only code: `pkg.ring.fi_attn` runs '
                '`torch.utils.cpp_extension._get_cuda_arch_flags()` at line 2, which derives nvcc -gencode flags from '
                "the GPUs' capabilities and raises on a ROCm build, whose arch list holds no sm_ entry. This module is "
                'not CUDA-only, yet importing it fails on ROCm')),
        Case("import pkg.ops.nv_graph\n", path="pkg/model.py",
             files=(("pkg/__init__.py", ""), ("pkg/ops/__init__.py", ""), ("pkg/ops/nv_graph.py", """
                 import cuda.bindings.driver as cuda
                 """)),
            line=1, column=1,
            message=(
                'importing `pkg.ops.nv_graph` runs CUDA-only code: `pkg.ops.nv_graph` imports `cuda.bindings.driver` '
                "at line 1: cuda-python (cuda.bindings, cuda.core, cuda.tile), bindings to NVIDIA's driver and "
                'runtime, which has no ROCm build. This module is not CUDA-only, yet importing it fails on ROCm')),
        # a module NVIDIA's by name and content: the chain goes through it
        Case("from .backends import cutlass_backend\n", path="pkg/layers.py",
             files=(("pkg/__init__.py", ""), ("pkg/backends/__init__.py", ""),
                    ("pkg/backends/cutlass_backend.py", "from ..kernels.cute_gemm import gemm\n")) + _KERNEL,
            line=1, column=1,
            message=(
                'importing `pkg.backends.cutlass_backend` runs CUDA-only code: `pkg.backends.cutlass_backend` '
                "(NVIDIA's by its name) imports `pkg.kernels.cute_gemm` at line 1; `pkg.kernels.cute_gemm` imports "
                '`cutlass` at line 1: the CUTLASS / CuTe DSL (nvidia-cutlass-dsl), for NVIDIA GPUs only, which has no '
                'ROCm build. This module is not CUDA-only, yet importing it fails on ROCm')),
        # ctypes loading the CUDA runtime at import
        Case("from .utils import cudart\n", path="pkg/engine.py",
             files=(("pkg/__init__.py", ""), ("pkg/utils.py", "import ctypes\ncudart = ctypes.CDLL('libcudart.so')\n")),
            line=1, column=1,
            message=(
                "importing `pkg.utils` runs CUDA-only code: `pkg.utils` runs `ctypes.CDLL('libcudart.so')` at line 2, "
                'which loads an NVIDIA library, which a ROCm system does not have. This module is not CUDA-only, yet '
                'importing it fails on ROCm')),
    )

    def __init__(self, context):
        super().__init__(context)
        self._entries: List[Tuple[cst.CSTNode, str, tuple]] = []

    @classmethod
    def may_match(cls, facts) -> bool:
        """Only a file of a project (linted with the index), not CUDA-only itself, whose imports
        that run at import name a project module that runs CUDA-only code at import."""
        index, tree = getattr(facts, "index", None), facts.tree
        if index is None or tree is None:
            return False
        path = getattr(facts, "path", "") or ""
        own = index.module_name(path)
        if own is None or nvidia_named(own):
            return False
        top = own.split(".", 1)[0]
        if any(nvidia_folder(folder) for folder in index.folders(path) if folder != top):
            return False
        for stmt in unconditional_imports(tree.body):
            for name in imported_names(stmt, lambda module, level: index.absolute(own, module, level)):
                if name != own and index.path_of(name) is not None and index.cuda_chain(name) is not None:
                    return index.cuda_chain(own) is None
        return False

    @classmethod
    def index_triggers(cls, index):
        """With the project index: a file must spell the name of a module whose import runs
        CUDA-only code (most projects have none: then no file is read further)."""
        return (), index.cuda_words()

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        return frozenset()  # module-level imports: never in a definition

    def visit_Import(self, node: cst.Import) -> None:
        self._check(node, [dotted_name(alias.name) or "" for alias in node.names])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        index = self.context.index
        own = index.module_name(self.context.path) if index is not None else None
        if own is None:
            return
        module = dotted_name(node.module) if node.module is not None else None
        level = len(node.relative)
        base = index.absolute(own, module, level) if level else module
        if not base:
            return
        names = [base]
        if not isinstance(node.names, cst.ImportStar):
            names += [f"{base}.{dotted_name(alias.name)}" for alias in node.names]
        self._check(node, names)

    def _check(self, node: cst.CSTNode, names: List[str]) -> None:
        index = self.context.index
        own = index.module_name(self.context.path) if index is not None else None
        if own is None:
            return
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.If, cst.Else, cst.Try, cst.TryStar,
                                     cst.For, cst.While, cst.Match)):
                return  # not surely run at import: a guard (ROC708's), a try, a function
        if ROCM not in self.platforms(node):
            return  # after `if torch.version.hip: raise ImportError(...)`
        for name in names:
            if name == own or index.path_of(name) is None:
                continue
            chain = index.cuda_chain(name)
            if chain is None:
                continue
            top = own.split(".", 1)[0]
            if nvidia_named(own) or index.cuda_chain(own) is not None or any(
                    nvidia_folder(folder) for folder in index.folders(self.context.path) if folder != top):
                return  # this module is CUDA-only itself (by content, or by name and this import): not an entry
            self._entries.append((node, name, chain))
            return

    def leave_Module(self, original_node: cst.Module) -> None:
        """One finding per module, at its first entry: importing the module is the decision."""
        if not self._entries:
            return
        node, name, chain = self._entries[0]
        rows = [self.context.position(n).start.line for n, _, _ in self._entries[1:]]
        more = ""
        if rows:
            more = (f" ({len(rows)} more import{'s' if len(rows) > 1 else ''} here enter{'' if len(rows) > 1 else 's'}"
                    f" CUDA-only modules: line{'s' if len(rows) > 1 else ''} {', '.join(map(str, rows))})")
        self.display_only(
            node, f"importing `{name}` runs CUDA-only code: {describe_chain(chain)}. This module is not CUDA-only, "
                  f"yet importing it fails on ROCm{more}",
            "Import it where its CUDA path is taken (inside the function, under a CUDA test), or guard this "
            "import with `if torch.version.hip is None:` or try/except")
