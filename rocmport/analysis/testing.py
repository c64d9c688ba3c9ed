"""Tests, as the code proves them: which modules are test modules, which tests are skipped,
which tests are about CUDA graphs. Facts, never findings.

A module is a test module when its code says so, not its name alone: it defines tests (a
module-level ``def test_*``, a ``Test*`` class with ``test_*`` methods, a subclass of a
``TestCase``) and imports a test framework (``pytest``, ``unittest``, ``hypothesis``,
torch's ``torch.testing``) or is named as pytest collects it (``test_*.py``, ``*_test.py``);
or it is a ``conftest.py`` (pytest's fixtures). A ``test_speed.py`` that defines no test is a
script; a ``utils.py`` with a ``unittest.TestCase`` mixin full of tests is tests.

A test is about CUDA graphs when it calls what captures one (``torch.cuda.graph``,
``torch.cuda.CUDAGraph``, ``make_graphed_callables``, a ``prepare_for_cuda_graph`` helper)
or guards against recompilation (``error_on_recompile``, ``set_stance("fail_on_recompile")``):
a fix that turned CUDA graphs off on ROCm would leave it testing nothing. Its name says so
too (``test_cudagraph_*``), as before. So does a parametrization over compile modes whose
CUDA-graph case would, without the graphs, be a case it already runs
(``@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])``: on ROCm the test would
run "default" twice and the graphs' case would vanish under the name of another).

``FileTests`` answers for LibCST nodes of the file being checked (one per file, through the
rule context); ``is_test_module`` reads CPython's tree (the engine asks it before LibCST).
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider

from . import walk as _walk
from .bindings import dotted as _dotted
from .syntax import dotted_name as _cst_dotted
from .syntax import literal_string

GRAPH_TEST = "a test of CUDA graphs"  # how a finding's reason names such a test
_FRAMEWORKS = ("pytest", "unittest", "hypothesis", "torch.testing", "absl.testing", "nose", "parameterized")
_TEST_FILE = re.compile(r"(?:^|[\\/])(?:test_[^\\/]*|[^\\/]*_test|tests?)\.pyi?$")
_CONFTEST = re.compile(r"(?:^|[\\/])conftest\.py$")
_TEST_CASE_BASE = re.compile(r"(?:^|\.)(?:\w*TestCase|TestBase|Test\w*Mixin|\w*TestMixin)$")

# What a test calls when CUDA graphs are its subject (the last part of the callee's name).
_GRAPH_CALLS = frozenset({"graph", "CUDAGraph", "make_graphed_callables", "capture_begin", "graph_pool_handle"})
_GRAPH_HELPER = re.compile(r"(?i)prepare_(?:\w*_)?for_cuda_?graphs?|cuda_?graph")
_RECOMPILE = re.compile(r"error_on_recompile|fail_on_recompile|raise_error_on_recompile|assert_no_recompil")
_GRAPH_NAME = re.compile(r"(?i)cuda_?graphs?|cudagraphs?|reduce_overhead|graph_capture")
# A CUDA-graph compile mode and the mode it is without the graphs (None is "default").
_WITHOUT_GRAPHS = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}


def _imports_framework(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        if any(name == f or name.startswith(f + ".") for name in names for f in _FRAMEWORKS):
            return True
    return False


def _defines_tests(tree: ast.Module) -> bool:
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("test"):
            return True
        if isinstance(stmt, ast.ClassDef):
            bases = [_dotted(b) or "" for b in stmt.bases]
            if any(_TEST_CASE_BASE.search(b) for b in bases):
                return True
            if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name.startswith("test_")
                   for s in stmt.body):
                return True
    return False


def is_test_module(tree: Optional[ast.Module], path: str) -> bool:
    """Is the module at ``path`` (CPython's ``tree`` of it; None when it does not parse) a
    test module, by what its code proves? Without a tree, its name alone decides."""
    normalized = path.replace("\\", "/")
    if _CONFTEST.search(normalized):
        return True
    named = _TEST_FILE.search(normalized) is not None
    if tree is None:
        return named
    return _defines_tests(tree) and (named or _imports_framework(tree))


class FileTests:
    """The test questions of one file, on LibCST's tree (one per file: ``of(ctx)``)."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._graphs: Dict[int, Optional[str]] = {}
        tree = getattr(ctx.facts, "tree", None) if ctx.facts is not None else None
        if tree is None:
            try:
                tree = ast.parse(ctx.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
        self.is_test = is_test_module(tree, ctx.path)

    def release(self) -> None:
        self.ctx = None
        self._graphs.clear()

    def _parents(self):
        return self.ctx.metadata(ParentNodeProvider)

    def enclosing_tests(self, node):
        """The functions and classes around ``node``, innermost first, that are tests: a
        ``test*`` function, or a class that holds one (its setup and helpers are the test's)."""
        parents = self._parents()
        current = parents.get(node)
        while current is not None:
            if isinstance(current, cst.FunctionDef) and current.name.value.startswith("test"):
                yield current
            elif isinstance(current, cst.ClassDef) and _holds_tests(current):
                yield current
            current = parents.get(current)

    def skipped(self, node) -> Optional[str]:
        """Why the test around ``node`` never runs, or None: an unconditional skip on it or
        its class (``@unittest.skip(...)``, ``@pytest.mark.skip``). A skip that depends on the
        platform is the platform analysis' (``gates``): such code never runs on ROCm."""
        parents = self._parents()
        current = parents.get(node)
        while current is not None:
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                for decorator in current.decorators:
                    name = _decorator_name(decorator.decorator)
                    if name is not None and name.rsplit(".", 1)[-1] == "skip" and (
                            name.startswith(("unittest.", "pytest.mark.")) or name == "skip"):
                        return f"the test `{current.name.value}` is skipped (`@{name}`)"
            current = parents.get(current)
        return None

    def about_graphs(self, node) -> Optional[str]:
        """Why the test around ``node`` is about CUDA graphs, or None: what it calls (a capture,
        a graphed callable, a helper that prepares one, a recompile guard), or its name. A
        helper of a test class or module (``_check_hotswap``) is judged with the tests that
        call it: ``with error_on_recompile(): self._check_hotswap(...)``."""
        parents = self._parents()
        current = parents.get(node)
        function = None
        while current is not None:
            if isinstance(current, cst.FunctionDef) and function is None:
                function = current
            if isinstance(current, cst.ClassDef) and _holds_tests(current):
                if _GRAPH_NAME.search(current.name.value):
                    return f"`{current.name.value}` is named for CUDA graphs"
                for decorator in current.decorators:
                    found = _graph_mode_case(decorator.decorator)
                    if found is not None:
                        return f"`{current.name.value}` {found}"
            current = parents.get(current)
        stem = re.split(r"[\\/]", self.ctx.path)[-1]
        named = f"the test module `{stem}` is named for CUDA graphs" if _GRAPH_NAME.search(stem) else None
        if function is None:
            return named
        found = self._evidence(function)
        if found is not None:
            return f"`{function.name.value}` {found}"
        if function.name.value.startswith("test"):
            return named
        owner = parents.get(parents.get(function))  # IndentedBlock -> ClassDef, or the Module
        body = owner.body.body if isinstance(owner, cst.ClassDef) and isinstance(owner.body, cst.IndentedBlock) \
            else getattr(owner, "body", ())
        for other in body if isinstance(body, (list, tuple)) else ():
            if (isinstance(other, cst.FunctionDef) and other is not function and other.name.value.startswith("test")
                    and _calls(other, function.name.value)):
                found = self._evidence(other)
                if found is not None:
                    return f"`{function.name.value}` serves `{other.name.value}`, which {found}"
        return named

    def _evidence(self, function) -> Optional[str]:
        key = id(function)
        if key not in self._graphs:
            self._graphs[key] = _graph_evidence(function)
        return self._graphs[key]


class _CallsName(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found = False

    def visit_Call(self, call: cst.Call) -> None:
        func = call.func
        if (isinstance(func, cst.Name) and func.value == self.name) or (
                isinstance(func, cst.Attribute) and func.attr.value == self.name
                and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls")):
            self.found = True


def _calls(function, name: str) -> bool:
    visitor = _CallsName(name)
    _walk.visit(function, visitor)
    return visitor.found


def _holds_tests(node: cst.ClassDef) -> bool:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return any(isinstance(s, cst.FunctionDef) and s.name.value.startswith("test_") for s in body)


def _decorator_name(expr) -> Optional[str]:
    if isinstance(expr, cst.Call):
        expr = expr.func
    return _cst_dotted(expr)


class _GraphEvidence(cst.CSTVisitor):
    """Finds the first call (or attribute) in a test that says CUDA graphs are its subject."""

    def __init__(self) -> None:
        super().__init__()
        self.found: Optional[str] = None

    def visit_Call(self, call: cst.Call) -> Optional[bool]:
        if self.found is not None:
            return False
        name = _cst_dotted(call.func) or ""
        last = name.rsplit(".", 1)[-1]
        if (last in _GRAPH_CALLS and ("cuda" in name or last in ("CUDAGraph", "make_graphed_callables",
                                                                  "capture_begin"))):
            self.found = f"calls `{name}`"
        elif _GRAPH_HELPER.search(last):
            self.found = f"calls `{name}`"
        elif _RECOMPILE.search(last):
            self.found = f"guards against recompilation (`{name}`)"
        elif last in ("patch", "set_stance"):
            for arg in call.args:
                text = arg.keyword.value if arg.keyword is not None else ""
                value = arg.value.evaluated_value if isinstance(arg.value, cst.SimpleString) else None
                if _RECOMPILE.search(text) or (isinstance(value, str) and _RECOMPILE.search(value)):
                    self.found = f"guards against recompilation (`{name}`)"
                    break
        return None

    def visit_Decorator(self, decorator: cst.Decorator) -> None:
        if self.found is None:
            self.found = _graph_mode_case(decorator.decorator)

    def visit_Attribute(self, attribute: cst.Attribute) -> None:
        if self.found is None and attribute.attr.value == "error_on_recompile":
            self.found = "guards against recompilation (`error_on_recompile`)"


def _mode(expr) -> Optional[str]:
    """The compile mode a literal case value is ("default" for None), or None."""
    if isinstance(expr, cst.Name) and expr.value == "None":
        return "default"
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def parametrize_cases(expr) -> Optional[Tuple[List[str], Optional[List[List[cst.BaseExpression]]]]]:
    """(names, cases) of a ``@<...>.parametrize("a,b", [...])`` call ``expr``: each case's
    values (a tuple or list of them where several names are parametrized, the positional
    arguments of ``pytest.param(...)``, else the value itself); cases None where they are not
    a literal list or tuple. None where ``expr`` is no such call with literal names."""
    if not (isinstance(expr, cst.Call) and (_cst_dotted(expr.func) or "").endswith("parametrize")
            and len(expr.args) >= 2):
        return None
    names = literal_string(expr.args[0].value)
    if names is None:
        return None
    names_list = [n.strip() for n in names.split(",") if n.strip()]
    values = expr.args[1].value
    if not isinstance(values, (cst.List, cst.Tuple)):
        return names_list, None
    cases = []
    for element in values.elements:
        value = element.value
        if isinstance(value, cst.Call) and (_cst_dotted(value.func) or "").endswith(".param"):
            cases.append([a.value for a in value.args if a.keyword is None])
        elif len(names_list) > 1 and isinstance(value, (cst.List, cst.Tuple)):
            cases.append([e.value for e in value.elements])
        else:
            cases.append([value])
    return names_list, cases


def _graph_mode_case(expr) -> Optional[str]:
    """Why a ``parametrize`` decorator (``expr``) makes its test one of CUDA graphs: a
    parameter named for a mode whose CUDA-graph value, without the graphs, is a case the
    parametrization already has (every other value of the case the same); else None."""
    found = parametrize_cases(expr)
    if found is None or found[1] is None:
        return None
    names, cases = found
    positions = [i for i, n in enumerate(names) if "mode" in n.lower()]
    if not positions:
        return None
    empty = cst.Module([])
    rows = []
    for items in cases:
        if len(items) != len(names):
            return None
        rows.append([_mode(item) if i in positions else None for i, item in enumerate(items)]
                    + [empty.code_for_node(item) for i, item in enumerate(items) if i not in positions])
    keys = {tuple(row) for row in rows}
    for position in positions:
        for row in rows:
            graph = row[position]
            if graph not in _WITHOUT_GRAPHS:
                continue
            twin = list(row)
            twin[position] = _WITHOUT_GRAPHS[graph]
            if tuple(twin) in keys:
                return (f'is parametrized over compile modes (`{names[position]}`): without CUDA graphs its'
                        f' "{graph}" case is its "{_WITHOUT_GRAPHS[graph]}" case')
    return None


def _graph_evidence(test) -> Optional[str]:
    """What in ``test`` (a test function or class) says its subject is CUDA graphs."""
    visitor = _GraphEvidence()
    _walk.visit(test, visitor)
    if visitor.found is None and _GRAPH_NAME.search(test.name.value):
        return "is named for CUDA graphs"
    return visitor.found


def of(ctx) -> FileTests:
    """The file's :class:`FileTests`, made once and shared by its rules."""
    return ctx.shared("tests", FileTests)
