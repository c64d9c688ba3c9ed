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
from typing import Dict, FrozenSet, Iterator, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider

from .bindings import module_imports
from .platforms import EVERY, IS_ROCM, UNKNOWN, Env, Test, attribute_tests, classify, module_tests


class FilePlatforms:
    """The platform questions of one file, on LibCST's tree (one per file: ``of(ctx)``).

    ``ctx`` is a rule's context: its module (LibCST), the prefilter's ``facts`` (CPython's tree
    of the same text), the project index, the parents of nodes (``metadata``) and the gate
    name; a test is read on CPython's tree of the condition's own code, so there is one
    classifier for both trees."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self._tests: Dict[int, Test] = {}
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
        self._tree = tree  # the flags a class keeps on self are read when a test first reads one

    def _self_flags(self) -> None:
        if self._tree is not None:
            tree, self._tree = self._tree, None
            attribute_tests(tree, self.env)

    def release(self) -> None:
        self.ctx = None
        self._tree = None
        self._tests.clear()

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
        analysis reads? (``torch.cuda.is_available() and find_spec("cutlass")`` is not: its
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
        operand; with ``exits``, also the earlier ``assert``s and ``if``s that leave the block
        (their statement's test, and the platforms that get past them)."""
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
            elif exits and isinstance(current, (cst.IndentedBlock, cst.Module)):
                for stmt in current.body:
                    if stmt is child:
                        break
                    after = self._after(stmt)
                    if after != EVERY:
                        yield stmt, after
            child, current = current, parents.get(current)

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
