"""Which code is CUDA-only: what fails on a ROCm build of torch however the code is gated
around it. Facts, never findings.

- :data:`PACKAGES`: import names of packages that have no ROCm build (an import of one raises
  ``ModuleNotFoundError`` on ROCm). Packages that ship ROCm builds are left off on purpose:
  ``flash_attn`` (ROCm/flash-attention, and its wheels), ``triton``, ``xformers``, ``apex``,
  ``transformer_engine``, ``bitsandbytes``, ``cupy`` (cupy-rocm), ``sgl_kernel``, and
  ``flashinfer``, which AMD ships for MI300/MI355 (AMD-Ecosystem/flashinfer, ``amd_flashinfer``,
  imported as ``flashinfer``). A dotted entry names an NVIDIA-only part of a package that has
  a ROCm build (``flash_attn.cute``, FlashAttention's CuTe DSL kernels).
- :data:`NVML_MODULES`: NVIDIA's management library (no AMD GPU answers it).
- :data:`TOOLCHAIN_CALLS`: CUDA toolchain helpers that raise on a ROCm build. Not on it:
  ``torch.utils.cpp_extension.load`` / ``load_inline`` / ``CUDAExtension`` with ``.cu``
  sources, which torch hipifies and builds with hipcc on ROCm (``cpp_extension``'s
  ``IS_HIP_EXTENSION`` paths): whether such a build succeeds depends on the CUDA source.
- :func:`loads_cuda_library`: ``ctypes.CDLL("libcudart.so")`` and its spellings.
- :func:`nvidia_named`: a module whose dotted name says it is NVIDIA's (``kernels.cutlass``,
  ``backends.flashinfer``, ``ops.sm90``); a name alone never decides (the index asks for the
  module's content too).
- :func:`module_facts`: a module's own statements that run when it is imported, on CPython's
  tree: its CUDA-only statements and its imports of the project's modules.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .bindings import dotted, module_imports, resolve_name

# import name -> what it is. Each has no ROCm build (the entries of ROC704 too).
PACKAGES: Dict[str, str] = {
    "flash_attn_interface": "FlashAttention 3, built from flash-attention's hopper/ directory (SM90+ only)",
    "flash_attn_3": "FlashAttention 3's package (SM90+ only)",
    "flash_attn.cute": "FlashAttention's CuTe DSL kernels (SM90 / SM100), NVIDIA-only",
    "deep_gemm": "DeepGEMM, FP8 GEMM kernels for SM90 / SM100 only",
    "flash_mla": "FlashMLA, MLA decoding kernels for SM90 / SM100 only",
    "pycuda": "PyCUDA, bindings to NVIDIA's CUDA driver",
    "tensorrt": "TensorRT, NVIDIA's inference runtime",
    "torch_tensorrt": "Torch-TensorRT, NVIDIA's TensorRT backend for torch",
    "tensorrt_llm": "TensorRT-LLM, NVIDIA's LLM runtime and kernels",
    "cuda": "cuda-python (cuda.bindings, cuda.core, cuda.tile), bindings to NVIDIA's driver and runtime",
    "cutlass": "the CUTLASS / CuTe DSL (nvidia-cutlass-dsl), for NVIDIA GPUs only",
    "quack": "QuACK, CuTe DSL kernels (NVIDIA-only)",
    "cudnn": "the cuDNN frontend's Python API",
    "nvmath": "nvmath-python, bindings to NVIDIA's math libraries",
    "numba.cuda": "Numba's CUDA target (its ROCm target was removed)",
    "triton.language.extra.tlx": "TLX, Triton's low-level extension for NVIDIA Hopper and Blackwell warp"
                                 " specialisation (Meta's Triton; not in ROCm's Triton)",
}

NVML_MODULES = frozenset({"pynvml", "py3nvml", "nvidia_smi", "GPUtil"})

TOOLCHAIN_CALLS: Dict[str, str] = {
    "torch.utils.cpp_extension._get_cuda_arch_flags":
        "derives nvcc -gencode flags from the GPUs' capabilities and raises on a ROCm build, "
        "whose arch list holds no sm_ entry",
}

LIBRARY_LOADERS = frozenset({"ctypes.CDLL", "ctypes.cdll.LoadLibrary", "ctypes.PyDLL", "ctypes.WinDLL",
                             "ctypes.windll.LoadLibrary"})
_CUDA_LIBRARY = re.compile(r"(?i)(?:^|[/\\])(?:lib)?(?:cuda|cudart|nvrtc|nvidia-ml|cublas|cublaslt|cudnn|nvjitlink)"
                           r"(?:\.so|\.dll|64_|$)|^nvcuda(?:\.dll)?$")

# A module's bytes hold ``import <package>`` / ``from <package>`` or a call's word wherever it has
# a CUDA-only statement (module_facts). Found with ``bytes.find`` and a look at the name after
# each ``import `` / ``from ``: a regex alternative costs a millisecond a module.
_ROOTS = frozenset(k.split(".", 1)[0].encode() for k in PACKAGES)
# roots that are no entry themselves (a package with a ROCm build): its NVIDIA-only part's last
# name must be spelled too (``tlx`` beside ``import triton``)
_PARTS = {root: tuple(k.rsplit(".", 1)[1].encode() for k in PACKAGES if k.split(".", 1)[0].encode() == root and "." in k)
          for root in _ROOTS if root.decode() not in PACKAGES}
_CALL_WORDS = (b"_get_cuda_arch", b"DLL", b"LoadLibrary")
_NAME_AFTER = re.compile(rb"[ \t]*(\w+)")


def may_hold(blob: bytes) -> bool:
    """Can a module with these bytes have a CUDA-only statement that ``module_facts`` finds?"""
    if any(word in blob for word in _CALL_WORDS):
        return True
    for keyword in (b"import ", b"from "):
        at = blob.find(keyword)
        while at != -1:
            name = _NAME_AFTER.match(blob, at + len(keyword))
            if name is not None and name.group(1) in _ROOTS:
                parts = _PARTS.get(name.group(1))
                if parts is None or any(part in blob for part in parts):
                    return True
            at = blob.find(keyword, at + len(keyword))
    return False


# Words of a dotted module name that say NVIDIA: a CUDA backend, an NVIDIA kernel family
_NVIDIA_PART = re.compile(
    r"(?i)(?:^|_)(?:cuda|nvidia|nv|cutlass|cute|cutedsl|flashinfer|trtllm|tensorrt|trt|deep_?gemm|deepgemm|"
    r"flash_?mla|nvfp4|marlin|machete|sm_?\d{2,3}a?|hopper|blackwell|fa3|fa4|cudnn|nvshmem|cublas|cutile|quack|"
    r"pycuda|nvmath|tlx)(?:_|$|\d)")


def package_of(name: str) -> Optional[Tuple[str, str]]:
    """(table key, what it is) when importing dotted ``name`` imports a CUDA-only package."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in PACKAGES:
            return key, PACKAGES[key]
    return None


def loads_cuda_library(value: Optional[str]) -> bool:
    """A library path or name that only NVIDIA's driver and toolkit provide."""
    return bool(value) and _CUDA_LIBRARY.search(value.strip()) is not None


def nvidia_named(module: str) -> bool:
    """Does a part of dotted ``module`` below its top-level package name an NVIDIA backend or
    kernel family? (The top-level name of a package is the project's: ``cuda_reach.layers`` is
    not NVIDIA's; a module outside packages is named by itself: ``test_cutile_sm90``.)"""
    parts = module.split(".")
    return any(_NVIDIA_PART.search(part) for part in (parts[1:] if len(parts) > 1 else parts))


def nvidia_folder(folder: str) -> bool:
    """Does a folder's name say NVIDIA (``trtllm_export``, ``cutlass``)?"""
    return _NVIDIA_PART.search(folder) is not None


def imported_names(stmt: ast.AST, absolute: Callable[[Optional[str], int], Optional[str]]) -> List[str]:
    """The dotted modules an import statement may import (a ``from`` import: the module, and
    each name as a submodule); relative ones made absolute (left out where unknown)."""
    if isinstance(stmt, ast.Import):
        return [alias.name for alias in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        base = absolute(stmt.module, stmt.level) if stmt.level else stmt.module
        if not base:
            return []
        return [base] + [f"{base}.{alias.name}" for alias in stmt.names if alias.name != "*"]
    return []


def _at_import(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements that surely run when it is imported: its body and ``with``
    blocks in it, up to the first ``if`` that may leave (``raise`` / ``sys.exit``) -- not the
    blocks of ``if``, ``try`` or loops."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from _at_import(stmt.body)
        elif isinstance(stmt, ast.If) and any(isinstance(n, ast.Raise) or (isinstance(n, ast.Call) and (
                dotted(n.func) or "").endswith("exit")) for s in stmt.body + stmt.orelse for n in ast.walk(s)):
            return


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    """The calls an expression or simple statement makes when it runs (not those of a lambda)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Lambda):
            continue
        if isinstance(current, ast.Call):
            yield current
        stack.extend(ast.iter_child_nodes(current))


def module_facts(body: Sequence[ast.stmt], absolute: Callable[[Optional[str], int], Optional[str]],
                 module: str) -> Tuple[List[Tuple[int, str, str]], List[Tuple[int, str]]]:
    """(CUDA-only statements, imports) of a module's statements that surely run at import
    (:func:`_at_import`): ``(line, code, why)`` for an import of a CUDA-only package, a call of
    a CUDA toolchain helper or a load of a CUDA library; ``(line, dotted name)`` for every
    module an import names (the caller keeps those of the project)."""
    imports = module_imports(body, absolute)
    own: List[Tuple[int, str, str]] = []
    entries: List[Tuple[int, str]] = []
    for stmt in _at_import(body):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            relative = isinstance(stmt, ast.ImportFrom) and stmt.level > 0
            reported = False
            for name in imported_names(stmt, absolute):
                entries.append((stmt.lineno, name))
                found = None if relative or reported else package_of(name)
                if found is not None:
                    own.append((stmt.lineno, f"import {name}", found[1]))
                    reported = True
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.Try, ast.For,
                             ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)) or type(stmt).__name__ == "TryStar":
            continue  # definitions run nothing; blocks: their statements come on their own (or not at all)
        for node in _calls(stmt):
            full = resolve_name(imports, set(), module, node.func)
            if full in TOOLCHAIN_CALLS:
                own.append((node.lineno, f"{full}()", TOOLCHAIN_CALLS[full]))
            elif full in LIBRARY_LOADERS and node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str) and loads_cuda_library(node.args[0].value):
                own.append((node.lineno, f"{full}({node.args[0].value!r})",
                            "loads an NVIDIA library, which a ROCm system does not have"))
    return own, entries


_TOLERANT = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException", "OSError", "RuntimeError",
                       "NameError"})


def _tolerant(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = [dotted(n) for n in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type])]
    return any(name is not None and name.rpartition(".")[2] in _TOLERANT for name in names)


def branch_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """The imports and calls that sit in a branch (an ``if`` / ``elif`` / ``else``, ``while`` or
    conditional expression, at any depth) and not in the body of a ``try`` whose handler copes
    with ImportError or broader: a superset of where ROC708 can find a guard."""
    stack = [(tree, False, False)]
    while stack:
        node, branch, tried = stack.pop()
        if branch and not tried and isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)):
            yield node
        if isinstance(node, (ast.If, ast.While)):
            stack.append((node.test, branch, tried))
            stack.extend((s, True, tried) for s in node.body + node.orelse)
        elif isinstance(node, ast.IfExp):
            stack.extend(((node.test, branch, tried), (node.body, True, tried), (node.orelse, True, tried)))
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            copes = tried or any(_tolerant(h) for h in node.handlers)
            stack.extend((s, branch, copes) for s in node.body)
            stack.extend((s, branch, tried) for h in node.handlers for s in h.body)
            stack.extend((s, branch, tried) for s in node.orelse + node.finalbody)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend((child, branch, False) for child in ast.iter_child_nodes(node))  # a try outside does not cover it
        else:
            stack.extend((child, branch, tried) for child in ast.iter_child_nodes(node))


def unconditional_imports(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """The module-level imports that run whenever the module is imported: in its body and its
    ``with`` blocks (not in ``if``, ``try``, loops or definitions)."""
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            yield stmt
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from unconditional_imports(stmt.body)
