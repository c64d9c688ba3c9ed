"""Is this code gated? The one answer every rule asks: on which platforms a node can run.

:class:`FilePlatforms` reads the conditions around a LibCST node of the file being checked
(``if``/``elif``/``else``, ``while``, conditional expressions, ``and``/``or``, and, earlier in
a block around it, ``assert <test>`` and ``if <test>:`` whose body leaves) up to its function,
each read as a platform test by ``platforms.classify`` on CPython's tree of the condition's own
code: one classifier for both trees, which knows torch's tests, the porting projects'
conventions and the project's own predicates (through the project index). ``where(node)`` is
the set of platforms (``platforms.CUDA``, ``ROCM``, ``CPU``, ``OTHER``) it can run on:
``{ROCM}`` under ``if torch.version.hip:``, everything but ROCm in its ``else``, every one
under ``if torch.cuda.is_available():``, which lets ROCm through. Facts, never findings.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, Iterator, Optional, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider

from .platforms import (
    NVIDIA_ONLY_IMPORTS,
    EVERY,
    IS_ROCM,
    ROCM,
    UNKNOWN,
    Env,
    Test,
    attribute_tests,
    classify,
    cuda_only_package,
    module_env,
    module_tests,
    nvidia_feature_word,
    skips_on_rocm,
)
from .syntax import dotted_name as _dotted


class FilePlatforms:
    """The platform questions of one file, on LibCST's tree (one per file: ``of(ctx)``).

    ``ctx`` is a rule's context: its module (LibCST), the prefilter's ``facts`` (CPython's tree
    of the same text), the project index, the parents of nodes (``metadata``) and the gate
    name; a test is read on CPython's tree of the condition's own code, so there is one
    classifier for both trees."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._tests: Dict[int, Test] = {}
        self._skips: Dict[int, FrozenSet[str]] = {}
        self._marks: Optional[FrozenSet[str]] = None
        self._module_import: Optional[str] = None
        self._module_why = "which has no ROCm build"
        self._chain: Optional[str] = None  # the project module whose import fails on ROCm ("" none)
        self._imported: Optional[FrozenSet[str]] = None  # where the project imports this module
        self._before: Dict[int, tuple] = {}  # block -> (block, {statement: platforms after those before it}, all)
        tree = getattr(ctx.facts, "tree", None) if ctx.facts is not None else None
        if tree is None:
            try:
                tree = ast.parse(ctx.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = ast.Module(body=[], type_ignores=[])
        self.env = module_env(tree, ctx.index, ctx.path)
        gate = (ctx.gate_name or "").partition("(")[0]
        if gate:
            self.env.tests.setdefault(gate, IS_ROCM)
        module_tests(tree.body, self.env)
        self._tree = tree  # the flags a class keeps on self are read when a test first reads one

    def _self_flags(self) -> None:
        if self._tree is not None:
            tree, self._tree = self._tree, None
            attribute_tests(tree, self.env)

    def release(self) -> None:
        self.ctx = None
        self._tree = None
        self._tests.clear()
        self._before.clear()
        self._skips.clear()

    def test(self, expr) -> Test:
        """The test a LibCST expression is, as a condition."""
        key = id(expr)
        found = self._tests.get(key)
        if found is None:
            found = UNKNOWN
            try:
                code = self.ctx.module.code_for_node(expr)
                if "self." in code:
                    self._self_flags()
                found = classify(ast.parse(f"(\n{code}\n)", mode="eval").body, self.env)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pass
            self._tests[key] = found
        return found

    def decided(self, expr) -> bool:
        """Is every operand of the ``and`` / ``or`` / ``not`` that ``expr`` is a test this
        analysis reads? (``torch.cuda.is_available() and find_spec("mylib")`` is not: its
        unknown part may be what keeps ROCm out.)"""
        test = self.test(expr)
        return test.known and test.decided

    def where(self, node) -> FrozenSet[str]:
        """The platforms ``node`` can run on, from the conditions around it: the branches of
        ``if``/``elif``/``else``, ``while``, conditional expressions, ``and``/``or``, and,
        earlier in a block around it, ``assert <test>`` and ``if <test>:`` whose body leaves
        (``return``, ``raise``, ``continue``, ``break``). Through functions and classes too: a
        definition under ``if torch.version.hip:`` exists on ROCm only."""
        platforms = EVERY
        for _, arm in self.conditions(node, exits=True):
            platforms &= arm
        return platforms

    def conditions(self, node, exits: bool = False) -> Iterator[Tuple[object, FrozenSet[str]]]:
        """The conditions around ``node``, innermost first: (the LibCST test expression, the
        platforms on which the side of it that holds ``node`` is taken) for each ``if`` /
        ``elif`` / ``else`` arm, ``while`` body, conditional expression and ``and`` / ``or``
        operand; with ``exits``, also the skip decorators of a definition around it, and the
        earlier ``assert``s and ``if``s that leave a block (the block, and the platforms that
        get past all of them: one table per block, as a module of 300,000 statements asked for
        each of hundreds of fixes was quadratic)."""
        parents = self.ctx.metadata(ParentNodeProvider)
        child = node
        current = parents.get(node)
        while current is not None:
            if isinstance(current, (cst.If, cst.While)):
                if child is current.body:
                    yield current.test, self.test(current.test).true
                elif child is getattr(current, "orelse", None):
                    yield current.test, self.test(current.test).false
            elif isinstance(current, cst.IfExp):
                if child is current.body:
                    yield current.test, self.test(current.test).true
                elif child is current.orelse:
                    yield current.test, self.test(current.test).false
            elif isinstance(current, cst.BooleanOperation) and child is current.right:
                left = self.test(current.left)
                yield current.left, (left.true if isinstance(current.operator, cst.And) else left.false)
            elif exits and isinstance(current, (cst.FunctionDef, cst.ClassDef)) and child is current.body:
                runs_on = self._runs_on(current)
                if runs_on != EVERY:
                    yield current, runs_on
            elif exits and isinstance(current, (cst.IndentedBlock, cst.Module)):
                after = self._after_those_before(current, child)
                if after != EVERY:
                    yield current, after
                if isinstance(current, cst.Module) and self._module_marks() != EVERY:
                    yield current, self._module_marks()
            child, current = current, parents.get(current)

    def _runs_on(self, definition) -> FrozenSet[str]:
        """Where a test runs, by its skip decorators: ``@unittest.skipIf(<test>, ...)`` and
        ``@pytest.mark.skipif(<test>, ...)`` run where the test is false, ``skipUnless`` where
        it is true, ``@skipIfRocm`` (torch's, and spellings like it) everywhere but ROCm. A
        skip that depends on nothing known changes nothing; an unconditional skip is not a
        platform (``testing.FileTests.skipped``)."""
        key = id(definition)
        found = self._skips.get(key)
        if found is None:
            found = EVERY
            for decorator in definition.decorators:
                found &= self._skip_runs_on(decorator.decorator)
            self._skips[key] = found
        return found

    def _skip_runs_on(self, expr) -> FrozenSet[str]:
        call = expr if isinstance(expr, cst.Call) else None
        name = _dotted(call.func if call is not None else expr)
        if name is None:
            return EVERY
        last = name.rsplit(".", 1)[-1]
        if skips_on_rocm(last):
            return EVERY - {ROCM}
        if call is None or not call.args or call.args[0].keyword is not None or call.args[0].star:
            return EVERY
        lowered = last.lower()
        if lowered == "skipif":
            return self.test(call.args[0].value).false
        if lowered == "skipunless":
            return self.test(call.args[0].value).true
        return EVERY

    def _module_marks(self) -> FrozenSet[str]:
        """Where a test module's tests run, by its ``pytestmark`` (a skip mark, or a list)."""
        if self._marks is None:
            self._marks = EVERY
            for stmt in self.ctx.module.body:
                if not isinstance(stmt, cst.SimpleStatementLine):
                    continue
                for small in stmt.body:
                    if (isinstance(small, cst.Assign) and len(small.targets) == 1
                            and isinstance(small.targets[0].target, cst.Name)
                            and small.targets[0].target.value == "pytestmark"):
                        value = small.value
                        marks = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) \
                            else [value]
                        for mark in marks:
                            self._marks &= self._skip_runs_on(mark)
        return self._marks

    def nvidia_only(self, node, names: bool = True) -> Optional[str]:
        """Why the code around ``node`` is for NVIDIA GPUs only, or None: a function or class
        around it named for an NVIDIA-only feature (``platforms.nvidia_feature_word``:
        ``fp8_gemm_sm90``, ``HopperAttention``, ``nvfp4_quantize``), or a module that imports a
        package with no ROCm build unconditionally at module level (it cannot load on ROCm, so
        none of its code runs there), or an earlier ``try: import deep_gemm`` / ``importorskip``
        of such a package in a block around it. ``names=False`` leaves out the names (for the
        test that decides whether NVIDIA-only code runs, ``def supports_tma(): ...``)."""
        parents = self.ctx.metadata(ParentNodeProvider)
        child, current = node, parents.get(node)
        while current is not None:
            if names and isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                word = nvidia_feature_word(current.name.value)
                if word is not None:
                    return f"`{current.name.value}` is for NVIDIA GPUs only ({word})"
            elif isinstance(current, cst.IndentedBlock):
                for stmt in current.body:
                    if stmt is child:
                        break
                    package = _requires_cuda_only_package(stmt)
                    if package is not None:
                        return f"it runs only after `{package}`, which has no ROCm build, was imported"
            child, current = current, parents.get(current)
        if self._module_import is None:
            self._module_import = ""
            index = getattr(self.ctx.facts, "index", None) if self.ctx.facts is not None else None
            for stmt in self.ctx.module.body:
                if not isinstance(stmt, cst.SimpleStatementLine):
                    continue
                for small in stmt.body:
                    names = []
                    if isinstance(small, cst.Import):
                        names = [_dotted(alias.name) for alias in small.names]
                    elif isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
                        names = [_dotted(small.module)]
                    for name in names:
                        if self._module_import:
                            break
                        if _no_rocm_build(name):
                            self._module_import = name
                        elif isinstance(small, cst.Import) and _nvidia_extension(index, name):
                            self._module_import = name
                            self._module_why = ("a compiled extension of the project built for an NVIDIA"
                                                " architecture (no Python source)")
        if self._module_import:
            return (f"the module imports `{self._module_import}`, {self._module_why}, so it does not load on"
                    " ROCm")
        return self._cuda_only_module()

    def imported_on(self) -> FrozenSet[str]:
        """The platforms on which the project's modules import this one
        (``ProjectIndex.imported_on``: only under ``if SYSTEM == "rocm":``, say); every
        platform without the index, or where nothing imports it."""
        if self._imported is None:
            index = self.ctx.index
            own = index.module_name(self.ctx.path) if index is not None and self.ctx.path else None
            self._imported = index.imported_on(own, path=self.ctx.path) if own else EVERY
        return self._imported

    def _cuda_only_module(self) -> Optional[str]:
        """With the project index: the module is NVIDIA's by name and its import runs CUDA-only
        code through a project module it imports (``ops/fused_ce_sm90.py`` importing the CuTe
        kernels of ``ops/_fused_ce_backward_sm90.py``): it does not load on ROCm either."""
        if self._chain is None:
            self._chain = ""
            index = getattr(self.ctx.facts, "index", None) if self.ctx.facts is not None else None
            own = index.module_name(self.ctx.path) if index is not None and self.ctx.path else None
            chain = index.cuda_chain(own) if own is not None else None
            if chain and len(chain) > 1:
                self._chain = chain[-1][0]
        if self._chain:
            return f"the module's import runs CUDA-only code (in `{self._chain}`), so it does not load on ROCm"
        return None

    def _after_those_before(self, block, child) -> FrozenSet[str]:
        """The platforms on which the statements of ``block`` before ``child`` let it run,
        computed once per block (a module of 300,000 statements asked for each of hundreds
        of fixes was quadratic: issue 31)."""
        found = self._before.get(id(block))
        if found is None:
            table, platforms = {}, EVERY
            for stmt in block.body:
                table[id(stmt)] = platforms
                platforms = platforms & self._after(stmt)
            found = self._before[id(block)] = (block, table, platforms)
        return found[1].get(id(child), found[2])

    def _after(self, stmt) -> FrozenSet[str]:
        """The platforms on which code after ``stmt`` in its block runs (``stmt`` may leave)."""
        if isinstance(stmt, cst.If) and stmt.orelse is None and _leaves(stmt.body):
            return self.test(stmt.test).false
        if isinstance(stmt, cst.SimpleStatementLine):
            out = EVERY
            for small in stmt.body:
                if isinstance(small, cst.Assert):
                    out &= self.test(small.test).true
            return out
        return EVERY


# A part of a module name that names an NVIDIA architecture: sm70 to sm120 (`_qattn_sm89`,
# `sm_90a`), Hopper, Blackwell
_NVIDIA_ARCH_PART = re.compile(r"(?i)(?:^|_)(?:sm_?(?:[7-9]\d|1[0-2]\d)a?|hopper|blackwell)(?:_|$)")


def _nvidia_extension(index, module: Optional[str]) -> bool:
    """``import pkg._qattn_sm89``: a module (``import`` names only modules) of one of the
    project's own packages that no linted file is (a compiled extension) and that a part below
    the package names for an NVIDIA architecture. Built for those GPUs only, it is not there on
    ROCm. Without the project index (or where the package is not linted): False."""
    if index is None or not module or "." not in module:
        return False
    top, _, rest = module.partition(".")
    if not index.defines_module(top) or index.defines_module(module):
        return False
    return any(_NVIDIA_ARCH_PART.search(part) for part in rest.split("."))


def _no_rocm_build(module: Optional[str]) -> bool:
    """A module of a package with no ROCm build (``deep_gemm``, ``cutlass.cute``, ``cuda.bindings``)."""
    if not module:
        return False
    return cuda_only_package(module) is not None or module.split(".", 1)[0] in NVIDIA_ONLY_IMPORTS


def _requires_cuda_only_package(stmt) -> Optional[str]:
    """The CUDA-only package a statement requires before the code after it runs: ``try: import
    deep_gemm`` whose every handler leaves, or ``pytest.importorskip("flash_mla")``."""
    if isinstance(stmt, cst.Try):
        if not stmt.handlers or not all(_leaves(h.body) for h in stmt.handlers):
            return None
        for small in (s for line in stmt.body.body if isinstance(line, cst.SimpleStatementLine) for s in line.body):
            names = []
            if isinstance(small, cst.Import):
                names = [_dotted(alias.name) for alias in small.names]
            elif isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
                names = [_dotted(small.module)]
            for name in names:
                if _no_rocm_build(name):
                    return name
        return None
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
            if isinstance(value, cst.Call) and (_dotted(value.func) or "").endswith("importorskip") and value.args \
                    and isinstance(value.args[0].value, cst.SimpleString):
                name = value.args[0].value.evaluated_value
                if isinstance(name, str) and _no_rocm_build(name):
                    return name
    return None


# Calls that never return: a test skipped or failed there, or the process ended.
_LEAVING_CALLS = frozenset({"skipTest", "pytest.skip", "pytest.xfail", "pytest.fail", "pytest.exit", "sys.exit",
                            "os._exit", "exit", "quit", "unittest.SkipTest"})


def _leaves(block) -> bool:
    body = getattr(block, "body", ())
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        for small in last.body:
            if isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
                return True
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                name = _dotted(small.value.func) or ""
                if name in _LEAVING_CALLS or name.endswith(".skipTest"):
                    return True
        return False
    # ``if t: return`` on one line: the block is the small statements themselves
    return isinstance(block, cst.SimpleStatementSuite) and isinstance(last, (cst.Return, cst.Raise, cst.Continue,
                                                                            cst.Break))


def of(ctx) -> FilePlatforms:
    """The file's :class:`FilePlatforms`, made once and shared by its rules."""
    return ctx.shared("platforms", FilePlatforms)
