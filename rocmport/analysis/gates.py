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
from typing import Dict, FrozenSet, Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider

from .bindings import module_imports
from .platforms import (
    CUDA_ONLY_PACKAGES,
    EVERY,
    IS_ROCM,
    UNKNOWN,
    Env,
    Test,
    classify,
    module_tests,
    nvidia_feature_word,
)


class FilePlatforms:
    """The platform questions of one file, on LibCST's tree (one per file: ``of(ctx)``).

    ``ctx`` is a rule's context: its module (LibCST), the prefilter's ``facts`` (CPython's tree
    of the same text), the project index, the parents of nodes (``metadata``) and the gate
    name; a test is read on CPython's tree of the condition's own code, so there is one
    classifier for both trees."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._tests: Dict[int, Test] = {}
        self._module_import: Optional[str] = None
        self._before: Dict[int, tuple] = {}  # block -> (block, {statement: platforms after those before it}, all)
        tree = getattr(ctx.facts, "tree", None) if ctx.facts is not None else None
        if tree is None:
            try:
                tree = ast.parse(ctx.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = ast.Module(body=[], type_ignores=[])
        index = ctx.index
        module_name = index.module_name(ctx.path) if index is not None else None

        def absolute(module, level):
            return index.absolute(module_name, module, level) if index is not None and module_name else None

        self.env = Env(module_imports(tree.body, absolute), {}, index.platform_test if index is not None else None)
        gate = (ctx.gate_name or "").partition("(")[0]
        if gate:
            self.env.tests.setdefault(gate, IS_ROCM)
        module_tests(tree.body, self.env)

    def release(self) -> None:
        self.ctx = None
        self._tests.clear()
        self._before.clear()

    def test(self, expr) -> Test:
        """The test a LibCST expression is, as a condition."""
        key = id(expr)
        found = self._tests.get(key)
        if found is None:
            found = UNKNOWN
            try:
                code = self.ctx.module.code_for_node(expr)
                found = classify(ast.parse(f"(\n{code}\n)", mode="eval").body, self.env)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pass
            self._tests[key] = found
        return found

    def where(self, node) -> FrozenSet[str]:
        """The platforms ``node`` can run on, from the conditions around it: the branches of
        ``if``/``elif``/``else``, ``while``, conditional expressions, ``and``/``or``, and,
        earlier in a block around it, ``assert <test>`` and ``if <test>:`` whose body leaves
        (``return``, ``raise``, ``continue``, ``break``). Through functions and classes too: a
        definition under ``if torch.version.hip:`` exists on ROCm only."""
        parents = self.ctx.metadata(ParentNodeProvider)
        platforms = EVERY
        child = node
        current = parents.get(node)
        while current is not None:
            if isinstance(current, (cst.If, cst.While)):
                if child is current.body:
                    platforms &= self.test(current.test).true
                elif child is getattr(current, "orelse", None):
                    platforms &= self.test(current.test).false
            elif isinstance(current, cst.IfExp):
                if child is current.body:
                    platforms &= self.test(current.test).true
                elif child is current.orelse:
                    platforms &= self.test(current.test).false
            elif isinstance(current, cst.BooleanOperation) and child is current.right:
                left = self.test(current.left)
                platforms &= left.true if isinstance(current.operator, cst.And) else left.false
            elif isinstance(current, (cst.IndentedBlock, cst.Module)):
                platforms &= self._after_those_before(current, child)
            child, current = current, parents.get(current)
        return platforms

    def nvidia_only(self, node) -> Optional[str]:
        """Why the code around ``node`` is for NVIDIA GPUs only, or None: a function or class
        around it named for an NVIDIA-only feature (``platforms.nvidia_feature_word``:
        ``fp8_gemm_sm90``, ``HopperAttention``, ``nvfp4_quantize``), or a module that imports a
        package with no ROCm build unconditionally at module level (it cannot load on ROCm, so
        none of its code runs there)."""
        parents = self.ctx.metadata(ParentNodeProvider)
        current = parents.get(node)
        while current is not None:
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                word = nvidia_feature_word(current.name.value)
                if word is not None:
                    return f"`{current.name.value}` is for NVIDIA GPUs only ({word})"
            current = parents.get(current)
        if self._module_import is None:
            self._module_import = ""
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
                        if name and name.split(".", 1)[0] in CUDA_ONLY_PACKAGES and not self._module_import:
                            self._module_import = name
        if self._module_import:
            return f"the module imports `{self._module_import}`, which has no ROCm build, so it does not load on ROCm"
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


def _dotted(node) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def _leaves(block) -> bool:
    body = getattr(block, "body", ())
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for small in last.body)
    return False


def of(ctx) -> FilePlatforms:
    """The file's :class:`FilePlatforms`, made once and shared by its rules."""
    return ctx.shared("platforms", FilePlatforms)
