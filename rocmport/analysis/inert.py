"""Module-level statements that no rule of a file reads, left out of both parses of a large file.

A lint already leaves unparsed the functions and classes that no rule reads (``opaque``). A
large file of module-level statements (a generated table, a long script: issue 31's flat
file) has no definition to leave out, and LibCST's parse of it alone costs more than the
whole fix may. Here the unit is a top-level *simple* statement (an assignment, an expression,
``pass``, ``del``), and what no rule reads is derived from two things only:

- the words the rules run on the file look for (:func:`seed_words`: each triggered rule's
  ``TRIGGERS`` and ``WORDS``, every word of its ``NEEDS``, what the project index makes it look
  for, and the names the engine's own analyses read by name, :data:`ENGINE_WORDS`): a
  statement whose text holds one of them (or the comment and blank lines above it) is kept;
- the names the file binds (anywhere: more than those bound at module level): a statement
  that spells a name which a kept statement spells, and which something in the file binds, is
  kept too, and so on until nothing more is. So every binding of a name a kept statement reads is kept (the scope analyses answer
  alike), every use of a name a kept statement binds is kept (a call of the compiled model,
  an alias of a mode), and so is everything linked to those.

Every statement that is not such a simple statement is kept whole: imports, definitions,
``if``/``for``/``try``/``with`` blocks, ``global``, ``assert``, ``raise``, a docstring or
any string or constant expression, a statement that spells a dunder name (``__all__``) or
binds with ``:=``, the file's first statement. A statement LibCST would read otherwise than
CPython (more implicitly joined strings than its grammar takes) is kept, and a file with a
lone CR, a line that is only a backslash continuation (``parsing.lost_continuation``) or the
placeholder's name is not reduced at all.

What is left out is a *run*: consecutive inert statements with the comment and blank lines
between them. CPython's tree gets one :class:`InertRun` statement for it (its lines, no
children), and the text LibCST parses one placeholder line, which :meth:`Reduction.restore`
turns into an ``opaque.Opaque`` statement holding the run's code as it is: the module's code
is the file's text byte for byte, the statements kept are LibCST's own nodes with a whole
parse's positions (the comment lines above a run are its ``leading_lines``, as above the
statement it begins with), and the engine's visit, the rules and the prefilter's facts see
the kept statements only. ``tests/test_bigfile.py`` compares lints and fixes with and without
it.
"""

from __future__ import annotations

import ast
import bisect
import re
import sys
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set

import libcst as cst

from ..source import LineIndex
from .bindings import import_binding
from .opaque import Opaque

PLACEHOLDER = "_rocmport_inert_"
# Names that the engine's own analyses read at module level by name, whatever spells them.
ENGINE_WORDS = ("pytestmark",)
_CANDIDATES = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Pass, ast.Delete)
_COMPOUND_NAMES = frozenset({"If", "For", "AsyncFor", "While", "With", "AsyncWith", "Try", "TryStar",
                             "FunctionDef", "AsyncFunctionDef", "ClassDef", "Match"})
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
# LibCST's grammar takes at most parsing.MAX_JOINED_STRINGS implicitly joined literals: a
# statement with this many quotes could hold more, and is kept (LibCST decides on it).
_MANY_QUOTES = 6000


class InertRun(ast.Pass):
    """CPython's stand-in for a run of inert statements: a simple statement that spans the
    run's lines (``lineno`` to ``end_lineno``) and has no children."""


def seed_words(rules: Sequence, index=None) -> Optional[FrozenSet[str]]:
    """The words whose statements are kept, for ``rules`` (the rules a text triggered), or
    None: a rule says nothing it looks for (it may read anything)."""
    words: Set[str] = set()
    for rule in rules:
        said = False
        dynamic = getattr(rule, "index_triggers", None) if index is not None else None
        project = dynamic(index) if dynamic is not None else None
        if project is not None:
            substrings, names = project
            words.update(substrings)
            words.update(names)
            said = True
        words.update(rule.TRIGGERS)
        for group in rule.WORDS:
            words.update(group)
        said = said or bool(rule.TRIGGERS) or bool(rule.WORDS)
        needs = getattr(rule, "NEEDS", None)
        if needs is not None:
            words.update(_need_words(needs))
            said = True
        if not said:
            return None
    if "" in words:
        return None
    return frozenset(words)


def _need_words(need) -> Set[str]:
    """Every word any part of a need spells (its triggers and word groups, alternatives and
    parts alike)."""
    parts = getattr(need, "needs", None)
    if parts is not None:
        out: Set[str] = set()
        for part in parts:
            out |= _need_words(part)
        return out
    out = set(need.triggers())
    for group in need.words():
        out.update(group)
    return out


class _Group:
    """One LibCST statement of the module's body: a compound statement, or the simple
    statements of one line (``a = 1; b = 2``)."""

    __slots__ = ("first", "last", "stmts", "size", "simple", "candidate", "ids", "bound", "seed", "kept")

    def __init__(self, first: int, last: int, stmt: ast.stmt, simple: bool):
        self.first, self.last, self.stmts, self.size, self.simple = first, last, [stmt], 1, simple
        self.candidate = False
        self.ids: FrozenSet[str] = frozenset()
        self.bound: Set[str] = set()
        self.seed = True
        self.kept = True


def _groups(body: Sequence[ast.stmt]) -> List[_Group]:
    """The body's statements as LibCST groups them (``metadata._pair``'s grouping: the simple
    statements that share a line are one)."""
    out: List[_Group] = []
    for stmt in body:
        simple = type(stmt).__name__ not in _COMPOUND_NAMES
        end = stmt.end_lineno or stmt.lineno
        if out and simple and out[-1].simple and stmt.lineno <= out[-1].last:
            group = out[-1]
            group.stmts.append(stmt)
            group.size += 1
            group.last = max(group.last, end)
            continue
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        out.append(_Group(first, end, stmt, simple))
    return out


def _targets(node: ast.AST, out: Set[str]) -> None:
    kind = type(node)
    if kind is ast.Name:
        out.add(node.id)
    elif kind is ast.Tuple or kind is ast.List:
        for element in node.elts:
            _targets(element, out)
    elif kind is ast.Starred:
        _targets(node.value, out)


def _bound_anywhere(stmt: ast.AST, out: Set[str]) -> None:
    """Every name ``stmt`` may bind in any scope (more than it binds at module level)."""
    for node in ast.walk(stmt):
        kind = type(node)
        if kind is ast.Name:
            if type(node.ctx) is not ast.Load:
                out.add(node.id)
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            out.add(node.name)
        elif kind is ast.arg:
            out.add(node.arg)
        elif kind is ast.alias:
            out.add(import_binding(node.name, node.asname)[0])
        elif kind in (ast.Global, ast.Nonlocal):
            out.update(node.names)
        elif kind is ast.ExceptHandler:
            if node.name:
                out.add(node.name)
        else:
            for field in ("name", "rest"):  # match captures
                value = getattr(node, field, None)
                if isinstance(value, str) and kind.__name__.startswith("Match"):
                    out.add(value)


def _candidate(group: _Group, code: str, line_start_char: str) -> bool:
    """May the group be left out (before the words and names are asked)?"""
    if line_start_char in " \t\f" or group.stmts[0].col_offset != 0:
        return False
    for stmt in group.stmts:
        if not isinstance(stmt, _CANDIDATES):
            return False
        if type(stmt) is ast.Expr and isinstance(stmt.value, ast.Constant):
            return False  # a docstring, or a string a reader may take for one
    if ":=" in code or "__" in code:
        return False
    if code.count('"') + code.count("'") >= _MANY_QUOTES:
        return False
    return True


class Run:
    """Consecutive inert statements: their lines, and the offsets of their code (from the
    first line's start to the end of the last line, before its newline)."""

    __slots__ = ("first", "last", "start", "end", "count")

    def __init__(self, first: int, last: int, start: int, end: int, count: int):
        self.first, self.last, self.start, self.end, self.count = first, last, start, end, count


class Reduction:
    """CPython's tree of a text with its inert runs as :class:`InertRun` statements, the runs,
    and (where there are runs) LibCST's tree with each as an ``Opaque`` statement."""

    def __init__(self, text: str, tree: ast.Module, runs: List[Run]):
        self.text = text
        self.tree = tree
        self.runs = runs
        self.module: Optional[cst.Module] = None

    @property
    def statements(self) -> int:
        """How many statements the runs hold."""
        return sum(run.count for run in self.runs)

    def reduced_text(self) -> str:
        """The text with each run's code replaced by one placeholder name."""
        out: List[str] = []
        at = 0
        for number, run in enumerate(self.runs):
            out.append(self.text[at:run.start])
            out.append(f"{PLACEHOLDER}{number}")
            at = run.end
        out.append(self.text[at:])
        return "".join(out)

    def restore(self, module: cst.Module) -> Optional[cst.Module]:
        """``module`` (LibCST's tree of :meth:`reduced_text`) with an ``Opaque`` statement for
        each placeholder, or None where one is not where it should be or the code that comes
        out is not the text."""
        body = list(module.body)
        done = 0
        names = {f"{PLACEHOLDER}{number}": number for number in range(len(self.runs))}
        for k, stmt in enumerate(body):
            if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                    and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Name)):
                continue
            number = names.get(stmt.body[0].value.value)
            if number is None:
                continue
            if number != done or stmt.body[0].semicolon is not cst.MaybeSentinel.DEFAULT \
                    or stmt.trailing_whitespace.comment is not None:
                return None
            run = self.runs[number]
            body[k] = Opaque(code=self.text[run.start:run.end], kind="SimpleStatementLine",
                             leading_lines=stmt.leading_lines, trailing_whitespace=stmt.trailing_whitespace)
            done += 1
        if done != len(self.runs):
            return None
        restored = module.with_changes(body=body)
        if restored.code != self.text:
            return None
        return restored


def reduce(text: str, lines: LineIndex, words: Iterable[str],
           pieces: Iterator[ast.Module], parse_at: Callable[[str, int], Optional[ast.Module]],
           minimum: int) -> Optional[Reduction]:
    """The reduction of ``text`` for the rules that look for ``words``: ``pieces`` yields
    CPython's tree of each piece of the text in order (positions of the whole text; None for
    a piece that did not parse: no reduction), ``parse_at(code, line)`` gives CPython's tree of
    a part of the text that begins at ``line``. With fewer than ``minimum`` lines in runs, the
    tree is CPython's whole tree and there is no run. None: no reduction (parse as usual)."""
    starts = lines.starts
    count = len(starts)
    hits: List[int] = []  # where the words are, in the text
    for word in set(words) | set(ENGINE_WORDS):
        at = text.find(word)
        while at >= 0:
            hits.append(at)
            at = text.find(word, at + 1)
    hits.sort()
    intern = sys.intern
    groups: List[_Group] = []
    gap = 0  # where the text after the last group's line begins
    # A candidate's statements are dropped (to be parsed again if it is kept) only once the
    # candidates' lines reach ``minimum``: with fewer, nothing can be left out, and the tree
    # is CPython's whole tree as the pieces gave it, parsed once.
    held: List[_Group] = []
    candidate_lines = 0
    for tree in pieces:
        if tree is None:
            return None
        for group in _groups(tree.body):
            start = starts[group.first - 1]
            end = starts[group.last] if group.last < count else len(text)
            # the module's first statement stays (the header, and what LibCST takes from it)
            group.candidate = bool(groups) and _candidate(group, text[start:end], text[start:start + 1])
            if group.candidate:
                at = bisect.bisect_left(hits, gap)  # a word in it, or in the lines above it
                group.seed = at < len(hits) and hits[at] < end
                segment = text[gap:end]
                group.ids = frozenset(intern(name) for name in _IDENTIFIER.findall(segment))
                bound: Set[str] = set()
                for stmt in group.stmts:
                    targets = stmt.targets if type(stmt) in (ast.Assign, ast.Delete) else \
                        [getattr(stmt, "target", None)]
                    for target in targets:
                        if target is not None:
                            _targets(target, bound)
                group.bound = bound
                candidate_lines += group.last - group.first + 1
                held.append(group)
                if candidate_lines >= minimum:
                    for dropped in held:
                        dropped.stmts = []  # parsed again if it is kept
                    held = []
            groups.append(group)
            group.kept = group.seed
            gap = end
    if not groups:
        return None
    inert_lines = sum(g.last - g.first + 1 for g in groups if not g.kept)
    if inert_lines >= minimum:
        # the closure over the names bound in the file (by anything: more than at module level)
        gap = 0
        for group in groups:
            end = starts[group.last] if group.last < count else len(text)
            if not group.candidate:
                group.ids = frozenset(intern(name) for name in _IDENTIFIER.findall(text, gap, end))
                for stmt in group.stmts:
                    _bound_anywhere(stmt, group.bound)
            gap = end
        bound_names: Set[str] = set()
        for group in groups:
            bound_names |= group.bound
        index: Dict[str, List[int]] = {}
        for k, group in enumerate(groups):
            if not group.kept:
                for name in group.ids:
                    if name in bound_names:
                        index.setdefault(name, []).append(k)
        seen: Set[str] = set()
        todo = [k for k, group in enumerate(groups) if group.kept]
        while todo:
            group = groups[todo.pop()]
            for name in group.ids:
                if name in seen or name not in bound_names:
                    continue
                seen.add(name)
                for k in index.get(name, ()):
                    if not groups[k].kept:
                        groups[k].kept = True
                        todo.append(k)
    inert_lines = sum(g.last - g.first + 1 for g in groups if not g.kept)
    engage = inert_lines >= minimum
    # the statements of the candidates that stay: parsed again, a stretch at a time
    body: List[ast.stmt] = []
    runs: List[Run] = []
    k = 0
    while k < len(groups):
        group = groups[k]
        if not group.candidate:
            body.extend(group.stmts)
            k += 1
            continue
        j = k
        inert = engage and not group.kept
        while j + 1 < len(groups) and groups[j + 1].candidate and (engage and not groups[j + 1].kept) == inert:
            j += 1
        first, last = group.first, groups[j].last
        start = starts[first - 1]
        line_start, line_end = lines.line_span(last)
        if inert:
            run = InertRun(lineno=first, col_offset=0, end_lineno=last, end_col_offset=len(
                text[line_start:line_end].encode("utf-8")))
            body.append(run)
            runs.append(Run(first, last, start, line_end, j - k + 1))
        elif all(g.stmts for g in groups[k:j + 1]):  # never dropped
            for g in groups[k:j + 1]:
                body.extend(g.stmts)
        else:
            end = starts[last] if last < count else len(text)
            part = parse_at(text[start:end], first)
            if part is None:  # each parsed in its piece: cannot be
                return None
            again = _groups(part.body)
            if [(g.first, g.last, g.size) for g in again] != [(g.first, g.last, g.size) for g in groups[k:j + 1]]:
                return None
            body.extend(part.body)
        k = j + 1
    tree = ast.Module(body=body, type_ignores=[])
    return Reduction(text, tree, runs)
