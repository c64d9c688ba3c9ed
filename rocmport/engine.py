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
import io
import os
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Type

import libcst as cst
from libcst.metadata import PositionProvider

from codemods import _prescan, env_files
from codemods.base import PREFILTER, Rule, RuleContext, RuleOptions, dotted_name
from codemods.tool import FixFailed, UnreadableFile

from . import prelude
from .config import Settings
from .findings import Edit, Finding, Position
from .registry import visitor_rules
from .source import LineIndex, SourceError, SourceText, apply_edits

MAX_FIX_PASSES = 8


@dataclass
class FileReport:
    """What the engine found in one file, and what ``fix`` would make of it."""

    path: str
    findings: List[Finding] = field(default_factory=list)
    original: Optional[bytes] = None
    fixed: Optional[bytes] = None  # the fixed bytes, when they differ from the original
    fixes_applied: int = 0
    extra_files: Dict[str, bytes] = field(default_factory=dict)  # generated prelude module
    internal_error: Optional[str] = None


# ------------------------------------------------------------------------------------------
# One analysis of one text
# ------------------------------------------------------------------------------------------

@dataclass
class Analysis:
    text: str
    findings: List[Finding]
    module: Optional[cst.Module] = None
    wrapper: Optional[cst.MetadataWrapper] = None
    lines: Optional[LineIndex] = None
    gate: str = prelude.DEFAULT_GATE
    gate_binding: Optional[Tuple[int, int]] = None  # span of the file's own gate binding
    block: Optional[prelude.Block] = None


def select_rules(settings: Settings, path: str) -> Tuple[FrozenSet[str], List[Type[Rule]]]:
    enabled = settings.enabled_codes(path)
    return enabled, [rule for rule in visitor_rules() if rule.CODE in enabled]


def analyze(text: str, path: str, settings: Settings, rules: Sequence[Type[Rule]],
            enabled: FrozenSet[str], index=None) -> Analysis:
    """Lint ``text`` once. Raises nothing for bad input: it becomes an ROC001 finding."""
    lines = LineIndex(text)
    if PREFILTER["enabled"]:
        triggered = [r for r in rules if not r.TRIGGERS or any(t in text for t in r.TRIGGERS)]
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
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return Analysis(text, _syntax_findings(path, text, exc, enabled), lines=lines)
    except RecursionError:
        return Analysis(text, _roc001(path, "cannot parse: nesting too deep", 1, 1, enabled), lines=lines)
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    block = prelude.find_block(text)
    gate, binding = _choose_gate(module, text, block)
    context = RuleContext(path=path, text=text, module=module, wrapper=wrapper, lines=lines,
                          gate_name=gate, options=RuleOptions(unsafe_fixes=settings.unsafe_fixes),
                          facts=facts, index=index)
    visitors = [rule(context) for rule in triggered]
    try:
        # Not wrapper.visit_batched: that would resolve every declared provider up front.
        # Rules resolve metadata lazily through their context (Rule.get_metadata).
        cst.visit_batched(module, visitors)
    except RecursionError:
        return Analysis(text, _roc001(path, "cannot analyse: nesting too deep", 1, 1, enabled), lines=lines)
    findings = _unsuppressed(context.findings, text, lines)
    return Analysis(text, findings, module, wrapper, lines, gate, binding, block)


def _parser_message(exc: cst.ParserSyntaxError) -> str:
    message = exc.message.strip().splitlines()[0] if exc.message else "invalid syntax"
    return message


def _cpython_parse(text: str) -> Tuple[Optional[ast.AST], Optional[Tuple[str, int, int]]]:
    """CPython's tree of ``text`` (None when it does not parse), and (message, row, column)
    when it nests deeper than CPython accepts.

    LibCST's native parser overflows the C stack on such input (a segmentation fault that
    no ``except`` catches: about 2,000 nested brackets, or 20,000 chained operators) or
    takes minutes, so it must never see it; CPython's parser refuses it cheaply first. The
    tree feeds the second prefilter (``codemods._prescan``)."""
    tree, exc = _prescan.parse(text)
    if isinstance(exc, (RecursionError, MemoryError)):  # 3.11's parser: MemoryError on a stack overflow
        return None, ("cannot parse: nesting too deep", 1, 1)
    if isinstance(exc, SyntaxError) and exc.msg and "too many nested parentheses" in exc.msg:
        return None, (f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    return tree, None


def _quick_syntax_error(text: str) -> Optional[Finding]:
    try:
        compile(text, "<rocmport>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        return None
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
        cst.parse_module(text)
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
    return _roc001(path, f"syntax error: {_parser_message(exc)}", exc.raw_line, exc.raw_column + 1, enabled)


def _roc001(path: str, message: str, row: int, column: int, enabled) -> List[Finding]:
    if "ROC001" not in enabled:
        return []
    pos = Position(max(row, 1), max(column, 1))
    return [Finding(UnreadableFile.CODE, UnreadableFile.NAME, message, pos, pos, filename=path)]


# ------------------------------------------------------------------------------------------
# Suppression: "# noqa", "# noqa: ROC101", and file-level "# rocmport: noqa[: ROC5]"
# ------------------------------------------------------------------------------------------

_NOQA_RE = re.compile(r"#\s*noqa(?::[\s]*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_FILE_NOQA_RE = re.compile(r"^#\s*rocmport\s*:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:[\s,]+[A-Z]+[0-9]*)*))?\s*$", re.I)


def _comments(text: str):
    """(row, column, comment text, alone on its line) for every comment in ``text``."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                row, col = tok.start
                yield row, col, tok.string, tok.line[:col].strip() == ""
    except (tokenize.TokenError, SyntaxError, IndentationError):  # pragma: no cover - parsed OK
        return


def _unsuppressed(findings: List[Finding], text: str, lines: LineIndex) -> List[Finding]:
    if not findings or "noqa" not in text:
        return findings
    line_codes: Dict[int, Optional[Set[str]]] = {}
    file_codes: Optional[Set[str]] = set()
    file_all = False
    for row, _col, comment, alone in _comments(text):
        if alone:
            match = _FILE_NOQA_RE.match(comment)
            if match:
                if match.group("codes"):
                    file_codes.update(c.upper() for c in re.split(r"[\s,]+", match.group("codes")) if c)
                else:
                    file_all = True
                continue
        match = _NOQA_RE.search(comment)
        if match:
            codes = match.group("codes")
            line_codes[row] = None if not codes else {c.upper() for c in re.split(r"[\s,]+", codes) if c}
    if file_all:
        return []
    kept = []
    for f in findings:
        if any(f.code.startswith(c) for c in file_codes):
            continue
        if f.start.row in line_codes:
            codes = line_codes[f.start.row]
            if codes is None or any(f.code.startswith(c) for c in codes):
                continue
        kept.append(f)
    return kept


# ------------------------------------------------------------------------------------------
# The gate name
# ------------------------------------------------------------------------------------------

def _torch_aliases(module: cst.Module) -> Set[str]:
    names = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if isinstance(alias.name, cst.Name) and alias.name.value == "torch":
                            names.add(alias.asname.name.value if alias.asname else "torch")
                        elif alias.asname is None and (dotted_name(alias.name) or "").startswith("torch."):
                            names.add("torch")
    return names


def means_rocm_build(expr: cst.BaseExpression, torch_names: Set[str]) -> bool:
    """Does ``expr`` mean exactly "this torch is a ROCm build"?"""
    def is_hip(node) -> bool:  # torch.version.hip
        name = dotted_name(node) or ""
        return any(name == f"{t}.version.hip" for t in torch_names)

    def is_getattr_hip(node) -> bool:  # getattr(torch.version, "hip", None)
        return (isinstance(node, cst.Call) and dotted_name(node.func) == "getattr" and len(node.args) == 3
                and any(dotted_name(node.args[0].value) == f"{t}.version" for t in torch_names)
                and isinstance(node.args[1].value, cst.SimpleString)
                and node.args[1].value.evaluated_value == "hip"
                and isinstance(node.args[2].value, cst.Name) and node.args[2].value.value == "None")

    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        target = expr.comparisons[0]
        if (isinstance(target.operator, (cst.IsNot, cst.NotEqual)) and isinstance(target.comparator, cst.Name)
                and target.comparator.value == "None"):
            return is_hip(expr.left) or is_getattr_hip(expr.left)
    if isinstance(expr, cst.Call) and dotted_name(expr.func) == "bool" and len(expr.args) == 1:
        return is_hip(expr.args[0].value) or is_getattr_hip(expr.args[0].value)
    return False


def _choose_gate(module: cst.Module, text: str, block: Optional[prelude.Block]):
    """The name fixed code tests: the prelude's, the file's own binding, or a free name."""
    if block is not None:
        return block.gate, None
    torch_names = _torch_aliases(module)
    if torch_names:
        bindings: Dict[str, List[cst.CSTNode]] = {}
        for stmt in module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                targets = []
                if isinstance(small, cst.Assign) and len(small.targets) == 1:
                    targets = [small.targets[0].target]
                    value = small.value
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    targets = [small.target]
                    value = small.value
                for target in targets:
                    if isinstance(target, cst.Name):
                        bindings.setdefault(target.value, []).append((stmt, value))
        for name, assigned in bindings.items():
            if len(assigned) == 1 and means_rocm_build(assigned[0][1], torch_names):
                if len(re.findall(rf"(?<![\w.]){re.escape(name)}\s*=[^=]", text)) == 1:
                    return name, ("stmt", id(assigned[0][0]))
    name = prelude.DEFAULT_GATE
    counter = 0
    while re.search(rf"\b{re.escape(name)}\b", text):
        counter += 1
        name = "_rocmport_is_rocm" if counter == 1 else f"_rocmport_is_rocm_{counter}"
    return name, None


# ------------------------------------------------------------------------------------------
# Fixing
# ------------------------------------------------------------------------------------------

def _fix_key(f: Finding) -> Tuple[str, Tuple[Edit, ...]]:
    return (f.code, f.fix.edits if f.fix else ())


def _parse_error(text: str) -> Optional[str]:
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return f"{_parser_message(exc)} at line {exc.raw_line}"
    except RecursionError:
        return "nesting too deep"
    return None


def _statement_spans(analysis: Analysis):
    positions = analysis.wrapper.resolve(PositionProvider)
    lines = analysis.lines
    for stmt in analysis.module.body:
        rng = positions[stmt]
        yield stmt, lines.offset(rng.start.line, rng.start.column), lines.offset(rng.end.line, rng.end.column)


def _is_anchor(stmt: cst.CSTNode, index: int) -> bool:
    """Docstring, __future__ import or torch import: the prelude goes after these."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
            return True
        if isinstance(small, cst.ImportFrom) and small.module is not None:
            name = dotted_name(small.module) or ""
            if name == "__future__" or name == "torch" or name.startswith("torch."):
                return True
        if isinstance(small, cst.Import):
            if any(dotted_name(a.name) == "torch" or (dotted_name(a.name) or "").startswith("torch.") for a in small.names):
                return True
    return False


def _insertion_point(analysis: Analysis, before: int) -> Tuple[int, bool]:
    """Where a new prelude block goes: after the docstring, ``__future__`` and torch imports
    that precede the first fixed statement. Returns (offset, follows an anchor)."""
    lines = analysis.lines
    anchor_end: Optional[int] = None
    first_start: Optional[int] = None
    leading = True  # still inside the file's opening run of docstring and imports
    for index, (stmt, start, end) in enumerate(_statement_spans(analysis)):
        if first_start is None:
            first_start = start
        if end > before:
            limit = lines.line_span(lines.position(start).row)[0]
            break
        is_import = _is_anchor(stmt, index) or (
            isinstance(stmt, cst.SimpleStatementLine)
            and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body))
        leading = leading and is_import
        if (leading and is_import) or _is_anchor(stmt, index) or ("stmt", id(stmt)) == analysis.gate_binding:
            anchor_end = end
    else:
        limit = len(analysis.text)
    if anchor_end is None:
        start = first_start if first_start is not None else len(analysis.text)
        return lines.line_span(lines.position(start).row)[0] if start < len(analysis.text) else start, False
    row = lines.position(anchor_end).row
    offset = lines.starts[row] if row < len(lines.starts) else len(analysis.text)
    return min(offset, limit), True


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
    if options.style == "inline":
        return "inline"
    package = _package_of(path)
    if package is None:
        return "inline"
    if options.style == "auto" and _MAIN_RE.search(text):
        return "inline"  # a script inside a package: it may run as __main__, keep it whole
    return ("import",) + package


def _prelude_edit(analysis: Analysis, requires: Set[str], before: int, path: str,
                  settings: Settings) -> Tuple[Optional[Edit], Dict[str, bytes]]:
    options = settings.prelude
    text = analysis.text
    newline = analysis.lines.newline()
    block = analysis.block
    parts = set(requires) | (set(block.parts) if block else set())
    gate = analysis.gate
    style = prelude_style(path, text, options)
    if block is not None:
        style = "inline" if block.style == "inline" else style
    # Reuse the file's own gate binding only when it is bound before the prelude runs.
    define_gate = True
    if analysis.gate_binding is not None:
        define_gate = False
        for stmt, start, end in _statement_spans(analysis):
            if ("stmt", id(stmt)) == analysis.gate_binding:
                insertion = block.start if block else _insertion_point(analysis, before)[0]
                define_gate = end > insertion
                break
    elif block is not None and f"{gate} = _rocmport_hip" not in text[block.start:block.end] and block.style == "inline":
        define_gate = False
    extra: Dict[str, bytes] = {}
    if style == "inline":
        rendered = prelude.render_inline(gate, parts, options, define_gate=define_gate, newline=newline)
    else:
        _, top, package = style
        rendered = prelude.render_import(package, gate, parts, options, define_gate=define_gate, newline=newline)
        module_path = top / f"{options.module_name}.py"
        wanted = prelude.render_module(options).encode("utf-8")
        try:
            current = module_path.read_bytes()
        except OSError:
            current = None
        if current != wanted:
            extra[str(module_path)] = wanted
    if block is not None:
        if text[block.start:block.end] == rendered:
            return None, extra
        return Edit(block.start, block.end, rendered), extra
    offset, after_anchor = _insertion_point(analysis, before)
    blank = newline if after_anchor else ""
    trailing = "" if text.startswith(("\n", "\r"), offset) else newline
    return Edit(offset, offset, blank + rendered + trailing), extra


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
            if analysis.block is not None and analysis.module is not None:
                # Regenerate a block written by another rocmport version or other settings.
                pedit, files = _prelude_edit(analysis, set(), analysis.block.start, path, settings)
                extra.update(files)
                if pedit is not None:
                    updated = apply_edits(text, [pedit])
                    if _parse_error(updated) is None:
                        text = updated
                        analysis = analyze(text, path, settings, rules, enabled, index)
            return text, analysis, applied, notes, extra
        chosen: List[Finding] = []
        taken: List[Edit] = []
        for f in sorted(candidates, key=lambda f: (f.span, f.code)):
            if any(e.overlaps(t) for e in f.fix.edits for t in taken):
                continue
            chosen.append(f)
            taken.extend(f.fix.edits)

        def attempt(group: List[Finding]):
            edits = [e for f in group for e in f.fix.edits]
            requires = {r for f in group for r in f.fix.requires}
            files: Dict[str, bytes] = {}
            if requires:
                pedit, files = _prelude_edit(analysis, requires, min(e.start for e in edits), path, settings)
                if pedit is not None:
                    if any(pedit.overlaps(e) for e in edits):
                        return None, files, "the prelude would overlap the fix"
                    edits.append(pedit)
            new_text = apply_edits(text, edits)
            error = _parse_error(new_text)
            return (None if error else new_text), files, error

        new_text, files, error = attempt(chosen)
        if new_text is None:
            good = []
            for f in chosen:
                t, _, reason = attempt([f])
                if t is None:
                    failed.add(_fix_key(f))
                    notes.append(_roc002(f, f"fix for {f.code} not applied: the result would not parse ({reason})", enabled))
                else:
                    good.append(f)
            if not good:
                continue
            chosen = good
            new_text, files, error = attempt(chosen)
            if new_text is None:  # pragma: no cover - each parsed alone but not together
                for f in chosen:
                    failed.add(_fix_key(f))
                continue
        text = new_text
        applied += len(chosen)
        extra.update(files)
    analysis = analyze(text, path, settings, rules, enabled, index)
    remaining = [f for f in analysis.findings if f.applies(unsafe) and _fix_key(f) not in failed]
    for f in remaining:
        notes.append(_roc002(f, f"fix for {f.code} did not settle after {MAX_FIX_PASSES} passes; the rest was kept", enabled))
    return text, analysis, applied, notes, extra


def _roc002(f: Finding, message: str, enabled) -> Finding:
    return Finding(FixFailed.CODE, FixFailed.NAME, message, f.start, f.end, filename=f.filename, span=f.span) \
        if "ROC002" in enabled else None


# ------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------

def check_bytes(data: bytes, path: str, settings: Settings, *, fix: bool = False, index=None) -> FileReport:
    """Lint (or fix) the bytes of one file. Never raises for bad input."""
    if path.endswith(".ipynb"):  # Jupyter notebooks: code cells, magics masked
        from .notebook import check_notebook

        return check_notebook(data, path, settings, fix=fix)
    report = FileReport(path=path, original=data)
    enabled, rules = select_rules(settings, path)
    env_kind = env_files.kind_for(path, data[:256])
    if env_kind is not None:  # shell, Dockerfile, YAML, .env: ROC6xx only, display-only
        try:
            report.findings = env_files.scan(path, data.decode("utf-8", "replace"), enabled, env_kind)
        except Exception as exc:  # pragma: no cover - a bug in the scanner
            report.internal_error = f"{type(exc).__name__}: {exc}"
        return report
    try:
        source = SourceText.from_bytes(data)
    except SourceError as exc:
        report.findings = _roc001(path, str(exc), exc.row, exc.column, enabled)
        return report
    try:
        if fix:
            text, analysis, applied, notes, extra = fix_text(source.text, path, settings, rules, enabled, index)
            report.findings = analysis.findings + [n for n in notes if n is not None]
            report.fixes_applied = applied
            report.extra_files = extra
            if text != source.text:
                report.fixed = source.to_bytes(text)
        else:
            report.findings = analyze(source.text, path, settings, rules, enabled, index).findings
    except Exception as exc:  # a bug in rocmport: report it, go on with other files
        import traceback

        report.internal_error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        report.findings = []
    for f in report.findings:
        f.filename = path
    report.findings.sort(key=Finding.sort_key)
    return report


def check_path(path: str, settings: Settings, *, fix: bool = False, index=None) -> FileReport:
    """Read ``path`` and check it; unreadable files become ROC001 findings."""
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(21, "Is a directory")
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        enabled = settings.enabled_codes(path)
        report = FileReport(path=path)
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError) and os.path.islink(path):
            reason = "broken symbolic link"
        report.findings = _roc001(path, f"cannot read: {reason}", 1, 1, enabled)
        return report
    return check_bytes(data, path, settings, fix=fix, index=index)
