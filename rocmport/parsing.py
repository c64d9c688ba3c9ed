"""The parse stage: CPython's parse (which refuses what would overflow LibCST's native parser)
and LibCST's, whole, in pieces, around edits, or without the definitions no rule reads.

A file is parsed once per analysis; the fix loop's check that its result parses and the
next analysis share one parse (:func:`parse_error`, :func:`parse`).
"""


from __future__ import annotations

import ast
import bisect
import contextlib
import gc
import io
import re
import sys
import threading
import tokenize
from typing import Callable, List, Optional, Sequence, Set, Tuple, Type

import libcst as cst
from libcst.metadata import PositionProvider

from rocmport.analysis import inert as _inert
from rocmport.analysis import opaque as _opaque
from rocmport.analysis import prescan as _prescan
from rocmport.analysis.metadata import STATS
from rocmport.rules.base import Rule

from . import process
from .file_analysis import FileAnalysis
from .findings import Edit, Finding
from .reports import unreadable
from .source import LineIndex


def _parser_message(exc: cst.ParserSyntaxError) -> str:
    message = exc.message.strip().splitlines()[0] if exc.message else "invalid syntax"
    return message


# LibCST's native parser builds ``a and b and c`` as nested nodes where CPython keeps one
# flat BoolOp; around 7,000 operands it overflows the C stack (a segmentation fault that no
# ``except`` catches). CPython refuses any other nesting near 3,000 levels, which LibCST
# survives; the extra depth of boolean chains along one path is capped at this.
MAX_BOOL_CHAIN = 1000
_BOOL_WORD_RE = re.compile(r"\b(?:and|or)\b")
# LibCST's grammar stops at this many implicitly joined string literals ("a" "b" ...).
MAX_JOINED_STRINGS = 3000


def cpython_parse(text: str) -> Tuple[Optional[ast.AST], Optional[Tuple[str, int, int]]]:
    """CPython's tree of ``text`` (None when it does not parse), and (message, row, column)
    when it nests deeper than CPython or LibCST accepts.

    LibCST's native parser overflows the C stack on such input (a segmentation fault that
    no ``except`` catches: about 2,000 nested brackets, 5,000 chained operators, or a flat
    chain of 7,000 ``and``) or takes minutes, so it must never see it; CPython's parser
    refuses most of it cheaply first, and :func:`_bool_chain_depth` the rest. The tree feeds
    the second prefilter (``rocmport.analysis.prescan``)."""
    if len(text) > MAX_PARSED_CHARS:
        return None, (too_large_message(text, MAX_PARSED_CHARS), 1, 1)
    tree, exc = gated(_prescan.parse, text)
    if isinstance(exc, MemoryError) and len(text) > 1024 * 1024:
        return None, ("cannot parse: not enough memory", 1, 1)
    if isinstance(exc, (RecursionError, MemoryError)):  # 3.11's parser: MemoryError on a stack overflow
        return None, ("cannot parse: nesting too deep", 1, 1)
    if isinstance(exc, SyntaxError) and exc.msg and "too many nested parentheses" in exc.msg:
        return None, (f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    if tree is not None:
        deep = _bool_chain_depth(text, tree) or _long_dotted_import(text, tree)
        if deep is not None:
            return None, deep
    return tree, None


# An imported module's dotted name is one string in CPython's tree and a chain of nested
# attributes in LibCST's: its native parser overflows the C stack near 8,000 parts.
MAX_DOTTED_PARTS = 1000
_DOTS_RE = re.compile(r"(?:\.[ \t]*\w+[ \t]*){%d}" % MAX_DOTTED_PARTS)


def _long_dotted_import(text: str, tree: ast.AST) -> Optional[Tuple[str, int, int]]:
    """(message, row, column) for an import of a module named by more than
    :data:`MAX_DOTTED_PARTS` parts."""
    if text.count(".") < MAX_DOTTED_PARTS or _DOTS_RE.search(text) is None:
        return None
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        if any(name.count(".") >= MAX_DOTTED_PARTS for name in names):
            return (f"too complex for the parser: a module name of more than {MAX_DOTTED_PARTS} dotted parts"
                    " (LibCST would crash on it)", node.lineno, node.col_offset + 1)
    return None


def _bool_chain_depth(text: str, tree: ast.AST) -> Optional[Tuple[str, int, int]]:
    """(message, row, column) when boolean chains nest LibCST deeper than it survives."""
    # each operator adds one level at most, and the words' count is at most the substrings':
    # cheap, and the usual answer
    if text.count("and") + text.count("or") <= MAX_BOOL_CHAIN or len(_BOOL_WORD_RE.findall(text)) <= MAX_BOOL_CHAIN:
        return None
    stack = [(tree, 0)]
    while stack:
        node, extra = stack.pop()
        if type(node) is ast.BoolOp:
            extra += len(node.values) - 1
            if extra > MAX_BOOL_CHAIN:
                return (f"too complex for the parser: a chain of more than {MAX_BOOL_CHAIN} `and`/`or`"
                        " operands (LibCST would crash on it); split the expression",
                        node.lineno, node.col_offset + 1)
        for child in ast.iter_child_nodes(node):
            stack.append((child, extra))
    return None


def _joined_strings(text: str) -> Optional[Tuple[int, int, int]]:
    """(count, row, column) of the longest run of implicitly joined string literals, when
    it is longer than LibCST's grammar accepts."""
    f_start = getattr(tokenize, "FSTRING_START", None)  # 3.12+: an f-string is many tokens
    f_end = getattr(tokenize, "FSTRING_END", None)
    best = (0, 1, 1)
    run, start, depth = 0, (1, 0), 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = tok.type
            if depth:  # inside an f-string
                depth += (kind == f_start) - (kind == f_end)
                continue
            if kind in (tokenize.NL, tokenize.COMMENT):
                continue
            if kind == tokenize.STRING or kind == f_start:
                depth = 1 if kind == f_start else 0
                if run == 0:
                    start = tok.start
                run += 1
                if run > best[0]:
                    best = (run, start[0], start[1] + 1)
            else:
                run = 0
    except (tokenize.TokenError, SyntaxError):
        return None
    return best if best[0] > MAX_JOINED_STRINGS else None


def quick_syntax_error(text: str) -> Optional[Finding]:
    if len(text) > MAX_PARSED_CHARS:
        return unreadable("-", too_large_message(text, MAX_PARSED_CHARS), 1, 1, frozenset({"ROC001"}))[0]
    try:
        tree = gated(compile, text, "<rocmport>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        deep = _bool_chain_depth(text, tree)
        return None if deep is None else unreadable("-", *deep, frozenset({"ROC001"}))[0]
    except (RecursionError, MemoryError):  # LibCST would overflow the C stack: see _too_deep
        return unreadable("-", "cannot parse: nesting too deep", 1, 1, frozenset({"ROC001"}))[0]
    except SyntaxError as exc:
        if exc.msg and "too many nested parentheses" in exc.msg:
            return unreadable("-", f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1,
                           frozenset({"ROC001"}))[0]
    except ValueError:
        pass
    # CPython's grammar is this interpreter's; LibCST's covers every version: it decides.
    try:
        parse(text)
        return None
    except cst.ParserSyntaxError as exc:
        return syntax_findings("-", text, exc, frozenset({"ROC001"}))[0]
    except RecursionError:
        return unreadable("-", "cannot parse: nesting too deep", 1, 1, frozenset({"ROC001"}))[0]
    except TooLarge as exc:
        return unreadable("-", str(exc), 1, 1, frozenset({"ROC001"}))[0]


def syntax_findings(path: str, text: str, exc: cst.ParserSyntaxError, enabled) -> List[Finding]:
    """ROC001 for a file LibCST cannot parse, with CPython's clearer message where it has one."""
    try:
        compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as syntax:
        if syntax.lineno:
            return unreadable(path, f"syntax error: {syntax.msg}", syntax.lineno, syntax.offset or 1, enabled)
    except (ValueError, RecursionError, MemoryError):
        pass
    else:  # valid Python that LibCST refuses: a limit of its grammar, not a syntax error
        joined = _joined_strings(text)
        if joined is not None:
            count, row, column = joined
            return unreadable(path, f"too complex for the parser: {count} implicitly joined string literals"
                                 f" (LibCST accepts {MAX_JOINED_STRINGS}); not analysed", row, column, enabled)
    return unreadable(path, f"syntax error: {_parser_message(exc)}", exc.raw_line, exc.raw_column + 1, enabled)


# A line that is only a backslash continuation (after blanks): before a statement, LibCST's
# tree leaves it out (``"\\\nx = 1\n"`` comes back as ``"x = 1\n"``), so positions past it
# are off by a line. Valid Python, rare: where the pattern is seen, the tree's code is compared
# with the text, and a file that does not come back whole is refused with a finding.
_CONTINUATION_LINE = re.compile(r"(?:^|[\r\n])[ \t\f]*\\(?:\r\n|\r|\n)")


def lost_continuation(text: str, module: cst.Module, lines: LineIndex) -> Optional[int]:
    """The line of the first continuation-only line, when LibCST's tree drops one."""
    found = _CONTINUATION_LINE.search(text)
    if found is None or module.code == text:
        return None
    at = found.start() + (1 if text[found.start()] in "\r\n" else 0)
    return lines.position(at).row


# The last text parsed and its tree, per thread: a fix pass checks that its result parses,
# and the next pass analyses that same text; one parse serves both (on a large file a parse
# is a good part of the run, and a tree its largest object).
_LAST_PARSE = threading.local()


def forget_last_parse() -> None:
    """Drop the tree kept for the text parsed last (its text will not be analysed next)."""
    _LAST_PARSE.value = None
    _LAST_REDUCED.value = None


def parsed_last(text: str) -> bool:
    """Is ``text`` the text :func:`parse_error` parsed last, whole (its tree kept)?"""
    last = getattr(_LAST_PARSE, "value", None)
    return last is not None and last[0] is text


def parse(text: str, tree: Optional[ast.AST] = None, before: Optional[Tuple[FileAnalysis, List[Edit]]] = None) -> cst.Module:
    """LibCST's tree of ``text`` (counted in ``STATS["parse"]``), reused once for the text
    :func:`parse_error` parsed last; a large text is parsed in pieces (:func:`parse_pieces`),
    or, when it is the text of an analysis with ``before`` = (that analysis, edits) applied,
    only where the edits are (:func:`parse_edited`)."""
    last = getattr(_LAST_PARSE, "value", None)
    _LAST_PARSE.value = None
    if last is not None and last[0] is text:
        return last[1]
    if len(text) > MAX_TREE_CHARS:
        raise TooLarge(too_large_message(text, MAX_TREE_CHARS))
    STATS["parse"] += 1
    if before is not None and _large(text):
        module = parse_edited(text, *before)
        if module is not None:
            return module
    return _parse_text(text, tree)


def _large(text: str) -> bool:
    """Is ``text`` parsed in pieces (where it can be cut)?"""
    return text.count("\n", 0, PIECE_CHARS * 2) >= PIECE_LINES or len(text) > PIECE_CHARS * 2


def _parse_text(text: str, tree: Optional[ast.AST] = None) -> cst.Module:
    """LibCST's tree of ``text``: in pieces where it is large and can be cut, else whole."""
    if len(text) > MAX_TREE_CHARS:
        raise TooLarge(too_large_message(text, MAX_TREE_CHARS))
    if _large(text):
        module = parse_pieces(text, tree)
        if module is not None:
            return module
    return libcst_parse(text)


def parse_partial(text: str, lines: LineIndex, tree: Optional[ast.AST], facts: Optional[_prescan.Facts],
                   rules: Sequence[Type[Rule]]) -> Optional[cst.Module]:
    """LibCST's tree of ``text`` without the functions and classes that none of ``rules``
    reads (each rule's ``reach``; ``_opaque``), or None: a rule may read any of them, none
    can go, or LibCST refuses the shortened text (the whole text's parse then says where)."""
    if tree is None or facts is None:
        return None
    words: Set[str] = set()
    for rule in rules:
        reach = rule.reach(facts)
        if reach is None:
            return None
        words.update(reach)
    found = _opaque.holes(text, lines, tree, words, facts.bindings, facts.nodes(*_opaque.BINDS_ELSEWHERE))
    if not found:
        return None
    try:
        module = _opaque.restore(parse(_opaque.reduce(text, found)), text, found)
    except (cst.ParserSyntaxError, RecursionError, TooLarge):
        return None
    if module is not None:
        STATS["parse:opaque"] += len(found)
    return module


class _WhileHeld:
    """A process-wide switch that threads share: ``on()`` when the first of them enters,
    ``off()`` when the last one leaves."""

    def __init__(self, on: Callable[[], None], off: Callable[[], None]):
        self._on, self._off = on, off
        self._lock = threading.Lock()
        self._held = 0

    def __enter__(self) -> None:
        with self._lock:
            if self._held == 0:
                self._on()
            self._held += 1

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._held -= 1
            if self._held == 0:
                self._off()


# The two switches below change the whole process while they are held: the cyclic collector
# paused, and LibCST's validation of its parser's own nodes off. rocmport holds them only in a
# process that is its own (``rocmport.process``); inside another program it changes nothing.


# LibCST validates every node it builds (``CSTNode.__post_init__``), its parser's too, whose
# output is valid by construction: a fifth of a parse ("PERF: ... avoid validating the tree
# when parsing a file", LibCST's own note there). While a parse runs, that check is off, where
# it is the one LibCST 1.x has (it calls ``_validate`` and nothing else).
_VALIDATE = cst.CSTNode.__post_init__
SKIP_VALIDATION = getattr(_VALIDATE, "__code__", None) is not None and \
    _VALIDATE.__code__.co_names == ("_validate",)


def _no_validation(self) -> None:
    pass


_UNVALIDATED = _WhileHeld(lambda: setattr(cst.CSTNode, "__post_init__", _no_validation),
                          lambda: setattr(cst.CSTNode, "__post_init__", _VALIDATE))


class TooLarge(Exception):
    """A text LibCST would need more memory for than rocmport lets it have (the message is
    user-facing)."""


# LibCST's native parser holds several hundred bytes of working memory per character of its
# input until it returns, and aborts the process (no exception) when an allocation fails: a
# 31 MB file parsed in one piece did under an 8 GB limit. A text is parsed in pieces (below);
# one piece, or a text that cannot be cut, of more than this many characters is refused.
MAX_PIECE_CHARS = 4 * 1024 * 1024
# The whole tree of a file stays in memory while it is analysed: up to 250 bytes a character
# (100,000 lines of dense module-level code, 7.5 MB, took 1.9 GB), beside CPython's tree of it
# (about 150 bytes a character: 4.2 GB for 28 MB). A larger text is an ROC001 finding: past
# MAX_TREE_CHARS when a rule needs LibCST's tree, past MAX_PARSED_CHARS in any case (a 50 MB
# notebook's code ran out of 8 GB in CPython's parser).
MAX_TREE_CHARS = 10 * 1024 * 1024
MAX_PARSED_CHARS = 16 * 1024 * 1024


def too_large_message(text: str, limit: int) -> str:
    return (f"too large to analyse: {len(text) / (1024 * 1024):.1f} MiB of Python (rocmport analyses at most"
            f" {limit // (1024 * 1024)} MiB a file{' when a rule needs its whole tree' if limit == MAX_TREE_CHARS else ''})")


def libcst_parse(text: str) -> cst.Module:
    """``libcst.parse_module(text)``, without validating the nodes the parser builds where the
    process is rocmport's own (``rocmport.process``). Raises :class:`TooLarge` for a text of
    more than :data:`MAX_PIECE_CHARS`."""
    if len(text) > MAX_PIECE_CHARS:
        raise TooLarge(f"too large for the parser: {text.count(chr(10)) + 1:,} lines ({len(text) // 1024:,} KiB)"
                       f" without a place to cut them (LibCST takes at most {MAX_PIECE_CHARS // (1024 * 1024)} MiB"
                       " at once); not analysed")
    if not SKIP_VALIDATION or not process.is_own():
        return cst.parse_module(text)
    with _UNVALIDATED:
        return cst.parse_module(text)


# Deep input: a 500-branch ``if``/``elif`` or a 2,000-term sum is valid Python that CPython
# accepts and that LibCST and the analyses (recursive visitors) walk one level a frame: past
# Python's default recursion limit (1,000) they raise RecursionError, and LibCST's native
# parser, on the main thread's 8 MB stack, overflows it near 8,000 levels. A file of more than
# DEEP_MIN_BYTES is therefore checked on a thread of its own with a DEEP_STACK stack and a
# recursion limit of DEEP_LIMIT (CPython then accepts trees up to about three times as deep,
# which that stack holds, but the checked text itself is parsed under the default limit:
# ``gated``); what is deeper still is an ROC001 finding, never a traceback.
DEEP_STACK = 512 * 1024 * 1024
DEEP_LIMIT = 50_000
DEEP_MIN_BYTES = 512  # fewer bytes cannot nest 300 levels
_STACK_LOCK = threading.Lock()
_LIMIT_BEFORE = [0]


def _limit_up() -> None:
    _LIMIT_BEFORE[0] = sys.getrecursionlimit()
    sys.setrecursionlimit(max(DEEP_LIMIT, _LIMIT_BEFORE[0]))


def _limit_back() -> None:
    sys.setrecursionlimit(_LIMIT_BEFORE[0])


_DEEP = _WhileHeld(_limit_up, _limit_back)


# CPython's parser, refusing what nests deeper than it accepts under its default limit, is
# what keeps deeper input from LibCST and from analyses that are slow on it (more than
# quadratic in the depth of an attribute chain): on a deep thread the text is parsed under
# that limit all the same.
GATE_LIMIT = 1000


def gated(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` (a CPython parse of the checked text) under the default
    recursion limit."""
    limit = sys.getrecursionlimit()
    if limit <= GATE_LIMIT:
        return fn(*args, **kwargs)
    sys.setrecursionlimit(GATE_LIMIT)
    try:
        return fn(*args, **kwargs)
    finally:
        sys.setrecursionlimit(limit)


def run_deep(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` on a thread with a large stack and a high recursion limit
    (see DEEP_STACK), its exception raised here; in this thread where no such thread can be
    made."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # raised again in the caller
            outcome["error"] = exc

    with _DEEP:
        try:
            with _STACK_LOCK:  # the stack size is the process's setting for new threads
                before = threading.stack_size(DEEP_STACK)
                try:
                    thread = threading.Thread(target=target, name="rocmport-check", daemon=True)
                    thread.start()
                finally:
                    threading.stack_size(before)
        except (ValueError, RuntimeError, MemoryError):  # no such stack here: as it is
            return fn(*args, **kwargs)
        thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# Python's cyclic collector, off while a file is checked. A check allocates trees (the
# CPython one, LibCST's, the metadata) whose objects hold few cycles and are freed by
# reference counting; the collector, counting those allocations, runs again and again
# meanwhile, and each run over the oldest objects walks all of them (12 % of a cold lint of
# the torch package, 40 % of a 100,000-line fix). What cycles the check leaves are collected
# in one run once it is on again. Several checks at once (threads) share one pause.
_COLLECTOR_WAS_ON = [False]


def _collector_off() -> None:
    _COLLECTOR_WAS_ON[0] = gc.isenabled()
    gc.disable()


def _collector_back() -> None:
    if _COLLECTOR_WAS_ON[0]:
        gc.enable()


_collector_paused = _WhileHeld(_collector_off, _collector_back)


def collector_paused():
    """The cyclic collector paused while a file is checked, where the process is rocmport's
    own (``rocmport.process``); elsewhere nothing."""
    return _collector_paused if process.is_own() else contextlib.nullcontext()


# LibCST's native parser holds about 100 kB of working memory per line until it returns (a
# 100,000-line file: 1 GB) and slows down on large inputs. A text of more than about
# PIECE_LINES lines is parsed in pieces of about that many lines, cut between two top-level
# statements where nothing of one can belong to the other, and the pieces' statements are
# put in one Module: the same tree as one parse (tests/test_bigfile.py compares them).
PIECE_LINES = 4000
PIECE_CHARS = 200_000
_COMPOUND = tuple(getattr(ast, name) for name in ("FunctionDef", "AsyncFunctionDef", "ClassDef", "If", "For",
                                                   "AsyncFor", "While", "With", "AsyncWith", "Try", "TryStar",
                                                   "Match") if hasattr(ast, name))


def _cuts(text: str, tree: Optional[ast.AST]) -> Tuple[List[int], str]:
    """Offsets where ``text`` may be cut into pieces: the start of a top-level statement
    on the line right after a simple top-level statement (no comment or blank line between,
    no decorator, no block around), about PIECE_LINES lines apart; and the indentation of
    the file's first indented block as its text spells it (LibCST's ``default_indent``, four
    blanks where it has none: each piece is parsed with it, and ``parse_pieces`` checks that
    the first block LibCST meets agrees)."""
    if tree is None:
        tree, _ = _prescan.parse(text)
    if not isinstance(tree, ast.Module):
        return [], "    "
    lines = LineIndex(text)
    cuts: List[int] = []
    last_row = 1
    body = tree.body
    for before, stmt in zip(body, body[1:]):
        if stmt.lineno - last_row < PIECE_LINES:
            continue
        if isinstance(before, _COMPOUND) or getattr(stmt, "decorator_list", None) or stmt.col_offset != 0:
            continue
        if before.end_lineno is None or before.end_lineno + 1 != stmt.lineno:
            continue
        cuts.append(lines.offset(stmt.lineno, 0))
        last_row = stmt.lineno
    return cuts, _first_indent(text, body, lines) if cuts else "    "


def _first_indent(text: str, body: Sequence[ast.stmt], lines: LineIndex) -> str:
    """The leading blanks of the first line of the file's first indented block (of a
    top-level statement's clauses, in order), four blanks where there is none."""
    for stmt in body:
        if not isinstance(stmt, _COMPOUND):
            continue
        for first, is_case in _clause_heads(stmt):
            start, end = lines.line_span(first.lineno)
            if is_case:  # a case has no position of its own: its line's leading blanks
                line = text[start:end]
                blank = line[:len(line) - len(line.lstrip(" \t\f"))]
            else:
                blank = text[start:lines.offset(first.lineno, first.col_offset)]
            if blank and not blank.strip(" \t\f"):
                return blank
    return "    "


def _clause_heads(stmt: ast.stmt):
    """(first node, is a case) of each clause's body of a compound statement, in order."""
    cases = getattr(stmt, "cases", None)
    if cases:
        yield cases[0].pattern, True
        return
    if getattr(stmt, "body", None):
        yield stmt.body[0], False
    for handler in getattr(stmt, "handlers", ()):
        if handler.body:
            yield handler.body[0], False
    orelse = getattr(stmt, "orelse", None) or []
    if isinstance(stmt, ast.If) and len(orelse) == 1 and isinstance(orelse[0], ast.If) \
            and orelse[0].col_offset == stmt.col_offset:  # elif
        yield from _clause_heads(orelse[0])
    elif orelse:
        yield orelse[0], False
    if getattr(stmt, "finalbody", None):
        yield stmt.finalbody[0], False


def parse_pieces(text: str, tree: Optional[ast.AST]) -> Optional[cst.Module]:
    """One Module from pieces of ``text`` parsed apart, or None (parse it whole). Each piece
    after the first is parsed behind a two-line block that gives it the file's default
    indentation and newline (which LibCST infers from the first it meets), and that block's
    statement is dropped. The first indented block LibCST meets must have that indentation
    (a block with another has its own ``indent``), or the whole text is parsed."""
    cuts, indent = _cuts(text, tree)
    if not cuts:
        return None
    bounds = list(zip([0] + cuts, cuts + [len(text)]))
    try:
        first = libcst_parse(text[bounds[0][0]:bounds[0][1]])
        if first.footer:
            return None
        newline = first.default_newline
        seen_block = _first_block_agrees(first.body)
        if seen_block is False:
            return None
        if seen_block:
            indent = first.default_indent
        else:
            first = first.with_changes(default_indent=indent)
        lead = f"if 1:{newline}{indent}pass{newline}"
        body = list(first.body)
        last = first
        for start, end in bounds[1:]:
            STATS["parse:piece"] += 1
            if last.footer:
                return None  # only the last piece ends the file
            piece = libcst_parse(lead + text[start:end])
            if (piece.header or piece.default_indent != indent or piece.default_newline != newline
                    or len(piece.body) < 2 or piece.body[1].leading_lines):
                return None
            if not seen_block:
                seen_block = _first_block_agrees(piece.body[1:])
                if seen_block is False:
                    return None
            body.extend(piece.body[1:])
            last = piece
    except (cst.ParserSyntaxError, RecursionError):
        return None  # the whole text's parse gives the error where it is
    return first.with_changes(body=body, footer=last.footer, has_trailing_newline=last.has_trailing_newline)


def _first_block_agrees(body: Sequence[cst.CSTNode]) -> Optional[bool]:
    """Of the first indented block among the top-level statements ``body`` (the first that
    LibCST's tokenizer meets): True when it has the default indentation (``indent`` None),
    False when not; None: there is none."""
    for stmt in body:
        if isinstance(stmt, cst.Match):
            return stmt.indent is None
        for block in _blocks_of(stmt):
            return block.indent is None
    return None


_CLAUSES = (cst.If, cst.Else, cst.ExceptHandler, cst.Finally) + tuple(
    getattr(cst, name) for name in ("ExceptStarHandler", "MatchCase") if hasattr(cst, name))


def _blocks_of(node: cst.CSTNode):
    """The indented blocks of a compound statement's clauses, in order."""
    if isinstance(node, cst.SimpleStatementLine):
        return
    for child in node.children:
        if isinstance(child, cst.IndentedBlock):
            yield child
        elif isinstance(child, _CLAUSES):
            yield from _blocks_of(child)


def parse_edited(text: str, analysis: FileAnalysis, edits: Sequence[Edit]) -> Optional[cst.Module]:
    """LibCST's tree of ``text``, which is ``analysis.text`` with ``edits`` applied: the
    statements no edit touches are the analysis' own nodes, and only the runs of statements
    the edits touch are parsed, each with the untouched statement on either side. That the
    pieces fit is checked, not assumed: each neighbour parsed again must equal the one it
    stands for (so the piece begins and ends where a statement does, and comments and blank
    lines went where a whole parse puts them), the indentation and newline must be the
    module's, and the header is never in a piece. None: parse the whole text."""
    old = analysis.module
    table = analysis.wrapper.positions._lines() if analysis.wrapper is not None else None
    if old is None or not table or not edits or len(table) != len(old.body):
        return None
    lines = analysis.lines
    starts = [lines.offset(line, 0) for line in table]
    count = len(starts)
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    touched: Set[int] = set()
    for edit in ordered:
        first = bisect.bisect_right(starts, edit.start) - 1
        last = bisect.bisect_right(starts, max(edit.start, edit.end - 1)) - 1
        if first < 0:
            return None  # in the header
        touched.update(range(first, last + 1))
    runs: List[List[int]] = []
    for k in sorted(touched):
        a, b = max(k - 1, 0), min(k + 1, count - 1)
        if runs and a <= runs[-1][1] + 1:
            runs[-1][1] = max(runs[-1][1], b)
        else:
            runs.append([a, b])
    if runs[0][0] == 0:
        return None  # the first statement: the header and the module's defaults come with it
    # LibCST takes the module's indentation from its first indented block: an edit in that
    # block, or one before it that brings indented lines, could change it
    block = next((k for k, stmt in enumerate(old.body)
                  if isinstance(getattr(stmt, "body", None), cst.IndentedBlock)), count)
    block_end = starts[block + 1] if block + 1 < count else len(analysis.text) + 1
    for edit in ordered:
        if edit.start < block_end and (block < count and edit.end > starts[block]
                                       or re.search(r"[\r\n][ \t]", edit.content)):
            return None
    newline, indent = old.default_newline, old.default_indent
    lead = f"if 1:{newline}{indent}pass{newline}"
    body: List[cst.BaseStatement] = []
    footer, trailing = old.footer, old.has_trailing_newline
    delta, e, kept = 0, 0, 0
    old_text = analysis.text
    try:
        for a, b in runs:
            old_start = starts[a]
            old_end = starts[b + 1] if b + 1 < count else len(old_text)
            if e < len(ordered) and ordered[e].start < old_start:
                return None  # an edit between the runs: cannot be
            start = old_start + delta
            while e < len(ordered) and (ordered[e].start < old_end or b + 1 == count):
                edit = ordered[e]
                delta += len(edit.content) - (edit.end - edit.start)
                e += 1
            end = old_end + delta if b + 1 < count else len(text)
            STATS["parse:edited"] += 1
            piece = libcst_parse(lead + text[start:end])
            if (piece.header or piece.default_indent != indent or piece.default_newline != newline
                    or len(piece.body) < 3 or not piece.body[1].deep_equals(old.body[a])):
                return None
            if b + 1 < count:
                if piece.footer or not piece.has_trailing_newline or not piece.body[-1].deep_equals(old.body[b]):
                    return None
            else:
                footer, trailing = piece.footer, piece.has_trailing_newline
            body.extend(old.body[kept:a])
            body.append(old.body[a])  # equal to the one parsed again: the analysis' own node
            body.extend(piece.body[2:-1] if b + 1 < count else piece.body[2:])
            if b + 1 < count:
                body.append(old.body[b])
            kept = b + 1
        if e != len(ordered):
            return None
    except (cst.ParserSyntaxError, RecursionError):
        return None  # the whole text's parse gives the error where it is
    body.extend(old.body[kept:])
    return old.with_changes(body=body, footer=footer, has_trailing_newline=trailing)


def parse_error(text: str, before: Optional[Tuple[FileAnalysis, List[Edit]]] = None) -> Optional[str]:
    words_for = before[0].reduce_words if before is not None else None
    if words_for is not None:  # the analysis left inert statements out: so does this parse
        words = words_for(text)
        found = reduced(text, LineIndex(text), words) if words is not None else None
        if found is not None and found.module is not None:
            _LAST_REDUCED.value = (text, words, found)
            return None
        # none here: the whole text's parse says whether it parses (not where the edits are:
        # the analysis' tree holds runs of statements as code)
        tree, before = (found.tree if found is not None else None), None
    else:
        tree = None
    try:
        module = parse(text, tree, before=before)
    except cst.ParserSyntaxError as exc:
        return f"{_parser_message(exc)} at line {exc.raw_line}"
    except RecursionError:
        return "nesting too deep"
    except TooLarge:
        return "too large for the parser"
    _LAST_PARSE.value = (text, module)
    return None


# -- large files without the module-level statements no rule reads (``analysis/inert.py``) --

# The reduction of large files, on or off (tests compare the two: findings, fixes and bytes
# must not change).
REDUCE = {"enabled": True}
# A reduction leaves out at least this share of a large text's lines, or none: below it,
# CPython's tree is the whole one and LibCST parses the whole text (as a lint may then leave
# out its definitions instead, ``parse_partial``).
REDUCE_MIN_SHARE = 0.5
# The reduction of the text reduced last, per thread (the fix pass's check that its result
# parses, for the next pass's analysis of that text, as _LAST_PARSE).
_LAST_REDUCED = threading.local()
_STATEMENT_START = re.compile(r"[^\W\d]")
_CLAUSE_START = re.compile(r"(?:else|elif|except|finally)\b")
_COMPOUND_START = re.compile(r"(?:(?:async[ \t]+)?def|class|if|for|while|with|try)\b|@")


def reducible(text: str) -> bool:
    """May the analysis of ``text`` leave inert statements out (:func:`reduced`)? A large
    text that rocmport parses whole otherwise, with no lone CR, no line that is only a
    backslash continuation (:func:`lost_continuation` reads those) and no placeholder."""
    if not _large(text) or len(text) > MAX_TREE_CHARS or len(text) > MAX_PARSED_CHARS:
        return False
    if _inert.PLACEHOLDER in text or ("\r" in text and "\r" in text.replace("\r\n", "")):
        return False
    return _CONTINUATION_LINE.search(text) is None


def _compound_lines(text: str, starts: Sequence[int]) -> int:
    """About how many lines of ``text`` top-level compound statements take (``def``, ``class``,
    decorated, ``if``, ``for``, ``while``, ``with``, ``try``): from a line that begins with one
    in the first column to the next line that begins a statement there. No such line is ever
    left out (only simple statements are, ``inert._candidate``); a line that merely looks like
    one (in a string) makes the count too high, and the reduction is then not tried where it
    could have been: the text is analysed as usual, which is what a reduction must equal."""
    total = 0
    opened = None
    for i, at in enumerate(starts):
        first = text[at:at + 1]
        if not first or first in " \t\f\r\n#)]}" or _CLAUSE_START.match(text, at):
            continue
        if opened is not None:
            total += i - opened
            opened = None
        if _COMPOUND_START.match(text, at):
            opened = i
    if opened is not None:
        total += len(starts) - opened
    return total


def cpython_pieces(text: str, lines: LineIndex):
    """CPython's tree of each piece of ``text`` in turn, with the positions of the whole text,
    then nothing more; None in place of a tree for a piece that does not parse or that nests
    deeper than LibCST survives (:func:`cpython_parse` answers for the whole text then).

    A piece ends before a line of about PIECE_LINES lines on that begins, in its first
    column, with a letter or ``_`` (not ``else``, ``elif``, ``except``, ``finally``). That
    the piece before parses alone proves the cut is between two top-level statements: a cut
    in a string, in brackets or after a backslash or a decorator leaves the piece open at
    its end, which CPython refuses; the line after begins a statement at column 0, where the
    whole text's tokenizer is at no indentation too. So the pieces' statements are the whole
    tree's. Where a piece does not parse, the cut moves to the next such line (a few times)."""
    starts = lines.starts
    count = len(starts)
    at = 1
    while at <= count:
        target = at + PIECE_LINES
        for _attempt in range(5):
            cut = target
            while cut <= count and (not _STATEMENT_START.match(text, starts[cut - 1])
                                    or _CLAUSE_START.match(text, starts[cut - 1])):
                cut += 1
            end = starts[cut - 1] if cut <= count else len(text)
            piece = text[starts[at - 1]:end]
            tree, exc = gated(_prescan.parse, "\n" * (at - 1) + piece)
            if tree is not None or cut > count or not isinstance(exc, SyntaxError):
                break
            target = cut + 1
        if tree is None or (_bool_chain_depth(piece, tree) or _long_dotted_import(piece, tree)) is not None:
            yield None
            return
        yield tree
        at = cut


def _parse_at(code: str, line: int) -> Optional[ast.Module]:
    """CPython's tree of ``code``, a part of a text that begins at the start of ``line``, with
    the text's positions."""
    tree, _ = gated(_prescan.parse, code)
    if tree is not None and line > 1:
        ast.increment_lineno(tree, line - 1)
    return tree


def reduced(text: str, lines: LineIndex, words) -> Optional[_inert.Reduction]:
    """The reduction of ``text`` for rules that look for ``words`` (``inert.seed_words``):
    CPython's tree without the runs of inert statements and, where there are runs, LibCST's
    tree with each as an ``Opaque`` statement; None: analyse the text as usual (it is not
    :func:`reducible`, a piece does not parse, or LibCST refuses the reduced text: the whole
    text's parse then says what it says). Reused once for the text reduced last."""
    last = getattr(_LAST_REDUCED, "value", None)
    _LAST_REDUCED.value = None
    if last is not None and last[0] is text and last[1] == words:
        return last[2]
    if not reducible(text):
        return None
    minimum = max(1, int(len(lines.starts) * REDUCE_MIN_SHARE))
    if len(lines.starts) - _compound_lines(text, lines.starts) < minimum:
        return None  # too few lines outside compound statements to leave enough out
    try:
        found = _inert.reduce(text, lines, words, cpython_pieces(text, lines), _parse_at, minimum)
        if found is None or not found.runs:
            return found
        module = found.restore(_parse_text(found.reduced_text()))
    except (cst.ParserSyntaxError, RecursionError, TooLarge):
        return None
    if module is None:
        return None
    found.module = module
    STATS["parse"] += 1
    STATS["parse:inert"] += found.statements
    return found


def statement_spans(analysis: FileAnalysis):
    """(statement, start, end) of the module's statements, computed once per analysis (and
    only as far as a caller reads: each fix asks for the statements before it)."""
    spans = analysis.spans
    positions = analysis.wrapper.resolve(PositionProvider)
    lines = analysis.lines
    body = analysis.module.body
    i = 0
    while i < len(body):
        while len(spans) <= i:
            stmt = body[len(spans)]
            rng = positions[stmt]
            spans.append((stmt, lines.offset(rng.start.line, rng.start.column),
                          lines.offset(rng.end.line, rng.end.column)))
        yield spans[i]
        i += 1


def too_much(exc: BaseException) -> str:
    """The message of ROC001 for a file rocmport cannot analyse whole: too large, nested too
    deep, or out of memory."""
    if isinstance(exc, TooLarge):
        return str(exc)
    if isinstance(exc, RecursionError):
        return "cannot analyse: nesting too deep (more levels than rocmport's parser and analyses can walk)"
    return "cannot analyse: not enough memory for this file"
