"""The metadata of one parsed file: parents and positions computed on demand, in place of
LibCST's ``MetadataWrapper`` (see :class:`Metadata`).
"""

from __future__ import annotations

import collections
import contextlib
from typing import Any, Collection, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, ParentNodeProvider, PositionProvider

from . import walk as _walk
from .libcst_internals import NEWLINE_RE, CodegenState, PositionProvidingCodegenState
from .opaque import Opaque

# What the metadata of a file cost: whole-module resolutions by provider ("resolve:Name"),
# LibCST parses ("parse", counted by the engine), statements whose positions were generated
# ("positions:statement"). tests/test_bigfile.py counts them, so a return to whole-module work
# per fix pass fails a test rather than only a benchmark.
STATS: "collections.Counter[str]" = collections.Counter()


class Metadata:
    """The metadata of one parsed file, in place of LibCST's ``MetadataWrapper``, with the
    same ``resolve(provider)``. Parents and positions, which nearly every rule asks for, are
    not resolved for the whole module (on a large file that is most of the run's time and
    memory):

    - parents are recorded while the engine's one batched visit walks the tree (``enter`` /
      ``leave``), so a rule asks a dictionary for the parent of any node visited so far
      (the visit passes whitespace leaves by: their parents, which no rule asks for, come
      from LibCST's whole-module resolution);
    - positions are generated for one top-level statement at a time, the one that holds the
      node asked for, from the line where the statements before it end: read from CPython's
      tree of the same text where the engine hands it over (``tree``; each statement's first
      line less the comment and blank lines LibCST gives it), else counted once, without
      positions. The lines read from the tree are checked where they can be: the statements
      pair up by kind, the first starts after the module's header, and each statement whose
      positions are generated ends where the next begins (or the text ends); on any
      disagreement the lines are counted instead.

    Both give exactly what ``ParentNodeProvider`` and ``PositionProvider`` give (LibCST's
    own code generation does the work); anything else (a node outside the module's body, a
    node not visited yet, another provider) falls back to LibCST's whole-module resolution.
    """

    def __init__(self, module: cst.Module, tree: Optional[Any] = None, text: Optional[str] = None):
        self.module = module
        self.text = text
        self._tree = _Tree(module, text)
        self._stack = self._tree.stack
        self.parents = _Parents(self._tree)
        self.positions = _Positions(self._tree, self.parents)
        if tree is not None:  # CPython's tree of the same text (ast.Module): read now, not kept
            self.positions.read_lines(tree)

    # -- the engine's batched visit records parents ----------------------------------------
    def enter(self, node: cst.CSTNode) -> None:
        stack = self._stack
        if stack:
            self.parents.known[node] = stack[-1]
        stack.append(node)

    def leave(self, node: cst.CSTNode) -> None:
        self._stack.pop()
        if not self._stack:
            self._tree.walked = True

    def walk(self) -> None:
        """Record every parent without rules (for code that did not visit the tree)."""
        if not self._tree.walked:
            self.parents.known.clear()
            self._stack.clear()
            _walk.visit_batched(self.module, [], before_visit=self.enter, after_leave=self.leave,
                                skip_whitespace=True)

    # -- MetadataWrapper's interface ---------------------------------------------------------
    def resolve(self, provider) -> Any:
        if provider is ParentNodeProvider:
            return self.parents
        if provider is PositionProvider:
            return self.positions
        return self.full(provider)

    def statements_at(self, row: int) -> List[cst.BaseStatement]:
        """The top-level statements whose code may hold line ``row``: the one whose lines
        (with the comments and blank lines before it) hold it, and one each side."""
        body = self.module.body
        at = 0
        while at < len(body) and self.positions._start(at + 1)[0] <= row:
            at += 1
        return list(body[max(0, at - 1):at + 2])

    def full(self, provider) -> Any:
        """LibCST's resolution of ``provider`` for the whole module (counted)."""
        return self._tree.full(provider)


class _Tree:
    """What a :class:`Metadata` and its two mappings share. They hold this, not the
    ``Metadata``: no cycle, so the file's trees are freed with the last reference to any of
    them, not by the cyclic collector."""

    __slots__ = ("module", "text", "wrapper", "stack", "walked")

    def __init__(self, module: cst.Module, text: Optional[str]):
        self.module = module
        self.text = text
        self.wrapper: Optional[cst.MetadataWrapper] = None
        self.stack: List[cst.CSTNode] = []  # the path of the engine's visit
        self.walked = False  # the batched visit has seen every node

    def full(self, provider) -> Any:
        if self.wrapper is None:
            self.wrapper = cst.MetadataWrapper(self.module, unsafe_skip_copy=True)
        if provider not in self.wrapper._metadata:
            STATS["resolve:" + provider.__name__] += 1
        return self.wrapper.resolve(provider)


class _Parents:
    """ParentNodeProvider's mapping, filled by the engine's visit (see :class:`Metadata`)."""

    def __init__(self, state: _Tree):
        self.state = state
        self.known: Dict[cst.CSTNode, cst.CSTNode] = {}
        self._ahead: Set[int] = set()  # nodes of the visit's path whose subtrees were recorded

    def _lookup(self, node: cst.CSTNode):
        found = self.known.get(node, _UNSET)
        if found is not _UNSET or node is self.state.module:
            return found
        if type(node) in _walk.WHITESPACE_LEAVES:  # the visit passes these by: LibCST's answer
            return self.state.full(ParentNodeProvider).get(node, _UNSET)
        if self.state.walked:
            return found
        # A node the visit has not reached yet (a rule looks ahead, usually into the node
        # it visits): record the subtree of the nodes on the visit's path, innermost first,
        # until one holds it (the last is the module: all of it).
        for top in reversed(self.state.stack or [self.state.module]):
            if id(top) in self._ahead:
                continue
            self._ahead.add(id(top))
            self._record(top)
            found = self.known.get(node, _UNSET)
            if found is not _UNSET:
                return found
        return found

    def _record(self, top: cst.CSTNode) -> None:
        STATS["parents:subtree"] += 1
        stack: List[cst.CSTNode] = []
        known = self.known

        def enter(node: cst.CSTNode) -> None:
            if stack:
                known[node] = stack[-1]
            stack.append(node)

        _walk.visit_batched(top, [], before_visit=enter, after_leave=lambda node: stack.pop(), skip_whitespace=True)

    def __getitem__(self, node: cst.CSTNode) -> cst.CSTNode:
        found = self._lookup(node)
        if found is _UNSET:
            raise KeyError(node)
        return found

    def get(self, node: cst.CSTNode, default=None):
        found = self._lookup(node)
        return default if found is _UNSET else found

    def __contains__(self, node: object) -> bool:
        return self._lookup(node) is not _UNSET  # type: ignore[arg-type]


_COMPOUND_KINDS = {"If": "If", "For": "For", "AsyncFor": "For", "While": "While", "With": "With",
                   "AsyncWith": "With", "Try": "Try", "TryStar": "TryStar", "FunctionDef": "FunctionDef",
                   "AsyncFunctionDef": "FunctionDef", "ClassDef": "ClassDef", "Match": "Match"}


def _statement_lines(module: cst.Module, tree: Optional[Any]) -> Optional[List[int]]:
    """The line where each top-level statement of ``module`` begins (its comment and blank
    lines included), from CPython's tree of the same text, or None where the two trees do not
    pair up (``a; b`` is one statement of LibCST's, several of CPython's)."""
    body = getattr(tree, "body", None)
    if body is None:
        return None
    paired = _pair(module.body, body)
    return None if paired is None else [line for line, _ in paired]


def _pair(statements: Sequence[cst.BaseStatement], body: Sequence[Any]) -> Optional[List[Tuple[int, Any]]]:
    """(the line where it begins, its first CPython statement) for each of ``statements``,
    LibCST's statements of a body whose CPython statements are ``body``; None where the two
    do not pair up."""
    groups: List[Tuple[int, str, Any]] = []  # (first line, kind, first statement)
    last_end = 0
    for stmt in body:
        kind = _COMPOUND_KINDS.get(type(stmt).__name__, "SimpleStatementLine")
        if kind == "SimpleStatementLine" and groups and groups[-1][1] == kind and stmt.lineno <= last_end:
            last_end = max(last_end, stmt.end_lineno or stmt.lineno)
            continue  # ``a; b``: one line of LibCST's
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        groups.append((first, kind, stmt))
        last_end = stmt.end_lineno or stmt.lineno
    if len(groups) != len(statements):
        return None
    out: List[Tuple[int, Any]] = []
    for (first, kind, first_stmt), stmt in zip(groups, statements):
        if (stmt.kind if type(stmt) is Opaque else type(stmt).__name__) != kind:
            return None
        lead = len(stmt.leading_lines)
        decorators = getattr(stmt, "decorators", ())
        if decorators:
            lead += len(decorators[0].leading_lines)
        line = first - lead
        if out and line <= out[-1][0]:
            return None
        out.append((line, first_stmt))
    return out


class _Computed:
    """What ``record_syntactic_position`` reads of its provider (the counter itself would be a
    cycle, holding the file's nodes until the collector runs)."""

    __slots__ = ("_computed",)

    def __init__(self, computed: Dict[cst.CSTNode, Any]):
        self._computed = computed


class _LineCounter(CodegenState):
    """Code generation that only follows the line and column, as PositionProvider's does,
    and records PositionProvider's range of a few ``targets`` (a statement, and the nodes its
    range is taken from) in ``computed``."""

    def __init__(self, module: cst.Module, line: int, column: int, targets: Collection[cst.CSTNode] = (),
                 computed: Optional[Dict[cst.CSTNode, Any]] = None):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line, self.column = line, column
        self.targets = {id(t) for t in targets}
        self._computed = computed if computed is not None else {}
        self._starts: List[CodePosition] = []
        self.provider = _Computed(self._computed)  # record_syntactic_position reads provider._computed

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            self._starts.append(CodePosition(self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            start = self._starts.pop()
            if node not in self._computed:
                self._computed[node] = CodeRange(start, CodePosition(self.line, self.column))

    def record_syntactic_position(self, node: cst.CSTNode, *, start_node=None, end_node=None):
        if id(node) in self.targets:
            # the range is taken from these (generated inside): record them too
            self.targets.update(id(n) for n in (start_node, end_node) if n is not None)
            return PositionProvidingCodegenState.record_syntactic_position(
                self, node, start_node=start_node, end_node=end_node)  # type: ignore[arg-type]
        return _NO_RECORD

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        if "\n" in value or "\r" in value:
            segments = NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)


_NO_RECORD = contextlib.nullcontext()


class _Positions:
    """PositionProvider's mapping, generated one top-level statement at a time."""

    def __init__(self, state: _Tree, parents: _Parents):
        self.state = state
        self.parents = parents
        self.computed: Dict[cst.CSTNode, Any] = {}  # the provider's ``_computed``
        self._index: Optional[Dict[int, int]] = None  # id(statement) -> its place in the body
        self._starts: List[Tuple[int, int]] = []  # (line, column) where statement i (or the footer) begins
        self._done: Set[int] = set()
        self._full = None
        self.statements: Dict[cst.CSTNode, Any] = {}  # top-level statements' ranges, found by _start

    def _statement_of(self, node: cst.CSTNode) -> Optional[int]:
        module = self.state.module
        if self._index is None:
            self._index = {id(stmt): i for i, stmt in enumerate(module.body)}
        parents = self.parents
        current = node
        while True:
            at = self._index.get(id(current))
            if at is not None and module.body[at] is current:
                return at
            current = parents.get(current)
            if current is None or current is module:
                return None

    def _start(self, at: int) -> Tuple[int, int]:
        module = self.state.module
        lines = self._lines()
        if lines is not None and at < len(lines):
            return lines[at], 0
        if not self._starts:
            counter = _LineCounter(module, 1, 0)
            for line in module.header:
                line._codegen(counter)
            self._starts.append((counter.line, counter.column))
        while len(self._starts) <= at:
            line, column = self._starts[-1]
            stmt = module.body[len(self._starts) - 1]
            counter = _LineCounter(module, line, column, (stmt,), {})
            stmt._codegen(counter)
            self.statements[stmt] = counter._computed[stmt]
            self._starts.append((counter.line, counter.column))
        return self._starts[at]

    def _generate(self, at: int) -> None:
        if at in self._done:
            return
        module = self.state.module
        line, column = self._start(at)
        state = PositionProvidingCodegenState(default_indent=module.default_indent,
                                              default_newline=module.default_newline, provider=self)
        state.line, state.column = line, column
        module.body[at]._codegen(state)
        if self._table and not self._ends_where_next_begins(at, state.line, state.column):
            STATS["positions:recounted"] += 1
            self._forget_table()
            return self._generate(at)
        self._done.add(at)
        STATS["positions:statement"] += 1

    def _own_range(self, at: int) -> None:
        """A top-level statement's own range, counting its lines from where the table says it
        begins (checked: it must end where the next begins)."""
        module = self.state.module
        stmt = module.body[at]
        counter = _LineCounter(module, self._table[at], 0, (stmt,), {})
        stmt._codegen(counter)
        if self._ends_where_next_begins(at, counter.line, counter.column):
            self.statements[stmt] = counter._computed[stmt]
        else:
            STATS["positions:recounted"] += 1
            self._forget_table()

    def _forget_table(self) -> None:
        """The lines read from CPython's tree disagree with LibCST's: count them instead."""
        self._table = None
        self.computed.clear()
        self.statements.clear()  # ranges from the table, and the counted ones below with them:
        self._starts.clear()  # _start() counts statements' ranges only where it adds a start
        self._done.clear()
        self._nested_done = None

    # -- the lines where statements begin, from CPython's tree --------------------------------
    _table: Optional[List[int]] = None
    _tree_body: Optional[List[Any]] = None  # CPython's statements of the module
    _firsts: Optional[List[Any]] = None  # the first of them for each top-level statement
    _nested_done: Optional[Set[int]] = None

    def _nested(self, at: int, node: cst.CSTNode) -> bool:
        """Generate the positions of the innermost statement around ``node`` that lies in the
        body of a function or class (of functions and classes, down from the top-level
        statement ``at``) and has a next statement: a method, not its whole class. It starts
        where CPython's tree says, with its blocks' indentation, and must end where the next
        statement begins (else nothing is kept). False when there is none, or it did not."""
        module = self.state.module
        if self._table is None or self._tree_body is None:
            return False
        if self._firsts is None:
            paired = _pair(module.body, self._tree_body)
            self._firsts = [] if paired is None else [first for _, first in paired]
        if at >= len(self._firsts):
            return False
        path: List[cst.CSTNode] = []  # from the top-level statement's child down to node
        top, current = module.body[at], node
        while current is not top:
            path.append(current)
            current = self.parents.get(current)
            if current is None:
                return False
        path.reverse()
        stmt, ast_stmt, indents, depth = top, self._firsts[at], [], 0
        chosen = None
        while (isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and depth + 1 < len(path)
               and path[depth] is stmt.body and isinstance(stmt.body, cst.IndentedBlock)):
            block, child = stmt.body, path[depth + 1]
            ast_body = getattr(ast_stmt, "body", None)
            paired = _pair(block.body, ast_body) if isinstance(ast_body, list) else None
            index = next((i for i, s in enumerate(block.body) if s is child), None)
            if paired is None or index is None:
                break
            indents = indents + [module.default_indent if block.indent is None else block.indent]
            if index + 1 < len(block.body):
                chosen = (child, paired[index][0], paired[index + 1][0], indents)
            stmt, ast_stmt, depth = child, paired[index][1], depth + 2
        if chosen is None:
            return False
        stmt, start, end, indents = chosen
        if self._nested_done is None:
            self._nested_done = set()
        if id(stmt) in self._nested_done:
            return True
        computed: Dict[cst.CSTNode, Any] = {}
        state = PositionProvidingCodegenState(default_indent=module.default_indent,
                                              default_newline=module.default_newline, provider=_Computed(computed))
        state.line, state.column = start, 0
        state.indent_tokens = list(indents)
        stmt._codegen(state)
        if (state.line, state.column) != (end, 0):
            STATS["positions:nested recounted"] += 1
            return False
        self.computed.update(computed)
        self._nested_done.add(id(stmt))
        STATS["positions:nested"] += 1
        return True

    def read_lines(self, tree: Any) -> None:
        """Where each statement begins, from CPython's tree of the same text."""
        self._tree_body = getattr(tree, "body", None)
        self._table = _statement_lines(self.state.module, tree)
        if self._table:
            counter = _LineCounter(self.state.module, 1, 0)
            for line in self.state.module.header:
                line._codegen(counter)
            if (counter.line, counter.column) != (self._table[0], 0):
                self._table = None

    def _lines(self) -> Optional[List[int]]:
        return self._table

    def _ends_where_next_begins(self, at: int, line: int, column: int) -> bool:
        table = self._table
        if at + 1 < len(table):
            return (line, column) == (table[at + 1], 0)
        text = self.state.text
        if text is None:
            return False
        footer = _LineCounter(self.state.module, line, column)
        for empty in self.state.module.footer:
            empty._codegen(footer)
        ends = NEWLINE_RE.split(text)
        if not self.state.module.has_trailing_newline:  # the code generated ends with one newline more
            return (footer.line, footer.column) == (len(ends) + 1, 0)
        return (footer.line, footer.column) == (len(ends), len(ends[-1]))

    # the provider's interface, for PositionProvidingCodegenState
    @property
    def _computed(self) -> Dict[cst.CSTNode, Any]:
        return self.computed

    def _lookup(self, node: cst.CSTNode):
        found = self.computed.get(node, _UNSET)
        if found is not _UNSET:
            return found
        if self._full is None:
            at = self._statement_of(node)
            if at is not None and node is self.state.module.body[at]:
                if node not in self.statements and self._lines() is not None:
                    self._own_range(at)  # from where the table says it begins
                if node not in self.statements:
                    self._start(at + 1)  # a statement's own range: counted with the lines
                return self.statements[node]
            if at is not None:
                if at not in self._done and not self._nested(at, node):
                    self._generate(at)
                return self.computed.get(node, _UNSET)
            self._full = self.state.full(PositionProvider)  # the module, its header or footer
        return self._full.get(node, _UNSET)

    def __getitem__(self, node: cst.CSTNode):
        found = self._lookup(node)
        if found is _UNSET:
            raise KeyError(node)
        return found

    def get(self, node: cst.CSTNode, default=None):
        found = self._lookup(node)
        return default if found is _UNSET else found

    def __contains__(self, node: object) -> bool:
        return self._lookup(node) is not _UNSET  # type: ignore[arg-type]


_UNSET = object()
