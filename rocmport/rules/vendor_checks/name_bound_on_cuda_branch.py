"""ROC709 name-bound-on-cuda-branch: A name bound only on the CUDA branch of a platform test is used where ROCm runs too: NameError on ROCm.

The rule's documentation is its class's (`rocmport rule ROC709` prints it).
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import ExpressionContext, ExpressionContextProvider

from rocmport.analysis.bindings import import_bindings, module_imports, top_level
from rocmport.analysis.platforms import CPU, CUDA, OTHER, ROCM, Env, classify, module_tests
from rocmport.findings import Applicability
from rocmport.rules.base import Case

from .common import NVIDIA_ONLY, VendorRule, tolerated

_BUILTINS = frozenset(dir(builtins))
_WORDS = {CUDA: "CUDA", CPU: "the CPU", OTHER: "other accelerators", ROCM: "ROCm"}
# a function or class whose name says it is the NVIDIA path (``forward_cuda``, ``_nvidia_impl``)
_NVIDIA_SCOPE = re.compile(r"(?i)(?:^|_)(?:cuda|nvidia|nv)(?:_|$)")
_BINDERS = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef,
            ast.ClassDef)


def _binds(block) -> bool:
    return any(isinstance(node, _BINDERS) for stmt in block for node in top_level([stmt]))


def _splits(ifs, env: Env) -> bool:
    """Does one of these ``if``s have an arm that CUDA takes and ROCm does not, which binds?"""
    for stmt in ifs:
        test = classify(stmt.test, env)
        for arm, block in ((test.true, stmt.body), (test.false, stmt.orelse)):
            if CUDA in arm and ROCM not in arm and _binds(block):
                return True
    return False


def _candidates(tree: ast.AST) -> Set[str]:
    """The names that module-level ``if`` arms bind (imports, definitions, assignments)."""
    names: Set[str] = set()
    for stmt in top_level(tree.body):
        if isinstance(stmt, ast.If):
            for inner in top_level(stmt.body + stmt.orelse):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    names.update(bound for bound, _full in import_bindings(inner))
                elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(inner.name)
                elif isinstance(inner, (ast.Assign, ast.AnnAssign)):
                    for target in inner.targets if isinstance(inner, ast.Assign) else [inner.target]:
                        names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


class NameBoundOnCudaBranch(VendorRule):
    CODE = "ROC709"
    NAME = "name-bound-on-cuda-branch"
    SUMMARY = ("A name bound only on the CUDA branch of a platform test is used where ROCm runs too: "
               "NameError on ROCm.")
    # The spellings of the tests that CUDA passes and ROCm does not (torch's, the porting
    # projects' words, a platform string): a file with none has no such test of its own. (A
    # predicate imported under a name that says nothing of a platform is not read.) No NEEDS:
    # the tests are read through the project's other modules (a predicate they define), and the
    # vocabulary has no need for "an identifier or string that spells one of these".
    TRIGGERS = ("cuda", "CUDA", "hip", "HIP", "rocm", "ROCm", "ROCM", "nvidia", "NVIDIA", "Nvidia", "_nv", "_NV",
                "gfx", "opper", "OPPER", "lackwell", "LACKWELL", "is_sm", "IS_SM")
    FIX_APPLICABILITY = Applicability.DISPLAY_ONLY
    WHAT = """
        A module-level name (an import, a function, a class, an assignment) bound only in arms
        of platform tests that CUDA takes and ROCm does not (`if _is_cuda: from .x import f`,
        `elif SYSTEM == "cuda":` with no ROCm arm and no `else`, `if not is_hip():`), and read
        where ROCm runs too: at module level, or in a function, where no test around the read
        excludes ROCm. The flow check of pyflakes, with the platforms as conditions: the
        platforms on which the name is bound against those on which the read runs (the
        platform analysis reads the tests: torch's, the porting projects' conventions, the
        project's own predicates and flags, through the project index). Reported once per
        name, at its first such read, with the count of the others.

        Not reported: a name also bound on a branch ROCm takes (an `elif` for ROCm, an `else`,
        an unconditional fallback), a read under the same test or another that excludes ROCm
        (a flag set in the same arms: `HAS_F = True` / `False`), a read inside `try` that
        catches NameError (or Exception), in an annotation, or in a function or class whose
        name says it is the NVIDIA path (`forward_cuda`, `_cutlass_impl`), a module whose
        `from x import *` may bind it on ROCm, and a name rebound through `global`.
        """
    WHY = """
        On ROCm the read raises NameError the first time it runs, for every model that takes
        that path: text-generation-inference bound `QuantLinear` under `if SYSTEM == "ipex":` /
        `elif SYSTEM == "cuda":` and returned it from `GPTQWeight.get_linear` whenever the
        ExLlama kernel was not used, so GPTQ models failed on ROCm
        (huggingface/text-generation-inference#2691, which binds it for `SYSTEM in {"cuda",
        "rocm"}`).
        """
    EXAMPLE = """
        if torch.version.hip is None:
            from marlin_kernels import gemm as quant_gemm

        def matmul(x, w):
            return quant_gemm(x, w)
        """
    FIX = """
        Display-only: bind the name on ROCm too (an arm for ROCm with its kernel, or an `else`
        that binds a fallback or raises a clear error), or test the platform before the read:

            if torch.version.hip is None:
                from marlin_kernels import gemm as quant_gemm
            else:
                from .triton_gemm import gemm as quant_gemm
        """
    VALID = (
        # bound in both arms
        Case("""
            import torch
            if torch.version.hip is None:
                from .cuda_ops import gemm
            else:
                from .triton_ops import gemm
            def f(x):
                return gemm(x)
            """),
        # an elif for ROCm
        Case("""
            if SYSTEM == "cuda":
                from .cuda import QuantLinear
            elif SYSTEM == "rocm":
                from .triton import QuantLinear
            def f():
                return QuantLinear()
            """),
        # the read under the same test
        Case("""
            if _is_cuda:
                from sgl_kernel import fused_op
            def forward(x):
                if _is_cuda:
                    return fused_op(x)
                return x
            """),
        # after an early exit on ROCm
        Case("""
            import torch
            if not torch.version.hip:
                from .ops import op
            def forward(x):
                if torch.version.hip:
                    raise NotImplementedError("no ROCm kernel")
                return op(x)
            """),
        # a flag set in the same arms
        Case("""
            if is_cuda():
                from .ops import op
                HAS_OP = True
            else:
                HAS_OP = False
            def forward(x):
                return op(x) if HAS_OP else x
            """),
        # a local binding of the same name in the function
        Case("""
            if _is_cuda:
                from .ops import op
            def forward(x):
                from .fallback import op
                return op(x)
            """),
        # a test that tells nothing about ROCm: the name may be bound anywhere
        Case("""
            if HAS_TRITON:
                from .ops import op
            def forward(x):
                return op(x)
            """),
        # try / except NameError (or Exception)
        Case("""
            if _is_cuda:
                from .ops import op
            def forward(x):
                try:
                    return op(x)
                except Exception:
                    return x
            """),
        # a flag the class keeps from an NVIDIA architecture test
        Case("""
            if _is_nvidia:
                from .routing import fp32_router_gemm
            class MoE:
                def __init__(self, config):
                    self.use_fp32_gemm = current_platform().is_hopper_plus and config.hidden == 3072
                def forward(self, x):
                    if self.use_fp32_gemm and x.shape[0] > 0:
                        return fp32_router_gemm(x)
                    return x
            """),
        # a function named for the NVIDIA path
        Case("""
            if _is_cuda:
                from .ops import op
            class Layer:
                def forward_cuda(self, x):
                    return op(x)
            """),
        # an annotation
        Case("""
            from __future__ import annotations
            if _is_cuda:
                from .ops import Op
            def make() -> Op:
                return None
            """),
        # a star import that runs on ROCm may bind it
        Case("""
            from .common import *
            if _is_cuda:
                from .ops import op
            def forward(x):
                return op(x)
            """),
        # the words in a string, and an import of another module's name of the same spelling
        Case("""
            if _is_cuda:
                from .ops import op
            print("op(x) is CUDA-only")
            try:
                from .other import op as other_op
            except ImportError:
                other_op = None
            """),
        # bound only on ROCm: not this rule's
        Case("""
            if _is_hip:
                from .ops import op
            def forward(x):
                return op(x)
            """),
    )
    INVALID = (
        Case("""
            from .import_utils import SYSTEM
            if SYSTEM == "ipex":
                from .ipex import QuantLinear
            elif SYSTEM == "cuda":
                from .cuda import QuantLinear
            class Weight:
                def get_linear(self, bias):
                    if self.use_exllama:
                        from .exllama import ExllamaQuantLinear
                        return ExllamaQuantLinear(self, bias)
                    return QuantLinear(self.qweight, bias)
            """, line=11, column=16,
            message=(
                '`QuantLinear` is bound only on CUDA and other accelerators (line 3, under `SYSTEM == "ipex"`), and '
                'this read runs on ROCm too, where it raises NameError')),
        Case("""
            import torch
            if torch.version.cuda is not None:
                def fused(x):
                    return x
            out = fused(1)
            """, line=5,
            column=7,
            message=(
                '`fused` is bound only on CUDA (line 3, under `torch.version.cuda is not None`), and this read runs on '
                'ROCm too, where it raises NameError')),
        Case("""
            if _is_cuda:
                from sgl_kernel import silu_and_mul
            def forward(x):
                return silu_and_mul(x)
            def backward(x):
                return silu_and_mul(x)
            """, line=4, message="`silu_and_mul` is bound only on CUDA (line 2, under `_is_cuda`), and this "
                                 "read runs on ROCm too, where it raises NameError (1 more read like it)",
            column=12),
        Case("""
            _is_nvidia = current_platform().is_nvidia
            if _is_nvidia:
                from .cuda_kv import copy_page_first, copy_direct
            def load(layout, src, dst):
                if layout == "page_first":
                    return copy_page_first(src, dst)
                return copy_direct(src, dst)
            """, line=6, message="`copy_page_first` is bound only on CUDA (line 3, under `_is_nvidia`), and this read "
                                 "runs on ROCm too, where it raises NameError (1 more read of names bound there too: "
                                 "`copy_direct`)",
            column=16),
        Case("""
            if not is_hip():
                from .marlin import marlin_gemm
            def apply(x, w):
                if w.bits == 4:
                    return marlin_gemm(x, w)
                return x @ w
            """, line=5,
            column=16,
            message=(
                '`marlin_gemm` is bound only on CUDA and the CPU and other accelerators (line 2, under `not '
                'is_hip()`), and this read runs on ROCm too, where it raises NameError')),
    )

    def __init__(self, context):
        super().__init__(context)
        self._names: Set[str] = set()
        self._reads: Dict[str, List[cst.Name]] = {}

    @classmethod
    def may_match(cls, facts) -> bool:
        """A module-level ``if`` with an arm that CUDA takes and ROCm does not, which binds a
        name. The module's own predicates are learnt only where such an ``if`` reads a name the
        module assigns or defines (most modules' ``if``s are ``TYPE_CHECKING`` or versions)."""
        tree = facts.tree
        if tree is None:
            return True
        ifs = [s for s in top_level(tree.body) if isinstance(s, ast.If) and (_binds(s.body) or _binds(s.orelse))]
        if not ifs:
            return False
        index, path = getattr(facts, "index", None), getattr(facts, "path", None)
        own = index.module_name(path) if index is not None and path else None
        absolute = (lambda module, level: index.absolute(own, module, level)) if own is not None else None
        env = Env(module_imports(tree.body, absolute), {}, index.platform_test if index is not None else None)
        if _splits(ifs, env):
            return True
        own_names = {t.id for s in tree.body if isinstance(s, (ast.Assign, ast.AnnAssign))
                     for t in (s.targets if isinstance(s, ast.Assign) else [s.target]) if isinstance(t, ast.Name)}
        own_names |= {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        own_names |= {t.id for s in top_level(tree.body) if isinstance(s, (ast.Assign, ast.AnnAssign))
                      for t in (s.targets if isinstance(s, ast.Assign) else [s.target]) if isinstance(t, ast.Name)}
        if not any(isinstance(n, ast.Name) and n.id in own_names for s in ifs for n in ast.walk(s.test)):
            return False
        module_tests(tree.body, env)
        return _splits(ifs, env)

    @classmethod
    def reach(cls, facts) -> Optional[FrozenSet[str]]:
        """A read spells the name; what the rule reads around it is in its definition, and the
        bindings are module-level statements (a ``def`` bound so spells its own name)."""
        return frozenset(_candidates(facts.tree)) if facts.tree is not None else None

    def visit_Module(self, node: cst.Module) -> None:
        tree = self.context.facts.tree if self.context.facts is not None else None
        if tree is None:
            try:
                tree = ast.parse(self.context.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return
        rebound = {n for g in ast.walk(tree) if isinstance(g, (ast.Global, ast.Nonlocal)) for n in g.names}
        self._names = _candidates(tree) - rebound - _BUILTINS

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self._names:
            self._reads.setdefault(node.value, []).append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self._reads:
            return
        index = self.context.index
        own = index.module_name(self.context.path) if index is not None else None
        if own is not None and index.cuda_chain(own) is not None:
            return  # a CUDA-only module: ROCm never imports it
        scopes = self.context.scopes
        table = scopes.bindings(original_node)
        if self._star_on_rocm(original_node):
            return
        contexts = None
        # one finding per decision: the platform test whose arm binds the names
        groups: Dict[int, List[Tuple[str, cst.CSTNode, FrozenSet[str], List[cst.Name]]]] = {}
        for name in self._reads:
            bound = table.get(name, [])
            if not bound:
                continue
            where: FrozenSet[str] = frozenset().union(*(self.platforms(b) for b in bound))
            if ROCM in where or CUDA not in where:
                continue
            if contexts is None:
                contexts = self.context.metadata(ExpressionContextProvider)
            reads = [n for n in self._reads[name] if self._reads_module_name(n, contexts)]
            if reads:
                decision = next((test for test, _ in self._conditions(bound[0])), bound[0])
                groups.setdefault(id(decision), []).append((name, bound[0], where, reads))
        for group in groups.values():
            reads = sorted(((self._at(n), name, n) for name, _, _, found in group for n in found), key=lambda r: r[0])
            _, name, first = reads[0]
            binding, where = next((b, w) for n, b, w, _ in group if n == name)
            line, test = self.context.position(binding).start.line, self._test_of(binding)
            places = " and ".join(_WORDS[p] for p in (CUDA, CPU, OTHER) if p in where)
            others = sorted({n for _, n, _ in reads[1:]} - {name})
            more = ""
            if len(reads) > 1 and not others:
                more = f" ({len(reads) - 1} more read{'s' if len(reads) > 2 else ''} like it)"
            elif others:
                shown = ", ".join(f"`{n}`" for n in others[:4]) + (", ..." if len(others) > 4 else "")
                more = (f" ({len(reads) - 1} more read{'s' if len(reads) > 2 else ''} of names bound there too: "
                        f"{shown})")
            under = f", under `{test}`" if test else ""
            self.display_only(
                first, f"`{name}` is bound only on {places} (line {line}{under}), and this read runs on ROCm too, "
                       f"where it raises NameError{more}",
                "Bind it on ROCm too (an arm for ROCm, or an else that binds a fallback or raises a clear error), "
                "or test the platform before this read")

    def _at(self, node: cst.CSTNode) -> Tuple[int, int]:
        start = self.context.position(node).start
        return start.line, start.column

    def _test_of(self, binding: cst.CSTNode) -> str:
        for test, _ in self._conditions(binding):
            return self.context.module.code_for_node(test).strip()
        return ""

    def _conditions(self, node: cst.CSTNode):
        from rocmport.analysis import gates

        return gates.of(self.context).conditions(node)

    def _star_on_rocm(self, module: cst.Module) -> bool:
        """A ``from x import *`` that runs on ROCm may bind any name there."""
        tree = self.context.facts.tree if self.context.facts is not None else None
        if tree is None:
            return True
        return any(isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names) for s in top_level(tree.body)) \
            and self._star_reaches_rocm(module)

    def _star_reaches_rocm(self, module: cst.Module) -> bool:
        for stmt in _module_statements(module):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar) \
                            and ROCM in self.platforms(small):
                        return True
        return False

    def _reads_module_name(self, node: cst.Name, contexts) -> bool:
        """A read of the module's binding of ``node`` that runs on ROCm, where nothing around it
        copes with NameError or says it is the NVIDIA path."""
        if contexts.get(node) is not ExpressionContext.LOAD:
            return False
        holder = self.parent(node)
        if isinstance(holder, cst.Attribute) and holder.attr is node:
            return False
        if self.context.scopes.meaning(node.value, node) != ("module", None):
            return False
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.Annotation, cst.ImportAlias, cst.Import, cst.ImportFrom)):
                return False
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and (
                    _NVIDIA_SCOPE.search(ancestor.name.value) or NVIDIA_ONLY.search(ancestor.name.value)):
                return False
        if ROCM not in self.platforms(node):
            return False
        return not tolerated(self, node, frozenset({None, "NameError", "Exception", "BaseException"}))


def _module_statements(module: cst.Module):
    """The module's statements, and those of the blocks of its compound statements (not of
    functions or classes)."""
    stack: List[cst.CSTNode] = list(module.body)
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        blocks = [getattr(stmt, "body", None), getattr(stmt, "finalbody", None)]
        blocks += [handler.body for handler in getattr(stmt, "handlers", ())]
        orelse = getattr(stmt, "orelse", None)
        if isinstance(orelse, cst.If):
            stack.append(orelse)
        elif orelse is not None:
            blocks.append(orelse.body)
        for block in blocks:
            if isinstance(block, cst.IndentedBlock):
                stack.extend(block.body)
