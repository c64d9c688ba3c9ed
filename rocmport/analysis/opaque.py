"""Definitions that no rule of a file reads, left out of LibCST's parse.

A file reaches LibCST because one of its rules may report something in it, usually in a
few lines of a large file. When every rule run on the file says which words it can report
at or read (``Rule.reach``), a function or class whose code holds none of them is neither
parsed nor visited: the text LibCST parses has one placeholder line in its place, and
:func:`restore` puts an :class:`Opaque` statement, which holds that code as it is, where the
placeholder was. The module's code is then the file's text byte for byte, so positions,
spans and edits are those of a whole parse; only the definitions' own nodes are missing.

Which definitions may go (:func:`holes`), at module level and in the body of a class:

- the definition's code (decorators, defaults and annotations included) holds none of the
  words, as text: a name, an attribute, a string or a comment;
- its name is not bound by an import too, so that a name read elsewhere means what it
  meant (QualifiedNameProvider and ``ScopeBindings`` see the module without it);
- it declares nothing ``global`` or ``nonlocal`` and binds nothing with ``:=`` (names
  that may belong to another scope);
- it starts and ends on lines of its own (as every ``def`` and ``class`` does), with no
  backslash at the end of its last line.

Only the engine's lint uses it: a fix is applied to the whole tree.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import libcst as cst

from ..source import LineIndex
from .libcst_internals import CodegenState, visit_required, visit_sequence

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_KINDS = {ast.FunctionDef: "FunctionDef", ast.AsyncFunctionDef: "FunctionDef", ast.ClassDef: "ClassDef"}
_HEADS = {ast.FunctionDef: ("def",), ast.AsyncFunctionDef: ("async",), ast.ClassDef: ("class",)}
# A definition that holds one of these may bind a name of another scope.
BINDS_ELSEWHERE = (ast.Global, ast.Nonlocal, ast.NamedExpr)
PLACEHOLDER = "_rocmport_opaque_"


@dataclasses.dataclass(frozen=True)
class Opaque(cst.BaseStatement):
    """A definition left unparsed: its code from the first decorator (or keyword) to the end
    of its last line, without the indentation of its first line or the last newline."""

    code: str
    kind: str  # "FunctionDef" or "ClassDef": what LibCST would have made of it
    leading_lines: Sequence[cst.EmptyLine] = ()
    trailing_whitespace: cst.TrailingWhitespace = cst.TrailingWhitespace.field()

    def _visit_and_replace_children(self, visitor) -> "Opaque":
        return Opaque(code=self.code, kind=self.kind,
                      leading_lines=visit_sequence(self, "leading_lines", self.leading_lines, visitor),
                      trailing_whitespace=visit_required(self, "trailing_whitespace", self.trailing_whitespace,
                                                         visitor))

    def _codegen_impl(self, state: CodegenState) -> None:
        for line in self.leading_lines:
            line._codegen(state)
        state.add_indent_tokens()
        with state.record_syntactic_position(self):
            state.add_token(self.code)
        self.trailing_whitespace._codegen(state)


@dataclasses.dataclass(frozen=True)
class Hole:
    first: int  # the first line (its first decorator's) and the last, 1-based
    last: int
    start: int  # offset of the first line's start
    end: int  # offset after the last line's terminator (or the end of the text)
    indent: str
    newline: str  # the last line's terminator ("" at the end of a text without one)
    kind: str


def holes(text: str, lines: LineIndex, tree: ast.AST, words: Iterable[str], import_bound: Iterable[str],
          binders: Iterable[ast.AST]) -> List[Hole]:
    """The definitions of ``tree`` (CPython's tree of ``text``, whose ``lines`` are given)
    that may be left out when the rules read nothing but ``words``: each one whose code holds
    none of them, at module level or in the body of a class that is kept. ``import_bound``:
    the names imports bind; ``binders``: the tree's ``BINDS_ELSEWHERE`` nodes."""
    if not isinstance(tree, ast.Module) or PLACEHOLDER in text:
        return []
    if "\r" in text.replace("\r\n", ""):  # a lone CR: CPython's lines and ours may differ
        return []
    found: List[Hole] = []
    binder_lines = sorted(node.lineno for node in binders)
    _collect(tree.body, text, lines, tuple(words), frozenset(import_bound), binder_lines, found)
    return found


def _collect(body: Sequence[ast.stmt], text: str, lines: LineIndex, words: Tuple[str, ...],
             import_bound: frozenset, binder_lines: List[int], found: List[Hole]) -> None:
    for stmt in body:
        kind = type(stmt)
        if kind not in _DEFINITIONS:
            continue
        hole = _hole(stmt, text, lines)
        if hole is None:
            continue
        code = text[hole.start:hole.end]
        at = bisect.bisect_left(binder_lines, hole.first)
        binds = at < len(binder_lines) and binder_lines[at] <= hole.last
        if stmt.name not in import_bound and not binds and not any(word in code for word in words):
            found.append(hole)
        elif kind is ast.ClassDef:
            _collect(stmt.body, text, lines, words, import_bound, binder_lines, found)


def _hole(stmt, text: str, lines: LineIndex) -> Optional[Hole]:
    decorators = stmt.decorator_list
    first = min([stmt.lineno] + [d.lineno for d in decorators])
    last = stmt.end_lineno
    if last is None or first > len(lines.starts) or last > len(lines.starts):
        return None
    start, line_end = lines.line_span(first)
    line = text[start:line_end]
    indent = line[:len(line) - len(line.lstrip(" \t"))]  # a form feed there: LibCST drops it
    if len(indent) != stmt.col_offset:  # decorators stand where their definition does
        return None
    head = line[len(indent):]
    if not (head.startswith("@") if decorators else head.startswith(_HEADS[type(stmt)])):
        return None
    last_start, last_end = lines.line_span(last)
    if text[last_start:last_end].rstrip().endswith("\\"):
        return None
    end = lines.starts[last] if last < len(lines.starts) else len(text)
    return Hole(first, last, start, end, indent, text[last_end:end], _KINDS[type(stmt)])


def reduce(text: str, found: Sequence[Hole]) -> str:
    """``text`` with each hole's lines replaced by one placeholder line at its indentation."""
    out: List[str] = []
    at = 0
    for number, hole in enumerate(found):
        out.append(text[at:hole.start])
        out.append(f"{hole.indent}{PLACEHOLDER}{number}{hole.newline}")
        at = hole.end
    out.append(text[at:])
    return "".join(out)


def restore(module: cst.Module, text: str, found: Sequence[Hole]) -> Optional[cst.Module]:
    """``module`` (LibCST's tree of ``reduce(text, found)``) with an :class:`Opaque`
    statement for each placeholder; None when one of them is not where it should be."""
    codes: Dict[str, Hole] = {f"{PLACEHOLDER}{number}": hole for number, hole in enumerate(found)}
    done: List[str] = []
    body = _restore(module.body, text, codes, done)
    if len(done) != len(found):
        return None
    return module.with_changes(body=body)


def _restore(body: Sequence[cst.BaseStatement], text: str, codes: Dict[str, Hole], done: List[str]):
    out = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
                isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Name) and \
                stmt.body[0].value.value in codes:
            name = stmt.body[0].value.value
            hole = codes[name]
            code = text[hole.start + len(hole.indent):hole.end - len(hole.newline)]
            done.append(name)
            stmt = Opaque(code=code, kind=hole.kind, leading_lines=stmt.leading_lines,
                          trailing_whitespace=stmt.trailing_whitespace)
        elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
            inner = _restore(stmt.body.body, text, codes, done)
            if any(a is not b for a, b in zip(inner, stmt.body.body)):
                stmt = stmt.with_changes(body=stmt.body.with_changes(body=inner))
        out.append(stmt)
    return out
