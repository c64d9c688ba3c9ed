"""The engine: one file in, findings (and the fixed text) out. It never prints.

For each file: decode the bytes (keeping BOM, cookie and line endings), run the byte-level
prefilter, parse once with LibCST, build one ``MetadataWrapper`` so every metadata provider
runs once, visit the tree once with every enabled rule batched together, drop suppressed
findings. ``fix`` repeats that until no applicable fix remains: it applies non-overlapping
fixes as text edits, inserts or updates the prelude, and keeps the original text for any fix
whose result would not parse.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import gc
import io
import os
import re
import threading
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Type

import libcst as cst
from libcst.metadata import PositionProvider

from rocmport.codemods import _opaque, _prescan, _walk
from rocmport.codemods._resolve import ScopeBindings, rocm_test_binding
from rocmport.codemods.base import PREFILTER, STATS, Metadata, Rule, RuleContext, RuleOptions
from rocmport.codemods.tool import FixFailed, UnreadableFile

from . import house, placement, prelude, reformat, suppression
from .config import Settings
from .findings import Applicability, Edit, Finding, Fix, Position
from .registry import visitor_rules
from .reports import FileReport
from .source import LineIndex, SourceError, SourceText, apply_edits, read_regular

MAX_FIX_PASSES = 8


# ------------------------------------------------------------------------------------------
# One analysis of one text
# ------------------------------------------------------------------------------------------

@dataclass
class Analysis:
    text: str
    findings: List[Finding]
    module: Optional[cst.Module] = None
    wrapper: Optional[Metadata] = None  # parents and positions on demand (MetadataWrapper's interface)
    lines: Optional[LineIndex] = None
    gate: str = prelude.DEFAULT_GATE
    gate_binding: Optional[Tuple[str, int]] = None  # the file's own gate binding statement
    block: Optional[prelude.Block] = None
    house: Optional[placement.HouseGate] = None  # the project's own ROCm test, when the gate is one
    spans: List[Tuple[cst.CSTNode, int, int]] = dataclasses.field(default_factory=list)  # _statement_spans
    # _gate_bound: where the first module-level statement that binds the gate begins (-1: none)
    gate_at: Optional[int] = None


def select_rules(settings: Settings, path: str) -> Tuple[FrozenSet[str], List[Type[Rule]]]:
    enabled = settings.enabled_codes(path)
    return enabled, [rule for rule in visitor_rules() if rule.CODE in enabled]


def analyze(text: str, path: str, settings: Settings, rules: Sequence[Type[Rule]],
            enabled: FrozenSet[str], index=None, partial: bool = False) -> Analysis:
    """Lint ``text`` once. Raises nothing for bad input: it becomes an ROC001 finding. With
    ``partial`` (a lint, whose tree no fix is applied to), the definitions that no rule
    run on the file reads are left unparsed (:func:`_parse_partial`)."""
    lines = LineIndex(text)
    if PREFILTER["enabled"]:
        triggered = text_triggered(rules, text)
    else:
        triggered = list(rules)
    if not triggered:
        # Nothing can match: only check that the file parses, with CPython's fast parser.
        error = _quick_syntax_error(text) if "ROC001" in enabled else None
        findings = [error] if error else []
        for f in findings:
            f.filename = path
        return Analysis(text, findings, lines=lines)
    tree, deep = _cpython_parse(text)
    if deep is not None:
        return Analysis(text, _roc001(path, *deep, enabled), lines=lines)
    facts = _prescan.Facts.of(tree) if tree is not None else None
    if facts is not None:
        facts.index, facts.path = index, path
    if facts is not None and PREFILTER["enabled"]:
        triggered = [r for r in triggered if r.may_match(facts)]
        if not triggered:
            return Analysis(text, [], lines=lines)  # it parses (CPython): nothing can match
    try:
        module = _parse_partial(text, lines, tree, facts, triggered) if partial and PREFILTER["enabled"] else None
        if module is None:
            module = _parse(text, tree)
    except cst.ParserSyntaxError as exc:
        return Analysis(text, _syntax_findings(path, text, exc, enabled), lines=lines)
    except RecursionError:
        return Analysis(text, _roc001(path, "cannot parse: nesting too deep", 1, 1, enabled), lines=lines)
    lost = _lost_continuation(text, module, lines)
    if lost is not None:
        return Analysis(text, _roc001(path, "cannot be checked safely: LibCST drops the backslash continuation"
                                            f" that begins line {lost}; join it to the next line", lost, 1,
                                      enabled), lines=lines)
    wrapper = Metadata(module, tree, text)
    block = prelude.find_block(text)
    gate, binding = _choose_gate(module, text, block)
    style = house.style_for(path)

    def run(gate: str) -> Optional[List[Finding]]:
        context = RuleContext(path=path, text=text, module=module, wrapper=wrapper, lines=lines,
                              gate_name=gate, options=RuleOptions(unsafe_fixes=settings.unsafe_fixes),
                              facts=facts, index=index)
        context.quote = style.quote
        context.scopes = ScopeBindings(module, wrapper.parents.get)
        try:
            # Not wrapper.visit_batched: that would resolve every declared provider up front.
            # Rules resolve metadata lazily through their context (Rule.get_metadata); the
            # visit records each node's parent on its way (Metadata.enter / leave). LibCST's
            # calls, in its order, without rebuilding the tree (_walk).
            _walk.visit_batched(module, [rule(context) for rule in triggered],
                                before_visit=wrapper.enter, after_leave=wrapper.leave, skip_whitespace=True)
        except RecursionError:
            return None
        finally:
            context.release()
        return _unsuppressed(context.findings, text, lines)

    findings = run(gate)
    own = None
    needy = [f for f in findings or () if f.fix is not None and f.fix.edits and "gate" in f.fix.requires]
    if needy and index is not None and binding is None and block is None:
        # The project's own ROCm test, where the file imports its module and every fix that
        # tests it comes after that import: the fixes are made again, testing it.
        own = placement.house_gate(module, wrapper, text, lines, index.module_name(path), index,
                                   _code_names(text), style.line_length, style.force_single_line)
        if own is not None and all(min(e.start for e in f.fix.edits) >= own.bound_at for f in needy):
            findings, gate = run(own.text), own.text
        else:
            own = None
    if findings is None:
        return Analysis(text, _roc001(path, "cannot analyse: nesting too deep", 1, 1, enabled), lines=lines)
    analysis = Analysis(text, findings, module, wrapper, lines, gate, binding, block, own)
    analysis.findings = _with_gate_edits(analysis, settings)
    analysis.findings = _graph_tests(analysis, path)
    return analysis


def text_triggered(rules: Sequence[Type[Rule]], text: str) -> List[Type[Rule]]:
    """The first prefilter: the rules whose ``TRIGGERS`` and ``WORDS`` ``text`` holds."""
    words: Dict[str, bool] = {}
    held: Dict[Tuple[str, ...], bool] = {}  # rules of a family share their triggers: one search each
    out = []
    for rule in rules:
        triggers = rule.TRIGGERS
        if triggers:
            found = held.get(triggers)
            if found is None:
                found = held[triggers] = any(t in text for t in triggers)
            if not found:
                continue
        if all(any(_holds_word(text, w, words) for w in group) for group in rule.WORDS):
            out.append(rule)
    return out


def _holds_word(text: str, word: str, seen: Dict[str, bool]) -> bool:
    """Does ``text`` hold ``word`` as a whole word (``\\bword\\b``: what a name or attribute
    spelled so is)? ``str.find`` and a look at each side: forty times faster than the regex."""
    found = seen.get(word)
    if found is None:
        found = False
        size = len(word)
        at = text.find(word)
        while at >= 0:
            before = text[at - 1] if at else " "
            after = text[at + size] if at + size < len(text) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                found = True
                break
            at = text.find(word, at + 1)
        seen[word] = found
    return found


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


def _cpython_parse(text: str) -> Tuple[Optional[ast.AST], Optional[Tuple[str, int, int]]]:
    """CPython's tree of ``text`` (None when it does not parse), and (message, row, column)
    when it nests deeper than CPython or LibCST accepts.

    LibCST's native parser overflows the C stack on such input (a segmentation fault that
    no ``except`` catches: about 2,000 nested brackets, 5,000 chained operators, or a flat
    chain of 7,000 ``and``) or takes minutes, so it must never see it; CPython's parser
    refuses most of it cheaply first, and :func:`_bool_chain_depth` the rest. The tree feeds
    the second prefilter (``rocmport.codemods._prescan``)."""
    tree, exc = _prescan.parse(text)
    if isinstance(exc, (RecursionError, MemoryError)):  # 3.11's parser: MemoryError on a stack overflow
        return None, ("cannot parse: nesting too deep", 1, 1)
    if isinstance(exc, SyntaxError) and exc.msg and "too many nested parentheses" in exc.msg:
        return None, (f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    if tree is not None:
        deep = _bool_chain_depth(text, tree)
        if deep is not None:
            return None, deep
    return tree, None


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


def _quick_syntax_error(text: str) -> Optional[Finding]:
    try:
        tree = compile(text, "<rocmport>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        deep = _bool_chain_depth(text, tree)
        return None if deep is None else _roc001("-", *deep, frozenset({"ROC001"}))[0]
    except (RecursionError, MemoryError):  # LibCST would overflow the C stack: see _too_deep
        return _roc001("-", "cannot parse: nesting too deep", 1, 1, frozenset({"ROC001"}))[0]
    except SyntaxError as exc:
        if exc.msg and "too many nested parentheses" in exc.msg:
            return _roc001("-", f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1,
                           frozenset({"ROC001"}))[0]
    except ValueError:
        pass
    # CPython's grammar is this interpreter's; LibCST's covers every version: it decides.
    try:
        _libcst_parse(text)
        return None
    except cst.ParserSyntaxError as exc:
        return _syntax_findings("-", text, exc, frozenset({"ROC001"}))[0]
    except RecursionError:
        return _roc001("-", "cannot parse: nesting too deep", 1, 1, frozenset({"ROC001"}))[0]


def _syntax_findings(path: str, text: str, exc: cst.ParserSyntaxError, enabled) -> List[Finding]:
    """ROC001 for a file LibCST cannot parse, with CPython's clearer message where it has one."""
    try:
        compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as syntax:
        if syntax.lineno:
            return _roc001(path, f"syntax error: {syntax.msg}", syntax.lineno, syntax.offset or 1, enabled)
    except (ValueError, RecursionError, MemoryError):
        pass
    else:  # valid Python that LibCST refuses: a limit of its grammar, not a syntax error
        joined = _joined_strings(text)
        if joined is not None:
            count, row, column = joined
            return _roc001(path, f"too complex for the parser: {count} implicitly joined string literals"
                                 f" (LibCST accepts {MAX_JOINED_STRINGS}); not analysed", row, column, enabled)
    return _roc001(path, f"syntax error: {_parser_message(exc)}", exc.raw_line, exc.raw_column + 1, enabled)


# A line that is only a backslash continuation (after blanks): before a statement, LibCST's
# tree leaves it out (``"\\\nx = 1\n"`` comes back as ``"x = 1\n"``), so positions past it
# are off by a line. Valid Python, rare: where the pattern is seen, the tree's code is compared
# with the text, and a file that does not come back whole is refused with a finding.
_CONTINUATION_LINE = re.compile(r"(?:^|[\r\n])[ \t\f]*\\(?:\r\n|\r|\n)")


def _lost_continuation(text: str, module: cst.Module, lines: LineIndex) -> Optional[int]:
    """The line of the first continuation-only line, when LibCST's tree drops one."""
    found = _CONTINUATION_LINE.search(text)
    if found is None or module.code == text:
        return None
    at = found.start() + (1 if text[found.start()] in "\r\n" else 0)
    return lines.position(at).row


def _roc001(path: str, message: str, row: int, column: int, enabled) -> List[Finding]:
    if "ROC001" not in enabled:
        return []
    pos = Position(max(row, 1), max(column, 1))
    return [Finding(UnreadableFile.CODE, UnreadableFile.NAME, message, pos, pos, filename=path)]


# ------------------------------------------------------------------------------------------
# Suppression: line and file noqa comments, read by rocmport.suppression (the same parser as
# for shell, YAML and .env files)
# ------------------------------------------------------------------------------------------

def _unsuppressed(findings: List[Finding], text: str, lines: LineIndex) -> List[Finding]:
    if not findings:
        return findings
    spans = [lines.line_span(row) for row in {f.start.row for f in findings}]
    return suppression.for_python(text, [text[start:end] for start, end in spans]).filter(findings)


# ------------------------------------------------------------------------------------------
# The gate name
# ------------------------------------------------------------------------------------------

def _code_names(text: str) -> Set[str]:
    """Every name token of the code (strings and comments do not count)."""
    names = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                names.add(tok.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):  # pragma: no cover - it parsed
        return {m.group(0) for m in re.finditer(r"\w+", text)}
    return names


def _choose_gate(module: cst.Module, text: str, block: Optional[prelude.Block]):
    """The name fixed code tests: the prelude's, the file's own binding, or a free name."""
    if block is not None:
        return block.gate, None
    own = rocm_test_binding(module, text)
    if own is not None:
        return own[0], ("stmt", id(own[1]))
    name = prelude.DEFAULT_GATE
    counter = 0
    taken = _code_names(text) if name in text else set()
    while name in taken:
        counter += 1
        name = "_rocmport_is_rocm" if counter == 1 else f"_rocmport_is_rocm_{counter}"
    return name, None


# ------------------------------------------------------------------------------------------
# Fixing
# ------------------------------------------------------------------------------------------

def _fix_key(f: Finding) -> Tuple[str, Tuple[Edit, ...]]:
    return (f.code, f.fix.edits if f.fix else ())


# The last text parsed and its tree, per thread: a fix pass checks that its result parses,
# and the next pass analyses that same text; one parse serves both (on a large file a parse
# is a good part of the run, and a tree its largest object).
_LAST_PARSE = threading.local()


def _parse(text: str, tree: Optional[ast.AST] = None, before: Optional[Tuple[Analysis, List[Edit]]] = None) -> cst.Module:
    """LibCST's tree of ``text`` (counted in ``STATS["parse"]``), reused once for the text
    :func:`_parse_error` parsed last; a large text is parsed in pieces (:func:`_parse_pieces`),
    or, when it is the text of an analysis with ``before`` = (that analysis, edits) applied,
    only where the edits are (:func:`_parse_edited`)."""
    last = getattr(_LAST_PARSE, "value", None)
    _LAST_PARSE.value = None
    if last is not None and last[0] is text:
        return last[1]
    STATS["parse"] += 1
    if text.count("\n", 0, PIECE_CHARS * 2) >= PIECE_LINES or len(text) > PIECE_CHARS * 2:
        module = _parse_edited(text, *before) if before is not None else None
        if module is None:
            module = _parse_pieces(text, tree)
        if module is not None:
            return module
    return _libcst_parse(text)


def _parse_partial(text: str, lines: LineIndex, tree: Optional[ast.AST], facts: Optional[_prescan.Facts],
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
        module = _opaque.restore(_parse(_opaque.reduce(text, found)), text, found)
    except (cst.ParserSyntaxError, RecursionError):
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


# LibCST validates every node it builds (``CSTNode.__post_init__``), its parser's too, whose
# output is valid by construction: a fifth of a parse ("PERF: ... avoid validating the tree
# when parsing a file", LibCST's own note there). While a parse runs, that check is off, where
# it is the one LibCST 1.x has (it calls ``_validate`` and nothing else).
_VALIDATE = cst.CSTNode.__post_init__
_SKIP_VALIDATION = getattr(_VALIDATE, "__code__", None) is not None and \
    _VALIDATE.__code__.co_names == ("_validate",)


def _no_validation(self) -> None:
    pass


_UNVALIDATED = _WhileHeld(lambda: setattr(cst.CSTNode, "__post_init__", _no_validation),
                          lambda: setattr(cst.CSTNode, "__post_init__", _VALIDATE))


def _libcst_parse(text: str) -> cst.Module:
    """``libcst.parse_module(text)``, without validating the nodes the parser builds."""
    if not _SKIP_VALIDATION:
        return cst.parse_module(text)
    with _UNVALIDATED:
        return cst.parse_module(text)


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


def _cuts(text: str, tree: Optional[ast.AST]) -> List[int]:
    """Offsets where ``text`` may be cut into pieces: the start of a top-level statement
    on the line right after a simple top-level statement (no comment or blank line between,
    no decorator, no block around), about PIECE_LINES lines apart, none before the first
    block of several lines."""
    if tree is None:
        tree, _ = _prescan.parse(text)
    if not isinstance(tree, ast.Module):
        return []
    lines = LineIndex(text)
    cuts: List[int] = []
    last_row = 1
    body = tree.body
    block = False  # the first piece must hold the file's first indented block (see _parse_pieces)
    for before, stmt in zip(body, body[1:]):
        block = block or (isinstance(before, _COMPOUND) and (before.end_lineno or 0) > before.lineno)
        if stmt.lineno - last_row < PIECE_LINES or not block:
            continue
        if isinstance(before, _COMPOUND) or getattr(stmt, "decorator_list", None) or stmt.col_offset != 0:
            continue
        if before.end_lineno is None or before.end_lineno + 1 != stmt.lineno:
            continue
        cuts.append(lines.offset(stmt.lineno, 0))
        last_row = stmt.lineno
    return cuts


def _parse_pieces(text: str, tree: Optional[ast.AST]) -> Optional[cst.Module]:
    """One Module from pieces of ``text`` parsed apart, or None (parse it whole). Each piece
    after the first is parsed behind a two-line block that gives it the first piece's
    default indentation and newline (which LibCST infers from the first it meets), and that
    block's statement is dropped."""
    cuts = _cuts(text, tree)
    if not cuts:
        return None
    bounds = list(zip([0] + cuts, cuts + [len(text)]))
    try:
        first = _libcst_parse(text[bounds[0][0]:bounds[0][1]])
        if first.footer or not any(isinstance(getattr(stmt, "body", None), cst.IndentedBlock)
                                   and stmt.body.indent is None for stmt in first.body):
            return None  # the file's first indented block is further on: its indentation is unknown here
        newline, indent = first.default_newline, first.default_indent
        lead = f"if 1:{newline}{indent}pass{newline}"
        body = list(first.body)
        last = first
        for start, end in bounds[1:]:
            STATS["parse:piece"] += 1
            if last.footer:
                return None  # only the last piece ends the file
            piece = _libcst_parse(lead + text[start:end])
            if (piece.header or piece.default_indent != indent or piece.default_newline != newline
                    or len(piece.body) < 2 or piece.body[1].leading_lines):
                return None
            body.extend(piece.body[1:])
            last = piece
    except (cst.ParserSyntaxError, RecursionError):
        return None  # the whole text's parse gives the error where it is
    return first.with_changes(body=body, footer=last.footer, has_trailing_newline=last.has_trailing_newline)


def _parse_edited(text: str, analysis: Analysis, edits: Sequence[Edit]) -> Optional[cst.Module]:
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
            piece = _libcst_parse(lead + text[start:end])
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


def _parse_error(text: str, before: Optional[Tuple[Analysis, List[Edit]]] = None) -> Optional[str]:
    try:
        module = _parse(text, before=before)
    except cst.ParserSyntaxError as exc:
        return f"{_parser_message(exc)} at line {exc.raw_line}"
    except RecursionError:
        return "nesting too deep"
    _LAST_PARSE.value = (text, module)
    return None


def _statement_spans(analysis: Analysis):
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


class _FunctionsAround(cst.CSTVisitor):
    """The function definitions around ``offset`` (a class of the module's, not of a call:
    a class made in a function would hold its cells, the file's positions among them, in a
    cycle)."""

    def __init__(self, positions, lines: LineIndex, offset: int):
        super().__init__()
        self.positions, self.lines, self.offset = positions, lines, offset
        self.found: List[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        rng = self.positions[node]
        start = self.lines.offset(rng.start.line, rng.start.column)
        end = self.lines.offset(rng.end.line, rng.end.column)
        if start <= self.offset < end:
            self.found.append(node)
            return True
        return False


def _enclosing_functions(analysis: Analysis, offset: int) -> List[cst.FunctionDef]:
    """The function definitions around ``offset``, outermost first."""
    finder = _FunctionsAround(analysis.wrapper.resolve(PositionProvider), analysis.lines, offset)
    # only the statements around the offset's line can hold it (the others are not generated)
    for stmt in analysis.wrapper.statements_at(analysis.lines.position(offset).row):
        _walk.visit(stmt, finder)
    return finder.found


def _gate_bound(analysis: Analysis, before: int) -> bool:
    """Is the gate name already bound at module level before ``before`` (by the file's own
    test, a gate line, or a block that defines it)?"""
    if analysis.gate_at is None:  # found once per file, reading positions of that statement only
        gate = analysis.gate
        analysis.gate_at = -1
        for stmt in analysis.module.body:
            if ("stmt", id(stmt)) == analysis.gate_binding or (isinstance(stmt, cst.SimpleStatementLine) and any(
                    isinstance(small, (cst.Assign, cst.AnnAssign)) and gate in _assigned_names(small)
                    for small in stmt.body)):
                start = analysis.wrapper.resolve(PositionProvider)[stmt].start
                analysis.gate_at = analysis.lines.offset(start.line, start.column)
                break
    return 0 <= analysis.gate_at < before


def _assigned_names(small: cst.BaseSmallStatement) -> Set[str]:
    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
    return {t.value for t in targets if isinstance(t, cst.Name)}


def _with_gate_edits(analysis: Analysis, settings: Settings) -> List[Finding]:
    """Each fix that tests the gate carries the edit that binds it (JSON and SARIF fixes are
    then complete); identical edits of several fixes are applied once."""
    needy = [f for f in analysis.findings if f.fix is not None and f.fix.edits and "gate" in f.fix.requires]
    if not needy:
        return analysis.findings
    if analysis.house is not None:  # the project's own test, imported before every fix (analyze)
        wanted = {id(f) for f in needy}
        added = (analysis_edit(analysis, analysis.house.edit),) if analysis.house.edit is not None else ()
        return [dataclasses.replace(f, fix=dataclasses.replace(
                    f.fix, edits=tuple(f.fix.edits) + added, requires=tuple(r for r in f.fix.requires if r != "gate")))
                if id(f) in wanted else f for f in analysis.findings]
    placer = None
    module_level: List[Tuple[int, Tuple[Edit, ...]]] = []  # (gate line offset, its edits), planned so far
    fixed: Dict[int, Finding] = {}
    for f in sorted(needy, key=lambda f: min(e.start for e in f.fix.edits)):
        before = min(e.start for e in f.fix.edits)
        requires = tuple(r for r in f.fix.requires if r != "gate")
        if _gate_bound(analysis, before):
            fixed[id(f)] = dataclasses.replace(f, fix=dataclasses.replace(f.fix, requires=requires))
            continue
        earlier = [edits for at, edits in module_level if at <= before]
        if earlier:  # a module-level gate line planned for an earlier fix binds it here too
            fixed[id(f)] = dataclasses.replace(f, fix=dataclasses.replace(
                f.fix, edits=tuple(f.fix.edits) + earlier[0], requires=requires))
            continue
        if placer is None:
            style = house.style_for(f.filename)
            placer = placement.Placer(analysis.module, analysis.wrapper, analysis.text, analysis.lines,
                                      analysis.gate, quote=style.quote, lines_after_imports=style.lines_after_imports)
        plan = placer.plan(before, _enclosing_functions(analysis, before))
        if plan.edit is None:
            fix = dataclasses.replace(f.fix, applicability=Applicability.DISPLAY_ONLY,
                                      message=f"{f.fix.message} (not applied: {plan.problem})")
            fixed[id(f)] = dataclasses.replace(f, fix=fix)
            continue
        added = tuple(analysis_edit(analysis, e) for e in plan.extra + (plan.edit,))
        if re.search(rf"(?:^|[\r\n]){re.escape(analysis.gate)} = ", plan.edit.content):  # any newline
            module_level.append((plan.edit.start, added))
        fixed[id(f)] = dataclasses.replace(f, fix=dataclasses.replace(
            f.fix, edits=tuple(f.fix.edits) + added, requires=requires))
    return [fixed.get(id(f), f) for f in analysis.findings]


_GRAPH_SUBJECT_RE = re.compile(r"(?i)cuda_?graphs?|cudagraphs?|reduce_overhead|graph_capture")
_TEST_FILE_RE = re.compile(r"(?:^|[\\/])(?:test_[^\\/]*|[^\\/]*_test)\.py$")
# Fixes that turn CUDA graphs off: in a test of CUDA graphs they would make it test nothing.
_GRAPH_OFF_PREFIXES = ("ROC1", "ROC2", "ROC6")


def _graph_tests(analysis: Analysis, path: str) -> List[Finding]:
    """In a test whose subject is CUDA graphs (by file or test name), a fix that turns them off
    on ROCm would leave a test that passes while testing no graph: offer the skip instead."""
    if not _TEST_FILE_RE.search(path.replace("\\", "/")):
        return analysis.findings
    whole_file = _GRAPH_SUBJECT_RE.search(os.path.basename(path)) is not None
    out = []
    for f in analysis.findings:
        if f.fix is None or not f.fix.edits or not f.code.startswith(_GRAPH_OFF_PREFIXES):
            out.append(f)
            continue
        about_graphs = whole_file or any(
            _GRAPH_SUBJECT_RE.search(func.name.value) for func in _enclosing_functions(analysis, f.span[0]))
        if not about_graphs:
            out.append(f)
            continue
        fix = Fix(Applicability.DISPLAY_ONLY,
                  "This test is about CUDA graphs: skip it on ROCm instead, e.g."
                  " `@pytest.mark.skipif(torch.version.hip is not None, reason=\"CUDA graphs are"
                  " not used on ROCm\")`")
        out.append(dataclasses.replace(f, fix=fix))
    return out


def analysis_edit(analysis: Analysis, edit: Edit) -> Edit:
    """``edit`` with its 1-based positions filled in, as rules' edits have them."""
    lines = analysis.lines
    start, end = lines.position(edit.start), lines.position(edit.end)
    return Edit(edit.start, edit.end, edit.content, Position(start.row, start.column), Position(end.row, end.column))


def _package_of(path: str) -> Optional[Tuple[Path, str]]:
    """(top package directory, dotted package name) of a file inside a package."""
    if path in ("", "-"):
        return None
    directory = Path(path).resolve().parent
    if not (directory / "__init__.py").is_file():
        return None
    parts = []
    while (directory / "__init__.py").is_file() and directory.name.isidentifier():
        parts.append(directory.name)
        directory = directory.parent
    if not parts:
        return None
    top = directory / parts[-1]
    return top, ".".join(reversed(parts[-1:]))


_MAIN_RE = re.compile(r"""__name__\s*==\s*['"]__main__['"]""")


def prelude_style(path: str, text: str, options: prelude.PreludeOptions):
    """"inline" or ("import", top package directory, package name)."""
    if options.style != "module":
        return "inline"  # the default: no new file
    package = _package_of(path)
    if package is None:
        return "inline"
    return ("import",) + package


def _module_torch_name(analysis: Analysis, before: int) -> Optional[str]:
    """The name a module-level ``import torch`` binds before ``before`` (None: none)."""
    found = None
    for stmt, start, _end in _statement_spans(analysis):
        if start >= before:
            break
        name = placement.torch_binding(stmt)
        if name and (found is None or name == "torch"):
            found = name
    return found


def _prelude_edit(analysis: Analysis, requires: Set[str], before: int, path: str,
                  settings: Settings, inline: bool = False) -> Tuple[Optional[Edit], Dict[str, bytes], Optional[str]]:
    """The marker block for the parts in ``requires`` (the graph helper): (edit, generated
    files, problem). A block whose content rocmport did not write is never replaced."""
    options = settings.prelude
    text = analysis.text
    newline = analysis.lines.newline()
    block = analysis.block
    if block is not None and not prelude.is_own_block(text, block, options):
        if set(requires) <= set(block.parts):
            return None, {}, None
        return None, {}, (f"the rocmport block at line {analysis.lines.position(block.start).row} was edited"
                          " by hand; it is not regenerated")
    parts = set(requires) | (set(block.parts) if block else set())
    gate = analysis.gate
    style = "inline" if inline else prelude_style(path, text, options)
    if block is not None:
        style = "inline" if block.style == "inline" else style
    # the gate is the file's own line (placement): a block only keeps one it had
    define_gate = block is not None and block.style == "inline" and f"{gate} = _rocmport_hip" in text[block.start:block.end]
    extra: Dict[str, bytes] = {}
    if style == "inline":
        at = block.start if block else placement.Placer(analysis.module, analysis.wrapper, text, analysis.lines,
                                                        gate).after_imports(before)
        torch_name = _module_torch_name(analysis, at)
        rendered = prelude.render_inline(gate, parts, options, define_gate=define_gate, newline=newline,
                                         torch_name=torch_name)
    else:
        _, top, package = style
        rendered = prelude.render_import(package, gate, parts, options, define_gate=define_gate, newline=newline)
        module_path = top / f"{options.module_name}.py"
        wanted = prelude.render_module(options, parts, header=house.license_header(top)).encode("utf-8")
        try:
            current = read_regular(str(module_path))
        except OSError:
            current = None
        if current is not None and not prelude.is_generated_module(current):
            return None, {}, f"{module_path.name} exists and was not written by rocmport"
        if current is None or not prelude.same_code(current, wanted):
            extra[str(module_path)] = wanted
    if block is not None:
        if prelude.same_code(text[block.start:block.end], rendered):
            return None, extra, None
        return Edit(block.start, block.end, rendered), extra, None
    offset = placement.Placer(analysis.module, analysis.wrapper, text, analysis.lines, gate).after_imports(before)
    rest = text[offset:]
    after = "" if rest.startswith(("\n", "\r")) or not rest.strip() else newline
    return Edit(offset, offset, (newline if offset else "") + rendered + after), extra, None


def resolved_prelude(settings: Settings, path: str) -> Settings:
    """``settings`` with the RNG patch decided: on where the project may run on torch < 2.10
    (its declared requirement, read by ``house``), unless the configuration says."""
    options = settings.prelude
    if options.rng_patch is not None:
        return settings
    directory = Path.cwd() if path in ("", "-") else Path(os.path.abspath(path)).parent
    rng = house.may_run_on_torch_before(directory, (2, 10))
    return settings.with_overrides(prelude=dataclasses.replace(options, rng_patch=rng))


def _with_setup(text: str, path: str, settings: Settings, rules, enabled, extra: Dict[str, bytes]):
    """An entry point's text with the set-up block (gate and process-wide set-up) added or
    brought up to date; unchanged when the block is there or was edited by hand."""
    tree, deep = _cpython_parse(text)
    if tree is None or deep is not None:
        return text, extra
    try:
        module = _parse(text)
    except (cst.ParserSyntaxError, RecursionError):
        return text, extra
    block = prelude.find_block(text)
    gate, binding = _choose_gate(module, text, block)
    analysis = Analysis(text, [], module, Metadata(module), LineIndex(text), gate, binding, block)
    settings = resolved_prelude(settings, path)
    pedit, files, problem = _prelude_edit(analysis, {"setup"}, len(text), path, settings, inline=True)
    if problem is not None or pedit is None:
        return text, extra
    updated = apply_edits(text, [pedit])
    if _parse_error(updated) is not None:
        return text, extra
    return updated, {**extra, **files}


def _binds_gate(content: str, gate: str) -> bool:
    return re.search(rf"(?:^|[\r\n])[ \t]*{re.escape(gate)} = ", content) is not None  # any newline


def fix_text(text: str, path: str, settings: Settings, rules, enabled, index=None) -> Tuple[str, Analysis, int, List[Finding], Dict[str, bytes]]:
    """Apply fixes until none applies. Returns (text, last analysis, fixes applied, notes, extra files)."""
    unsafe = settings.unsafe_fixes
    failed: Set = set()
    notes: List[Finding] = []
    applied = 0
    extra: Dict[str, bytes] = {}
    for _ in range(MAX_FIX_PASSES):
        analysis = analyze(text, path, settings, rules, enabled, index)
        candidates = [f for f in analysis.findings if f.applies(unsafe) and _fix_key(f) not in failed]
        if not candidates or analysis.module is None:
            _LAST_PARSE.value = None
            return text, analysis, applied, notes, extra
        chosen: List[Finding] = []
        taken: List[Edit] = []
        for f in sorted(candidates, key=lambda f: (f.span, f.code)):
            own = [e for e in f.fix.edits if e not in taken]
            if any(e.overlaps(t) for e in own for t in taken):
                continue
            chosen.append(f)
            taken.extend(own)

        def attempt(group: List[Finding]):
            edits = placement.dedupe([e for f in group for e in f.fix.edits])
            requires = {r for f in group for r in f.fix.requires} - {"gate"}
            files: Dict[str, bytes] = {}
            if requires:
                pedit, files, problem = _prelude_edit(analysis, requires, min(e.start for e in edits), path, settings)
                if problem is not None:
                    return None, files, problem
                if pedit is not None:
                    # the gate line and a new block at one point: the gate first, then the block
                    for i, e in enumerate(edits):
                        if e.start == e.end == pedit.start and _binds_gate(e.content, analysis.gate):
                            newline = analysis.lines.newline()
                            edits[i] = Edit(e.start, e.end, e.content.rstrip("\r\n") + newline * 2
                                            + pedit.content.lstrip("\r\n"))
                            pedit = None
                            break
                if pedit is not None:
                    if any(pedit.overlaps(e) for e in edits):
                        return None, files, "the generated block would overlap the fix"
                    edits.append(pedit)
            new_text = apply_edits(text, edits)
            error = _parse_error(new_text, (analysis, edits))
            return (None if error else new_text), files, (f"the result would not parse ({error})" if error else None)

        new_text, files, error = attempt(chosen)
        if new_text is None:
            good = []
            for f in chosen:
                t, _, reason = attempt([f])
                if t is None:
                    failed.add(_fix_key(f))
                    notes.append(_roc002(f, f"fix for {f.code} not applied: {reason}", enabled))
                else:
                    good.append(f)
            if not good:
                continue
            chosen = good
            new_text, files, error = attempt(chosen)
            if new_text is None:  # each applies alone, not together: one now, the rest next pass
                chosen = good[:1]
                new_text, files, error = attempt(chosen)
        text = new_text
        applied += len(chosen)
        extra.update(files)
    analysis = analyze(text, path, settings, rules, enabled, index)
    remaining = [f for f in analysis.findings if f.applies(unsafe) and _fix_key(f) not in failed]
    for f in remaining:
        notes.append(_roc002(f, f"fix for {f.code} did not settle after {MAX_FIX_PASSES} passes; the rest was kept", enabled))
    _LAST_PARSE.value = None
    return text, analysis, applied, notes, extra


def _roc002(f: Finding, message: str, enabled) -> Finding:
    return Finding(FixFailed.CODE, FixFailed.NAME, message, f.start, f.end, filename=f.filename, span=f.span) \
        if "ROC002" in enabled else None


# ------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------

def check_bytes(data: bytes, path: str, settings: Settings, *, fix: bool = False, index=None) -> FileReport:
    """Lint (or fix) the bytes of one Python file. Never raises for bad input. (Files of other
    kinds -- notebooks, shell, Dockerfiles, YAML, .env -- go through ``rocmport.inputs``.)"""
    report = FileReport(path=path, original=data)
    enabled, rules = select_rules(settings, path)
    try:
        source = SourceText.from_bytes(data)
    except SourceError as exc:
        report.findings = _roc001(path, str(exc), exc.row, exc.column, enabled)
        return report
    with _collector_paused:
        try:
            if fix:
                text, analysis, applied, notes, extra = fix_text(source.text, path, settings, rules, enabled, index)
                if settings.is_entry_point(path):
                    text, extra = _with_setup(text, path, settings, rules, enabled, extra)
                    analysis = analyze(text, path, settings, rules, enabled, index)
                if text != source.text:
                    formatted = reformat.reformat(source.text, text, house.style_for(path), path, analysis.lines.newline())
                    if formatted != text:
                        text = formatted
                        analysis = analyze(text, path, settings, rules, enabled, index)
                report.findings = analysis.findings + [n for n in notes if n is not None]
                report.fixes_applied = applied
                report.extra_files = extra
                if text != source.text:
                    problem = source.rewrite_problem(data)
                    fixed = source.encode_changed(text) if problem is None else None
                    if fixed is None:  # keep every byte: no fix rather than a changed file
                        problem = problem or f"the fixed text cannot be encoded in {source.encoding} byte for byte"
                        findings = analyze(source.text, path, settings, rules, enabled, index).findings
                        notes = [_roc002(f, f"fix for {f.code} not applied: {problem}; the file is left as it was",
                                         enabled) for f in findings if f.applies(settings.unsafe_fixes)]
                        report.findings = findings + [n for n in notes if n is not None]
                        report.fixes_applied, report.extra_files = 0, {}
                    else:
                        report.fixed = fixed
            else:
                report.findings = analyze(source.text, path, settings, rules, enabled, index,
                                          partial=True).findings
        except Exception as exc:  # a bug in rocmport: report it, go on with other files
            import traceback

            report.internal_error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
            report.findings = []
    for f in report.findings:
        f.filename = path
    report.findings.sort(key=Finding.sort_key)
    return report
