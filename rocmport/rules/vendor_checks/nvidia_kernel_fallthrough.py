"""ROC710 nvidia-kernel-fallthrough: A dispatch picks an NVIDIA-only kernel family with no branch that tests for ROCm on the way.

The rule's documentation is its class's (`rocmport rule ROC710` prints it).
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from rocmport.analysis import gates
from rocmport.analysis.needs import String, strings
from rocmport.analysis.platforms import CUDA, ROCM
from rocmport.analysis.syntax import dotted_name, literal_string
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import NVIDIA_ONLY, VendorRule, walk

# A value that names an NVIDIA-only kernel family: the whole string, or one of its parts
# (NVFP4 is a data format as much as a kernel: a format detector returns "nvfp4"; left out)
_FAMILY = re.compile(r"(?i)^_*(?:[a-z0-9]+_*[_-])*?(flashinfer|trtllm|tensorrt[_-]?llm|cutlass|marlin|deep_?gemm|"
                     r"flash_?mla|fa3|machete|cute_?dsl)(?:[_-]+[a-z0-9]+)*_*$")
_STEMS = ("flashinfer", "trtllm", "tensorrt", "cutlass", "marlin", "deep_gemm", "deepgemm", "deep-gemm",
          "flashmla", "flash_mla", "flash-mla", "fa3", "machete", "cutedsl", "cute_dsl", "cute-dsl")
# the text holds one wherever a string names a family (any case: each stem as lower, upper,
# capitalised, and the projects' own spellings)
_FAMILY_WORDS = tuple(sorted({v for stem in _STEMS for v in (stem, stem.upper(), stem.capitalize())}
                             | {"FlashInfer", "TensorRT", "DeepGEMM", "DeepGemm", "FlashMLA", "CuteDSL", "CuTeDSL",
                                "CuTe_DSL", "TrtLLM", "TRTLlm"}))
_NAMES = {"flashinfer": "FlashInfer", "trtllm": "TensorRT-LLM", "tensorrt_llm": "TensorRT-LLM",
          "tensorrt-llm": "TensorRT-LLM", "tensorrtllm": "TensorRT-LLM", "cutlass": "CUTLASS", "marlin": "Marlin",
          "deep_gemm": "DeepGEMM", "deepgemm": "DeepGEMM", "nvfp4": "NVFP4", "flash_mla": "FlashMLA",
          "flashmla": "FlashMLA", "fa3": "FlashAttention 3", "machete": "Machete", "cute_dsl": "the CuTe DSL",
          "cutedsl": "the CuTe DSL"}
_DEFAULT_GETTERS = frozenset({"os.environ.get", "os.getenv"})
# Words of a condition that make a pick an opt-in or an availability-gated choice
_OPT_IN = re.compile(r"(?i)avail|support|install|enable|force|opt_?in|environ|getenv|^env$|^flag|^use_|_use_|^has_|"
                     r"^with_|capab|^cap$")


def family(value: Optional[str]) -> Optional[str]:
    """The NVIDIA-only kernel family a string names, or None."""
    if not value or len(value) > 40:
        return None
    match = _FAMILY.match(value.strip())
    if match is None:
        return None
    key = match.group(1).lower()
    return _NAMES.get(key, _NAMES.get(key.replace("-", "_"), key))


class NvidiaKernelFallthrough(VendorRule):
    CODE = "ROC710"
    NAME = "nvidia-kernel-fallthrough"
    SUMMARY = "A dispatch picks an NVIDIA-only kernel family with no branch that tests for ROCm on the way."
    # a string that names a family (``family``: one of the stems, in any case); the text
    # prefilter is the stems' spellings (a string gives no word of its own)
    NEEDS = String(*_STEMS, any_case=True)
    TRIGGERS = _FAMILY_WORDS
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        A choice of kernel backend that names an NVIDIA-only family (FlashInfer, TensorRT-LLM,
        CUTLASS, Marlin, DeepGEMM, FlashMLA, FlashAttention 3, Machete, the CuTe DSL)
        as a string, where it is picked:

        - as a default: `args.backend or "flashinfer"`, `args.backend or DEFAULT_BACKEND` (a
          module constant that names one), `os.environ.get("BACKEND", "cutlass")`;
        - as one arm of a dispatch: a function that returns or assigns two or more different
          backend names by quantisation, shape or configuration (`return "marlin"` for GPTQ,
          `"triton"` otherwise);

        in a function (or module) with no test that tells ROCm apart (`is_hip()`,
        `current_platform.is_cuda()`, `torch.version.hip`, `SYSTEM == "rocm"`) and at a place
        ROCm reaches. Reported once per function, at its first such pick, with the count.

        Not reported: the pick under a test that excludes ROCm (`if current_platform().is_nvidia:
        return "flashinfer"`), in a function that tests for ROCm anywhere (it has its own
        ROCm path), in a function or class whose name says NVIDIA (`_pick_cutlass_tile`),
        the names in comparisons (`backend == "marlin"`), registries and messages, a
        function that returns one name only (a backend's own `name()`), and modules that
        are CUDA-only by content.
        """
    WHY = """
        On AMD GPUs the dispatch falls through to kernels that do not exist there, and every
        request that takes the path fails: tokenspeed's sampling backend defaulted to
        FlashInfer (`server_args.sampling_backend or _DEFAULT_BACKEND`), which broke sampling
        on AMD until the default was chosen by `current_platform().is_nvidia`
        (lightseekorg/tokenspeed#135). FlashInfer's maintainers have no ROCm support
        (flashinfer-ai/flashinfer#1678); Marlin, CUTLASS, TensorRT-LLM, DeepGEMM and NVFP4
        kernels are NVIDIA-only by construction (PTX, SM90/SM100 instructions).
        """
    EXAMPLE = """
        DEFAULT_BACKEND = "flashinfer"

        def create_sampler(args):
            name = args.sampling_backend or DEFAULT_BACKEND
            return REGISTRY[name]()
        """
    FIX = """
        Display-only: pick the family by platform, and give ROCm a portable default:

            def default_backend():
                if torch.version.hip is None:
                    return "flashinfer"
                return "pytorch"
        """
    VALID = (
        # the pick under a test that excludes ROCm
        Case("""
            def default_backend():
                if current_platform().is_nvidia:
                    return "flashinfer"
                return "greedy"
            """),
        # the function tests for ROCm elsewhere: it has a ROCm path
        Case("""
            def pick(args):
                backend = args.backend or "flashinfer"
                if is_hip() and backend == "flashinfer":
                    backend = "triton"
                return backend
            """),
        # a comparison, a registry, a message: not a pick
        Case("""
            REGISTRY = {"flashinfer": FlashInferSampler, "greedy": GreedySampler}
            def make(name):
                if name == "marlin":
                    raise ValueError("marlin needs an NVIDIA GPU")
                return REGISTRY[name]()
            """),
        # a backend's own name
        Case("""
            class FlashInferBackend:
                def name(self):
                    return "flashinfer"
            """),
        # a function named for the NVIDIA path
        Case("""
            def select_cutlass_tile(m):
                if m < 64:
                    return "cutlass_64"
                return "cutlass_128"
            def _marlin_kernel_name(dtype):
                return "marlin_bf16" if dtype == "bf16" else "marlin_fp16"
            """),
        # an opt-in through the environment, and a choice an availability probe gates
        Case("""
            import os
            def resolve_backend():
                if os.environ.get("USE_CUTEDSL", "0") == "1":
                    return "cutedsl"
                return "triton"
            def resolved_kernel(cap):
                if cap in SUPPORTED and load_extension() is not None:
                    return "cutlass_sm12x"
                return None
            """),
        # a data format, not a kernel
        Case("""
            def detect_format(dtype):
                if dtype == "fp8":
                    return "fp8"
                return "nvfp4"
            """),
        # the default names a portable family
        Case("""
            DEFAULT_BACKEND = "triton"
            def create(args):
                return args.backend or DEFAULT_BACKEND
            """),
        # a constant set twice is not a default
        Case("""
            DEFAULT = "flashinfer"
            if is_hip():
                DEFAULT = "triton"
            def create(args):
                return args.backend or DEFAULT
            """),
    )
    INVALID = (
        Case("""
            _DEFAULT_BACKEND = "flashinfer"
            def create_sampling_backend(server_args):
                name = server_args.sampling_backend or _DEFAULT_BACKEND
                return REGISTRY[name]()
            """, line=3, message="the default `flashinfer` picks FlashInfer kernels, which are NVIDIA-only, and "
                                 "no test tells ROCm apart on the way: on AMD GPUs this path fails",
            column=44),
        Case("""
            def select_gemm(quant, bits):
                if quant == "gptq" and bits == 4:
                    return "marlin"
                if quant == "fp8":
                    return "cutlass"
                return "triton"
            """, line=3,
            column=16,
            message=(
                'this arm of the dispatch `marlin` picks Marlin kernels, which are NVIDIA-only, and no test tells ROCm '
                'apart on the way: on AMD GPUs this path fails (1 more NVIDIA-only pick in this function)')),
        Case("""
            import os
            ATTN = os.environ.get("ATTN_BACKEND", "trtllm")
            """, line=2,
            column=39,
            message=(
                'the default `trtllm` picks TensorRT-LLM kernels, which are NVIDIA-only, and no test tells ROCm apart '
                'on the way: on AMD GPUs this path fails')),
        # the fall-through after NVIDIA architecture tests
        Case("""
            def default_mla_backend(platform):
                if platform.is_blackwell:
                    return "trtllm_mla"
                if platform.is_hopper:
                    return "flashmla"
                return "trtllm_mla"
            """, line=6,
            column=12,
            message=(
                'this arm of the dispatch `trtllm_mla` picks TensorRT-LLM kernels, which are NVIDIA-only, and no test '
                'tells ROCm apart on the way: on AMD GPUs this path fails')),
    )

    def __init__(self, context):
        super().__init__(context)
        self._done: Set[int] = set()
        self._constants: Optional[Dict[str, str]] = None
        self._arms: Dict[int, Tuple[cst.FunctionDef, List[Tuple[cst.CSTNode, str]]]] = {}

    @classmethod
    def may_match(cls, facts) -> bool:
        """A string that names a family where a pick is made: a value returned or assigned (or
        an arm of a conditional one), an operand of ``or``, a second argument (a default), or
        a module constant that names one read in an ``or``."""
        if facts.tree is None:
            return True
        if not any(family(s) for s in strings(facts)):
            return False

        def names(node) -> bool:
            if isinstance(node, ast.IfExp):
                return names(node.body) or names(node.orelse)
            return isinstance(node, ast.Constant) and isinstance(node.value, str) and family(node.value) is not None

        constants = {t.id for s in facts.tree.body if isinstance(s, ast.Assign) and names(s.value)
                     for t in s.targets if isinstance(t, ast.Name)}
        for node in facts.nodes(ast.Return, ast.Assign, ast.BoolOp, ast.Call):
            if isinstance(node, (ast.Return, ast.Assign)) and node.value is not None and names(node.value):
                return True
            if isinstance(node, ast.BoolOp) and any(names(v) or (isinstance(v, ast.Name) and v.id in constants)
                                                    for v in node.values):
                return True
            if isinstance(node, ast.Call) and len(node.args) >= 2 and names(node.args[1]):
                return True
        return False

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """A pick spells the family (in a string) or a module constant that names one; what
        the rule reads around it is in the same function."""
        constants = set()
        if facts.tree is not None:
            constants = {t.id for s in facts.tree.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)
                         and isinstance(s.value.value, str) and family(s.value.value) is not None
                         for t in s.targets if isinstance(t, ast.Name)}
        return frozenset(set(_FAMILY_WORDS) | constants)

    # -- where a family is picked -----------------------------------------------------------
    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if isinstance(node.operator, cst.Or):
            name = self._named(node.right)
            if name is not None:
                self._pick(node.right, name, "the default")

    def visit_Call(self, node: cst.Call) -> None:
        if len(node.args) < 2 or node.args[1].keyword is not None:
            return
        func = dotted_name(node.func) or ""
        if not (func.endswith(".get") and "environ" in func) and not self.is_name(node.func, _DEFAULT_GETTERS):
            return
        value = literal_string(node.args[1].value)
        name = family(value)
        if name is not None:
            self._pick(node.args[1].value, (value, name), "the default")

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._arm(node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self._arm(node.value)

    def _arm(self, value: cst.BaseExpression) -> None:
        """A string a function returns or assigns: one arm of a dispatch, when the function
        picks two or more names (settled when the module is left)."""
        for leaf in (value.body, value.orelse) if isinstance(value, cst.IfExp) else (value,):
            text = literal_string(leaf)
            if text is not None:
                scope = self._scope(leaf)
                if isinstance(scope, cst.FunctionDef):
                    self._arms.setdefault(id(scope), (scope, []))[1].append((leaf, text))

    def leave_Module(self, original_node: cst.Module) -> None:
        for _, arms in self._arms.values():
            if len({text for _, text in arms}) < 2:
                continue
            picks = [(leaf, (text, family(text))) for leaf, text in arms if family(text) is not None]
            reached = [(leaf, name) for leaf, name in picks if ROCM in self.platforms(leaf)]
            if reached:
                self._pick(reached[0][0], reached[0][1], "this arm of the dispatch", count=len(reached))

    # -- helpers ------------------------------------------------------------------------------
    def _named(self, node: cst.CSTNode) -> Optional[Tuple[str, str]]:
        text = literal_string(node)
        if text is None and isinstance(node, cst.Name):
            text = self._module_constants().get(node.value)
        name = family(text)
        return (text, name) if name is not None and text is not None else None

    def _module_constants(self) -> Dict[str, str]:
        """Module names assigned a string literal once, at module level, and nowhere else."""
        if self._constants is None:
            found: Dict[str, str] = {}
            tree = self.context.facts.tree if self.context.facts is not None else None
            if tree is not None:
                counts: Dict[str, int] = {}
                for node in ast.walk(tree):
                    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                        counts[node.id] = counts.get(node.id, 0) + 1
                for stmt in tree.body:
                    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                        if len(targets) == 1 and isinstance(targets[0], ast.Name) and counts.get(targets[0].id) == 1 \
                                and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                            found[targets[0].id] = stmt.value.value
            self._constants = found
        return self._constants

    def _pick(self, node: cst.CSTNode, named: Tuple[str, str], what: str, count: int = 1) -> None:
        scope = self._scope(node)
        if id(scope) in self._done:
            return
        if ROCM not in self.platforms(node) or self._tests_rocm(scope) or self._nvidia_scope(node) \
                or not self._automatic(node, scope):
            return
        index = self.context.index
        own = index.module_name(self.context.path) if index is not None else None
        if own is not None and index.cuda_chain(own) is not None:
            return  # a CUDA-only module: ROCm never imports it
        self._done.add(id(scope))
        value, name = named
        more = f" ({count - 1} more NVIDIA-only pick{'s' if count > 2 else ''} in this function)" if count > 1 else ""
        self.display_only(
            node, f"{what} `{value}` picks {name} kernels, which are NVIDIA-only, and no test tells ROCm apart on "
                  f"the way: on AMD GPUs this path fails{more}",
            "Pick the family by platform (`torch.version.hip is None`, the project's is_cuda()) and give ROCm a "
            "portable backend")

    def _automatic(self, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
        """Is the pick made by the code, not opted into? Every condition around it in its
        function is a platform test or compares data (a quantisation, a shape, a model's
        architecture: names, attributes, literals); none asks whether a package is available,
        what the environment or a user's flag says, or the device's capability (an availability
        probe keeps ROCm out; an opt-in is the user's choice)."""
        found = gates.of(self.context)
        for test, _ in found.conditions(node):
            if not self._inside(test, scope):
                break
            if found.test(test).known:
                continue
            for sub in walk(test):
                if isinstance(sub, cst.Call) and dotted_name(sub.func) not in ("isinstance", "len"):
                    return False
                if isinstance(sub, cst.Name) and _OPT_IN.search(sub.value):
                    return False
        return True

    def _inside(self, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
        return any(a is scope for a in self.ancestors(node))

    def _scope(self, node: cst.CSTNode) -> cst.CSTNode:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.Module)):
                return ancestor
        return self.context.module

    def _tests_rocm(self, scope: cst.CSTNode) -> bool:
        """Does a test in ``scope`` tell ROCm apart (a side that ROCm takes and CUDA cannot:
        ``is_hip()``, ``not is_cuda()``; not ``is_hopper``, which ROCm and older NVIDIA GPUs fail alike)?"""
        platforms = gates.of(self.context)
        body = scope.body if isinstance(scope, cst.FunctionDef) else scope
        for sub in walk(body):
            test = None
            if isinstance(sub, (cst.If, cst.While, cst.IfExp)):
                test = sub.test
            elif isinstance(sub, cst.BooleanOperation):
                test = sub.left
            elif isinstance(sub, cst.Assert):
                test = sub.test
            if test is None:
                continue
            read = platforms.test(test)
            # a side that ROCm takes and CUDA cannot: the test gives ROCm a path of its own
            if (ROCM in read.true and CUDA not in read.true) or (ROCM in read.false and CUDA not in read.false):
                return True
        return False

    def _nvidia_scope(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, (cst.FunctionDef, cst.ClassDef)) and NVIDIA_ONLY.search(a.name.value)
                   or isinstance(a, (cst.FunctionDef, cst.ClassDef)) and family(a.name.value) is not None
                   for a in self.ancestors(node))
