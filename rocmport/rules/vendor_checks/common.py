"""Shared by the rules of the vendor_checks family."""

from __future__ import annotations

import re
from typing import Dict, Iterator, List, Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from rocmport import rocm_facts
from rocmport.analysis.names import qualified_names
from rocmport.analysis.platforms import ROCM, other_accelerator_path
from rocmport.analysis.syntax import ROCM_WORD, dotted_name, literal_string
from rocmport.analysis.triton import FOREIGN_TEST, KERNEL_DECORATORS, is_foreign_path
from rocmport.analysis.walk import children as _children
from rocmport.findings import Applicability, Fix
from rocmport.rules.base import Rule

PRE = "import torch\n"



def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node under it (``current.children`` rebuilds each node it reads)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(_children(current)))


def identifiers(node: cst.CSTNode, strings: bool = True) -> Iterator[str]:
    """Names, attribute names, import names and (with ``strings``) string literal values
    under ``node``."""
    for n in walk(node):
        if isinstance(n, cst.Name):
            yield n.value
        elif strings and isinstance(n, cst.SimpleString):
            value = literal_string(n)
            if value is not None:
                yield value
        elif strings and isinstance(n, cst.FormattedStringText):
            yield n.value


def mentions(node: cst.CSTNode, pattern: "re.Pattern[str]", strings: bool = True) -> bool:
    return any(pattern.search(text) for text in identifiers(node, strings))


def reads_cuda_version(node: cst.CSTNode) -> bool:
    """Does ``node`` mention ``<x>.version.cuda`` (torch's CUDA version, by its spelling)?"""
    for n in walk(node):
        if isinstance(n, cst.Attribute) and n.attr.value == "cuda":
            name = dotted_name(n.value)
            if name is not None and (name == "version" or name.endswith(".version")):
                return True
    return False


def _vendor_path(path: str) -> bool:
    """A file whose name says it is for one vendor: ``..._sm90.py``, ``hopper.py``,
    ``nvidia.py``, ``tensorrt_*.py``, ``test_rocm_support.py``: its vendor code is the point."""
    stem = re.split(r"[/\\]", path)[-1].rsplit(".", 1)[0]
    return bool(NVIDIA_ONLY.search(stem) or _VENDOR_FILE.search(stem) or ROCM_WORD.search(stem))


_VENDOR_FILE = re.compile(r"(?i)nvidia|tensorrt|(?:^|_)trt(?:_|$)")


def nvidia_named(path: str) -> bool:
    """A file whose name says it is for NVIDIA alone (``..._sm90.py``, ``nvidia.py``,
    ``tensorrt_*.py``): not imported where ROCm runs."""
    stem = re.split(r"[/\\]", path)[-1].rsplit(".", 1)[0]
    return bool(NVIDIA_ONLY.search(stem) or _VENDOR_FILE.search(stem))


def statement_of(rule: Rule, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The statement that holds ``node``: a simple statement line, or the compound statement
    whose header (test, iterable, ...) holds it."""
    child = node
    for ancestor in rule.ancestors(node):
        if isinstance(ancestor, cst.SimpleStatementLine):
            return ancestor
        if isinstance(ancestor, cst.BaseCompoundStatement) and child is not getattr(ancestor, "body", None) \
                and not isinstance(child, (cst.Else, cst.If)):
            return ancestor
        if isinstance(ancestor, cst.BaseSuite):
            return None
        child = ancestor
    return None


def header_of(statement: Optional[cst.CSTNode]) -> Optional[cst.CSTNode]:
    """The part of a statement that is evaluated with it: a simple statement line, the test
    of an ``if`` / ``while``; None for other compound statements."""
    if isinstance(statement, (cst.If, cst.While)):
        return statement.test
    return statement if isinstance(statement, cst.SimpleStatementLine) else None


class VendorRule(Rule):
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider, QualifiedNameProvider)

    def is_name(self, node: cst.CSTNode, names) -> bool:
        return bool(qualified_names(self, node, names) & names)

    # Decide from the file's name too (``..._sm90.py``, ``nvidia.py``, ``test_rocm_support.py``).
    # The architecture and fp8 rules (ROC702, ROC705, ROC706, ROC711) set it False: a file named
    # for ROCm is where those bugs live, and what a file imports and tests decides, not its name.
    BY_FILE_NAME: bool = True

    def gated(self, node: cst.CSTNode) -> bool:
        """Already gated: on one side of a platform test, as the one platform analysis reads
        it (``in_rocm_branch``: ``if torch.version.cuda:``, the ``else`` of ``if
        torch.version.cuda is None:``, the right of ``cuda and ...``, after an early return on
        ROCm); in a file, function or class for another accelerator, or in the body of a test
        for one."""
        if self.in_rocm_branch(node) or is_foreign_path(self.context.path) or \
                other_accelerator_path(self.context.path) or (self.BY_FILE_NAME and _vendor_path(self.context.path)):
            return True
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and FOREIGN_TEST.search(ancestor.name.value):
                return True  # code for another accelerator
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is ancestor.body and \
                    mentions(ancestor.test, FOREIGN_TEST, strings=False):
                return True
            child = ancestor
        return False

    def earlier_exit(self, node: cst.CSTNode, predicate) -> bool:
        """Is there, earlier in a block that holds ``node`` (up to its function), an ``if``
        whose test satisfies ``predicate`` and whose body returns, raises, breaks or continues?"""
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.IndentedBlock, cst.Module)):
                for stmt in ancestor.body:
                    if stmt is child:
                        break
                    if isinstance(stmt, cst.If) and exits(stmt.body) and predicate(stmt.test):
                        return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            child = ancestor
        return False

    def values(self, name: cst.Name) -> List[cst.BaseExpression]:
        """What is assigned to ``name`` in the function that reads it (or, when that function
        assigns nothing to it, at module level): plain assignments, and the value of a tuple
        unpacking (``major, minor = <value>``). A statement-level walk that does not enter
        nested functions or classes: cheaper than the scope analysis of a large file, which
        ROC7xx does not need."""
        scopes: List[cst.CSTNode] = []
        for ancestor in self.ancestors(name):
            if isinstance(ancestor, (cst.FunctionDef, cst.Module)):
                scopes.append(ancestor)
        for scope in scopes:
            found = list(_assignments_in(scope, name.value))
            if found:
                return found
            if isinstance(scope, cst.FunctionDef) and any(
                    p.name.value == name.value for p in _params(scope.params)):
                return []  # a parameter: unknown
        return []

    def in_triton_kernel(self, node: cst.CSTNode) -> bool:
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef):
                for decorator in ancestor.decorators:
                    if qualified_names(self, decorator.decorator, KERNEL_DECORATORS) & KERNEL_DECORATORS:
                        return True
        return False

    def display_only(self, node: cst.CSTNode, message: str, suggestion: str) -> None:
        self.report(node, message, fix=Fix(Applicability.DISPLAY_ONLY, suggestion))

    def callers_off_rocm(self, node: cst.CSTNode) -> bool:
        """Is the function around ``node`` called in this file, and only off ROCm (every call
        under ``if not self.is_rocm_pytorch():``, in a CUDA branch: ``self.platforms``)? Calls
        are matched by name (``f(...)``, ``x.f(...)``); CPython's tree of the whole file counts
        them, so a call in a definition a lint left unparsed makes the answer no."""
        function = next((a for a in self.ancestors(node) if isinstance(a, cst.FunctionDef)), None)
        if function is None:
            return False
        name = function.name.value
        calls = self.context.shared("vendor-calls-by-name", _calls_by_name).get(name, [])
        if not calls or len(calls) != _cpython_calls(self.context).get(name, 0):
            return False
        return all(ROCM not in self.platforms(call) for call in calls)


def _calls_by_name(ctx) -> Dict[str, List[cst.Call]]:
    found: Dict[str, List[cst.Call]] = {}
    for n in walk(ctx.module):
        if isinstance(n, cst.Call):
            func = n.func
            name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) \
                else None
            if name is not None:
                found.setdefault(name, []).append(n)
    return found


def _cpython_calls(ctx) -> Dict[str, int]:
    def count(ctx) -> Dict[str, int]:
        import ast

        tree = getattr(ctx.facts, "tree", None) if ctx.facts is not None else None
        out: Dict[str, int] = {}
        for n in ast.walk(tree) if tree is not None else ():
            if isinstance(n, ast.Call):
                func = n.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                if name is not None:
                    out[name] = out.get(name, 0) + 1
        return out

    return ctx.shared("vendor-cpython-calls", count)




def facts_doc(topic: str) -> str:
    return "\n".join("        - " + f.claim + " (" + ", ".join(f.sources) + ")"
                     for f in rocm_facts.FACTS if f.topic == topic)


def arch_doc() -> str:
    return "\n".join("        " + line for line in rocm_facts.arch_table().splitlines())


def is_none(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _params(params: cst.Parameters):
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            yield star


def _assignments_in(scope: cst.CSTNode, name: str) -> Iterator[cst.BaseExpression]:
    """Values assigned to ``name`` by statements of ``scope`` (not of nested scopes)."""
    stack = list(scope.body.body) if isinstance(scope, cst.FunctionDef) and \
        isinstance(scope.body, cst.IndentedBlock) else list(getattr(scope, "body", ()))
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Assign):
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Name) and t.value == name:
                    yield node.value
                elif isinstance(t, (cst.Tuple, cst.List)) and any(
                        isinstance(e.value, cst.Name) and e.value.value == name for e in t.elements):
                    yield node.value
            continue
        if isinstance(node, cst.AnnAssign):
            if isinstance(node.target, cst.Name) and node.target.value == name and node.value is not None:
                yield node.value
            continue
        stack.extend(node.children)


def exits(block: cst.BaseSuite) -> bool:
    if isinstance(block, cst.IndentedBlock):
        body = block.body
        last = body[-1] if body else None
        if isinstance(last, cst.SimpleStatementLine):
            return isinstance(last.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))
        return False
    if isinstance(block, cst.SimpleStatementSuite):
        return isinstance(block.body[-1], (cst.Return, cst.Raise, cst.Continue, cst.Break))
    return False



CAPABILITY = frozenset({"torch.cuda.get_device_capability"})
PROPERTIES = frozenset({"torch.cuda.get_device_properties"})
# Features that exist only on NVIDIA: a capability test that guards one is gated off ROCm.
NVIDIA_ONLY = re.compile(
    r"(?i)(?:^|[^a-z0-9])(?:fa3|tma|wgmma|hopper|blackwell|tcgen05|sm_?9\d+a?|sm_?1[0-2]\d+a?|"
    r"flash_attn_interface|flash_attn_3|flash_mla|deep_gemm|cutlass|nvfp4|mxfp4_nv|marlin|machete|trtllm)"
    r"(?:[^a-z]|$)")



E4M3FN = frozenset({"torch.float8_e4m3fn"})
_FNUZ_AWARE = re.compile(r"(?i)fnuz|float8e4b8|fp8e4b8|gfx|gcnarch")


class Fp8Rule(VendorRule):
    def __init__(self, context):
        super().__init__(context)
        self._header_aware: Dict[int, bool] = {}  # id(statement) -> does its header know fnuz

    def fnuz_aware(self, node: cst.CSTNode, statement: Optional[cst.CSTNode]) -> bool:
        """The statement around ``node`` (or a test that decides it) knows the fnuz format or
        the architecture: the code already chooses per GPU. The statement's answer is kept
        (a table of dtypes asks it for every entry)."""
        key = id(statement)
        known = self._header_aware.get(key)
        if known is None:
            header = header_of(statement)
            known = self._header_aware[key] = header is not None and mentions(header, _FNUZ_AWARE)
        if known:
            return True
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)) and child is not ancestor.test:
                if mentions(ancestor.test, _FNUZ_AWARE):
                    return True
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)) and _FNUZ_AWARE.search(ancestor.name.value):
                return True
            child = ancestor
        return False
