"""The rule framework: every rocmport rule is a LibCST ``BatchableCSTVisitor``.

The engine parses a file once, wraps it in one ``MetadataWrapper`` (so each metadata
provider runs once for the file) and visits the tree once with every enabled rule batched
together, as Fixit does. A rule reports findings through its :class:`RuleContext`; it knows
nothing of the command line, output formats or the prelude text: a fix only names the
prelude parts its replacement text relies on (``requires``).

Each rule documents itself in class attributes (``rocmport rule CODE`` prints them) and
carries Fixit-style ``VALID`` / ``INVALID`` cases that the test-suite runs.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Collection, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange
from libcst.metadata import (ParentNodeProvider, PositionProvider, QualifiedName, QualifiedNameProvider,
                             QualifiedNameSource)
from libcst.metadata.base_provider import LazyValue
from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState

from rocmport.findings import Applicability, Edit, Finding, Fix

from . import _walk
from ._opaque import Opaque

if TYPE_CHECKING:  # pragma: no cover
    from rocmport.source import LineIndex

    from ._index import ProjectIndex
    from ._prescan import Facts


@dataclass(frozen=True)
class Case:
    """A Fixit-style example: ``code`` and, for invalid cases, the fixed result.

    ``code`` and ``expected`` are dedented, and a first empty line dropped, so a case may be
    written as an indented triple-quoted block inside the class, as the docs are.
    For an invalid case, ``line`` and ``column`` (1-based, as rocmport prints them) and
    ``message``, where given, are those of the rule's first finding.
    """

    code: str
    expected: Optional[str] = None  # fixed output (None: no fix, or display-only)
    codes: Tuple[str, ...] = ()  # codes expected (defaults to the rule's own)
    line: Optional[int] = None
    column: Optional[int] = None
    message: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", _case_text(self.code))
        if self.expected is not None:
            object.__setattr__(self, "expected", _case_text(self.expected))


def _case_text(text: str) -> str:
    import textwrap

    text = textwrap.dedent(text)
    return text[1:] if text.startswith("\n") else text


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
        self.statements.clear()
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


@dataclass
class RuleOptions:
    """What a rule may know of the configuration: nothing about the CLI."""

    unsafe_fixes: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)


class RuleContext:
    """Per-file state shared by every rule: source text, positions, names, the gate."""

    def __init__(self, *, path: str, text: str, module: cst.Module, wrapper: "Metadata",
                 lines: "LineIndex", gate_name: str, options: RuleOptions, facts: "Optional[Facts]" = None,
                 index: "Optional[ProjectIndex]" = None):
        self.path = path
        self.index = index  # the project index (rocmport.codemods._index), None for a file linted alone
        self.facts = facts  # CPython's view of the file's imports (None when it does not parse)
        self.scopes: Any = None  # the engine's _resolve.ScopeBindings: where a name read is bound
        self.text = text
        self.module = module
        self.wrapper = wrapper
        self.lines = lines
        self.gate_name = gate_name
        self.quote = '"'  # the quote the repository's formatter wants in generated strings
        self.options = options
        self.findings: List[Finding] = []
        self.span_errors: List[str] = []
        self._cache: Dict[str, Any] = {}

    # -- metadata, resolved lazily --------------------------------------------------------
    def metadata(self, provider) -> Any:
        """The mapping of a LibCST metadata provider for this file, computed on first use
        and then shared by every rule. Most files never need one: positions are computed
        only when something is reported (for its top-level statement), qualified names only
        when a rule has a candidate; parents are recorded by the engine's visit (``Metadata``)."""
        return self.wrapper.resolve(provider)

    def qualified_names(self, node: cst.CSTNode) -> Collection[QualifiedName]:
        """QualifiedNameProvider's answer for ``node``. When the node's root name is bound
        only by absolute imports at module level (or by nothing), the answer follows from
        the import table alone and the provider (a scope analysis of the whole file, the
        dearest metadata) is not run; otherwise it is asked. A test compares both on every
        node of a corpus."""
        if self.facts is not None and PREFILTER["enabled"]:
            fast = _import_names(node, self.facts, self.scopes)
            if fast is not None:
                return fast
        value = self.metadata(QualifiedNameProvider).get(node, ())
        return (value() if isinstance(value, LazyValue) else value) or ()

    def position(self, node: cst.CSTNode):
        return self.metadata(PositionProvider)[node]

    def may_resolve(self, node: cst.CSTNode, names) -> bool:
        """Cheap, conservative gate before asking QualifiedNameProvider: can ``node`` resolve
        to one of the qualified ``names``? With the file's imports known (``facts``): only if
        its root name is bound by an import that makes it one of them (see ``_prescan``).
        Otherwise: not if its last part is none of theirs, nor if a dotted chain starts with a
        name that is none of their parts (``re.compile`` cannot be ``torch.compile``) --
        unless the name is bound with ``as`` (an alias could hide it)."""
        if not PREFILTER["enabled"]:
            return True
        if self.facts is not None:
            return not _possible_names(node, self.facts).isdisjoint(names)
        lasts, parts = _name_parts(frozenset(names))
        aliases = self.import_aliases()
        if isinstance(node, cst.Name):
            return node.value in lasts or node.value in aliases
        if not isinstance(node, cst.Attribute):
            return True
        if node.attr.value not in lasts and node.attr.value not in aliases:
            return False
        root = node.value
        while isinstance(root, cst.Attribute):
            root = root.value
        return not isinstance(root, cst.Name) or root.value in parts or root.value in aliases

    def import_aliases(self):
        """Every name bound with ``as`` (a superset of import aliases), computed once."""
        return self.shared("import_aliases", lambda ctx: frozenset(_AS_NAME.findall(ctx.text)))

    # -- shared, computed-once analyses -------------------------------------------------
    def shared(self, key: str, factory):
        """Compute ``factory(self)`` once per file and share it between rules."""
        if key not in self._cache:
            self._cache[key] = factory(self)
        return self._cache[key]

    def release(self) -> None:
        """Drop the shared analyses once the rules are done: they hold this context (and
        may hold cycles of their own, which each one's ``release`` breaks), a cycle that
        would keep the file's trees until the cyclic collector runs."""
        for value in self._cache.values():
            release = getattr(value, "release", None)
            if callable(release):
                release()
        self._cache.clear()
        # the trees too: a visitor class defined in a rule's call is a cycle that may hold
        # the rule, and the rule holds this context
        self.module = self.wrapper = self.facts = self.scopes = None  # type: ignore[assignment]

    # -- positions and edits ------------------------------------------------------------
    def span(self, node: cst.CSTNode) -> Tuple[int, int]:
        """Offsets of ``node`` in the original text, checked against the node's code."""
        rng = self.metadata(PositionProvider)[node]
        start = self.lines.offset(rng.start.line, rng.start.column + self._dropped(rng.start.line))
        end = self.lines.offset(rng.end.line, rng.end.column + self._dropped(rng.end.line))
        return self._verified(node, start, end, rng.start.line)

    def _dropped(self, row: int) -> int:
        """Form feeds in the indentation of ``row``: LibCST leaves them out of its columns."""
        start, stop = self.lines.line_span(row)
        if "\x0c" not in self.text[start:stop]:
            return 0
        indent = _INDENT.match(self.text, start, stop).group()
        return indent.count("\x0c")

    def _verified(self, node: cst.CSTNode, start: int, end: int, row: int) -> Tuple[int, int]:
        if isinstance(node, cst.BaseExpression) and node.lpar:
            # PositionProvider's range leaves out a node's own parentheses; so does the span.
            node = node.with_changes(lpar=(), rpar=())
        if getattr(node, "leading_lines", ()):
            # and a statement's leading comment and blank lines, which its code holds
            node = node.with_changes(leading_lines=())
        code = self.module.code_for_node(node)
        # Compare ignoring whitespace: code_for_node cannot know the indentation of the
        # block around a multi-line node, but every other character must be the same.
        if _squash(self.text[start:end]) == _squash(code):
            return start, end
        # LibCST normalises a few rare bytes (a form feed that opens a line, a final lone
        # CR), which shifts columns on that line. Find the node's first line there instead.
        line_start, line_end = self.lines.line_span(row)
        first = code.split("\n", 1)[0].split("\r", 1)[0]
        found = -1
        if first:  # the occurrence on that line nearest to where LibCST placed it
            hits = [m.start() for m in re.finditer(re.escape(first), self.text[line_start:line_end + 1])]
            if hits:
                found = line_start + min(hits, key=lambda h: abs(line_start + h - start))
        if found != -1:
            same_line = self.lines.position(end).row == row
            new_start, new_end = found, (end + found - start if same_line else end)
            if _squash(self.text[new_start:new_end]) == _squash(code):
                return new_start, new_end
        raise SpanError(f"could not locate the source of a {type(node).__name__} at line {row}")

    def edit(self, start: int, end: int, content: str) -> Edit:
        """An edit of ``text[start:end]``, with its positions for output formats."""
        return Edit(start, end, content, self.lines.position(start), self.lines.position(end))

    def replace(self, node: cst.CSTNode, content: str) -> Edit:
        start, end = self.span(node)
        return self.edit(start, end, content)

    def insert_before(self, node: cst.CSTNode, content: str) -> Edit:
        start, _ = self.span(node)
        return self.edit(start, start, content)

    def insert_after(self, node: cst.CSTNode, content: str) -> Edit:
        _, end = self.span(node)
        return self.edit(end, end, content)

    def source(self, node: cst.CSTNode) -> str:
        try:
            start, end = self.span(node)
        except SpanError:
            return self.module.code_for_node(node)
        return self.text[start:end]

    def newline(self) -> str:
        return self.shared("newline", lambda ctx: ctx.lines.newline())


class SpanError(Exception):
    pass


_UNSET = object()
# The engine's prefilter (rule TRIGGERS) and the name gates (``may_resolve``) only skip work
# that cannot lead to a finding. Tests switch them off to prove it: findings must not change.
PREFILTER = {"enabled": True}
_AS_NAME = re.compile(r"\bas\s+([A-Za-z_]\w*)")


_WS = re.compile(r"\s+")
_INDENT = re.compile(r"[ \t\x0c]*")


def _squash(text: str) -> str:
    return _WS.sub("", text)


class Rule(cst.BatchableCSTVisitor):
    """Base class of every rule. Subclasses set the documentation attributes below."""

    CODE: ClassVar[str] = ""
    NAME: ClassVar[str] = ""  # kebab-case, like ruff's rule names
    SUMMARY: ClassVar[str] = ""  # one line, shown by ``rocmport rules``
    WHAT: ClassVar[str] = ""  # what it finds
    WHY: ClassVar[str] = ""  # why it is a problem on ROCm
    EXAMPLE: ClassVar[str] = ""  # code that triggers it
    FIXED_EXAMPLE: ClassVar[str] = ""  # the same after ``rocmport fix``
    FIX: ClassVar[str] = ""  # the fix and why it is (or is not) safe
    FIX_APPLICABILITY: ClassVar[Optional[Applicability]] = None
    DEFAULT_ENABLED: ClassVar[bool] = True
    # Prefilter: a file whose text contains none of these cannot hold a finding of this
    # rule, so the engine need not parse it for this rule. Must be conservative.
    TRIGGERS: ClassVar[Tuple[str, ...]] = ()
    # Whole words (identifiers, as text) the file must hold, checked after ``TRIGGERS``:
    # one word of each group (``(("graph", "capture_begin"), ("cuda", "capture_begin"))``:
    # both groups met). Must be conservative: a word every finding's code spells.
    WORDS: ClassVar[Tuple[Tuple[str, ...], ...]] = ()
    VALID: ClassVar[Sequence[Case]] = ()
    INVALID: ClassVar[Sequence[Case]] = ()

    # The providers a rule may ask for. The engine resolves none of them up front: each is
    # computed the first time any rule of the file asks (see ``get_metadata``).
    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    def __init__(self, context: RuleContext):
        super().__init__()
        self.context = context

    @classmethod
    def may_match(cls, facts: "Facts") -> bool:
        """Second prefilter, on CPython's parse of a file that passed ``TRIGGERS``: False
        only when the file provably holds no finding of this rule (see ``_prescan``). The
        engine then spares the file LibCST when no enabled rule may match."""
        return True

    @classmethod
    def reach(cls, facts: "Facts") -> Optional[FrozenSet[str]]:
        """The words outside which this rule neither reports nor reads anything of a function
        or class: a definition whose code holds none of the words of any rule run on the file
        is left unparsed by a lint (``_opaque``). None (the default): the rule may read any
        definition (a call graph, a kernel launched elsewhere, a dict built in a helper)."""
        return None

    def get_metadata(self, key, node, default=_UNSET):  # type: ignore[override]
        mapping = self.context.metadata(key)
        value = mapping[node] if default is _UNSET else mapping.get(node, default)
        return value() if isinstance(value, LazyValue) else value

    # -- reporting ------------------------------------------------------------------------
    def report(self, node: cst.CSTNode, message: str, *, fix: Optional[Fix] = None,
               end_node: Optional[cst.CSTNode] = None) -> None:
        ctx = self.context
        try:
            start, end = ctx.span(node)
            if end_node is not None:
                end = ctx.span(end_node)[1]
        except SpanError as exc:
            # Report the finding at LibCST's position, without a fix we cannot place.
            rng = ctx.position(node)
            start = ctx.lines.offset(rng.start.line, rng.start.column)
            end = ctx.lines.offset(rng.end.line, rng.end.column)
            ctx.span_errors.append(str(exc))
            fix = None
        ctx.findings.append(
            Finding(
                code=self.CODE,
                name=self.NAME,
                message=message,
                start=ctx.lines.position(start),
                end=ctx.lines.position(end),
                fix=fix,
                filename=ctx.path,
                span=(start, end),
            )
        )

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.get_metadata(ParentNodeProvider, node, None)

    def ancestors(self, node: cst.CSTNode):
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def in_rocm_branch(self, node: cst.CSTNode) -> bool:
        """True when ``node`` only runs on one side of a ROCm test (``if is_rocm:`` or its
        ``else``, either arm of ``x if torch.version.hip else y``, ``is_hip() and ...``), or in
        a function or class whose name says it is ROCm-specific: such code is already gated."""
        gate = self.context.gate_name
        child = node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)):
                if child is not ancestor.test and mentions_rocm(ancestor.test, gate):
                    return True
            elif isinstance(ancestor, cst.BooleanOperation):
                if child is ancestor.right and mentions_rocm(ancestor.left, gate):
                    return True
            elif isinstance(ancestor, (cst.FunctionDef, cst.ClassDef)):
                if _ROCM_WORD.search(ancestor.name.value):
                    return True
            child = ancestor
        return False

    @classmethod
    def doc(cls) -> str:
        """The rule's documentation, as ``rocmport rule CODE`` prints it (Markdown)."""
        parts = [f"# {cls.CODE} {cls.NAME}", "", cls.SUMMARY.strip(), ""]
        if not cls.DEFAULT_ENABLED:
            parts += ["Off by default: enable it with `--select " + cls.CODE + "` or `extend-select`.", ""]
        parts += ["## What it finds", "", _dedent(cls.WHAT), "", "## Why it is a problem on ROCm", "",
                  _dedent(cls.WHY), "", "## Example", "", "```python", _dedent(cls.EXAMPLE), "```", ""]
        if cls.FIXED_EXAMPLE:
            parts += ["After `rocmport fix --write`:", "", "```python", _dedent(cls.FIXED_EXAMPLE), "```", ""]
        applicability = cls.FIX_APPLICABILITY.value if cls.FIX_APPLICABILITY else "none"
        parts += [f"## Fix ({applicability})", "", _dedent(cls.FIX)]
        return "\n".join(parts).rstrip() + "\n"


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip("\n")


# ----------------------------------------------------------------------------------------
# Helpers shared by rule families
# ----------------------------------------------------------------------------------------

_ROCM_WORD = re.compile(r"(?i)(?:^|_)(?:rocm|hip|amd)(?:_|$|\d)")


def mentions_rocm(node: cst.CSTNode, gate_name: str = "is_rocm") -> bool:
    """True when an expression tests for a ROCm build: ``torch.version.hip``, a name such
    as ``is_rocm`` / ``IS_HIP`` / ``is_hip()`` / ``on_amd``, or rocmport's own gate."""
    found = False
    gate_word = gate_name.partition("(")[0].rpartition(".")[2]  # "utils.is_rocm()": is_rocm

    class _Finder(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> bool:
            nonlocal found
            if n.value == gate_word or _ROCM_WORD.search(n.value):
                found = True
            return False

        def visit_SimpleString(self, n: cst.SimpleString) -> bool:
            return False

    _walk.visit(node, _Finder())
    return found


def literal_string(node: cst.CSTNode) -> Optional[str]:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if isinstance(node, cst.SimpleString):
        prefix = node.prefix.lower()
        if "b" in prefix or "f" in prefix:
            return None
        raw = node.raw_value
        if "\\" not in raw and "\r" not in raw:  # nothing to unescape (a CR would read as a newline)
            return raw
        try:
            value = node.evaluated_value
        except Exception:  # pragma: no cover - malformed escape
            return None
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = literal_string(node.left), literal_string(node.right)
        if left is None or right is None:
            return None
        return left + right
    return None


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def _import_names(node: cst.CSTNode, facts: "Facts", scopes: Any = None) -> Optional[Set[QualifiedName]]:
    """QualifiedNameProvider's answer for a dotted name that is read (not a name an import
    or a ``global`` statement binds), computed from the file's bindings (``Facts``) where
    they decide it; None where the provider must be asked. Decided: a root bound only by
    imports that agree (every binding in sight gives the same names), only at module level
    (its own name), only in functions or classes (names no rule looks for: none), or by
    nothing (a builtin, or no name). A root bound in several ways is decided by the scopes
    around the read (``scopes``, a ``_resolve.ScopeBindings``) where they can tell.
    ``tests/test_prescan.py`` compares both on a corpus."""
    if isinstance(node, (cst.Decorator, cst.FunctionDef, cst.ClassDef)):
        return None
    root, tail = _root_and_tail(node)
    if not isinstance(root, cst.Name):
        # ``(a - b).abs``: the provider spells the root "None", a builtin
        return {QualifiedName("builtins.None", QualifiedNameSource.BUILTIN)} if tail else set()
    name = root.value
    kinds = facts.binding_kinds().get(name)
    if not kinds:  # a builtin is named without the attributes after it
        return _module_names(name, tail, set(), facts)
    if kinds <= {"import", "inner import"}:
        imported = facts.binding_kinds_imports()[name]
        # every import in sight gives the same name (an import inside another function
        # than the reader's is not in sight: a NameError at run time, ignored)
        if kinds == {"import"} or len(imported) == 1:
            return {QualifiedName(full + tail, QualifiedNameSource.IMPORT) for full in imported}
    elif kinds == {"module"}:
        return _module_names(name, tail, kinds, facts)
    elif kinds <= {"function", "class"} and name not in _BUILTINS and not _ROOT_CLASSES & facts.class_roots():
        # Only names of a function's scope ("f.<locals>.x") or of a class ("A.x"), or none
        # where it is not bound: no rule looks for such a name (unless a class is named
        # like a module the rules know), so none is as good, and spares the provider.
        return set()
    if scopes is None or "other" in kinds:
        return None
    meaning = scopes.meaning(name, node, classes_bind="class" in kinds)
    if meaning is None:
        return None
    where, imported = meaning
    if where == "imports":
        return {QualifiedName(full + tail, QualifiedNameSource.IMPORT) for full in imported}
    if where == "local":
        # "f.<locals>.x": no rule looks for such a name. A builtin's name is left to the
        # provider, which reads it as the builtin before the local binding.
        return set() if name not in _BUILTINS else None
    return _module_names(name, tail, kinds & {"import", "module"}, facts)


def _module_names(name: str, tail: str, kinds: Set[str], facts: "Facts") -> Optional[Set[QualifiedName]]:
    """The provider's answer for ``name`` bound at module level in the ``kinds`` of ways
    ("import", "module"), or not at all there (a builtin, or nothing)."""
    if not kinds:  # a builtin is named without the attributes after it
        return {QualifiedName("builtins." + name, QualifiedNameSource.BUILTIN)} if name in _BUILTINS else set()
    if kinds == {"import"}:
        return {QualifiedName(full + tail, QualifiedNameSource.IMPORT) for full in facts.module_imports()[name]}
    if kinds == {"module"}:
        return {QualifiedName(name + tail, QualifiedNameSource.LOCAL)}
    return None


_ROOT_CLASSES = frozenset({"torch", "triton", "os", "subprocess", "asyncio", "functools", "transformers",
                           "builtins", "copy", "logging"})


# What LibCST's BuiltinScope holds: ``hasattr(builtins, name)``, which also answers for the
# module object's own attributes (``__dict__``, ``__class__``, ``__annotations__``).
_BUILTINS = frozenset(dir(builtins)) | frozenset(name for name in dir(type(builtins)) if hasattr(builtins, name))


def _possible_names(node: cst.CSTNode, facts: "Facts"):
    """What ``node`` could resolve to under the file's import ``bindings``: its dotted name
    as ``libcst.helpers.get_full_name_for_node`` builds it, with the first part replaced by
    each qualified name an import binds to it (``_prescan`` gives the reasons)."""
    if isinstance(node, cst.Decorator):
        node = node.decorator
    root, tail = _root_and_tail(node)
    if not isinstance(root, cst.Name):
        return set()
    return facts.roots(root.value).with_tail(tail)


def _root_and_tail(node: cst.CSTNode) -> Tuple[cst.CSTNode, str]:
    """The root of a dotted name and the attributes after it, as
    ``libcst.helpers.get_full_name_for_node`` reads them (through attributes, the callee of a
    call, the value of a subscript): ``torch.cuda[0].graph(g)`` -> (``torch``, ".cuda.graph")."""
    rest: List[str] = []
    while True:
        if isinstance(node, cst.Attribute):
            rest.append(node.attr.value)
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            return node, "".join("." + part for part in reversed(rest))


@functools.lru_cache(maxsize=512)
def _name_parts(names: frozenset):
    """(last components, all components) of dotted qualified names."""
    return (frozenset(n.rsplit(".", 1)[-1] for n in names),
            frozenset(part for n in names for part in n.split(".")))


def keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None
