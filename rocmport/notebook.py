"""Jupyter notebooks: lint and fix the code cells of an ``.ipynb`` file.

The engine only knows Python text, so a notebook is turned into one *virtual module*:

1. IPython syntax that is not Python (line magics ``%matplotlib inline``, shell escapes
   ``!pip install ...``, ``x = !ls``, help lines ``obj?`` / ``??obj``, the first line of a
   ``%%time`` cell) is *masked*: replaced by a run of underscores of the same length, a
   name that parses as an expression, so every column on the line stays where it was. A
   cell whose cell magic runs something other than Python (``%%bash``, ``%%writefile``,
   ``%%html`` ...) is left out altogether.
2. The code cells are joined in order, each after a marker comment line, so names imported
   in one cell are visible in the next, exactly as in the kernel; the engine's ``analyze`` /
   ``fix_text`` run on that text unchanged.
3. Findings are mapped back to ``cell N`` with rows relative to the cell. ``N`` counts *every*
   cell of the notebook from 1 (markdown and raw cells included), as ruff does and as the
   cell's position in Jupyter reads; columns are unchanged.
4. After a fix, the virtual module is split at the markers, the masks are restored byte for
   byte, and only the ``source`` value of each changed cell is rewritten in the original
   JSON text: keys keep their order, indentation and escapes stay as they were, ids,
   metadata and outputs are untouched, and a source stored as a list of lines stays a list
   (a string stays a string). Lines of a changed cell that did not change keep their
   original JSON spelling.

The prelude goes into the first code cell that holds Python (after its leading imports, and
after a ``%%time``-style first line), so it runs before any later cell imports
``torch._inductor``. Unless ``--prelude-style module`` is asked for, notebooks get the
``inline`` prelude: a notebook is a script.
"""

from __future__ import annotations

import bisect
import dataclasses
import io
import json
import re
import tokenize
from json.decoder import scanstring
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from . import fixing, linting, parsing, placement, prelude, reports
from .config import Settings
from .findings import Finding, Fix, Position
from .reports import FileReport
from .source import BOM, LineIndex

# Cell magics whose body is Python that IPython runs in the kernel.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit", "mprun",
                                "snakeviz", "pyinstrument", "scalene", "heat", "cython_inline"})
_BOUNDARY = "# rocmport-notebook-cell"
_BOUNDARY_RE = re.compile(r"^# rocmport-notebook-cell(?P<nonce>\S*) (?P<index>\d+)\n", re.M)

_SHELL_OR_MAGIC_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<magic>(?:!|%(?!%)).*)$")
_ASSIGN_MAGIC_RE = re.compile(
    r"^(?P<lhs>[ \t]*[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*[ \t]*=[ \t]*)(?P<magic>[!%].*)$")
_HELP_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<magic>\?{1,2}[\w.*]+[ \t]*|[\w.*]+\?{1,2}[ \t]*)$")
_CELL_MAGIC_RE = re.compile(r"^[ \t]*%%(?P<name>\w+)")


class NotebookError(Exception):
    """The file is not a notebook rocmport can read; the message is user-facing."""

    def __init__(self, message: str, row: int = 1, column: int = 1):
        super().__init__(message)
        self.row = row
        self.column = column


# ------------------------------------------------------------------------------------------
# Masking IPython syntax
# ------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Mask:
    row: int  # 1-based, in the cell
    column: int  # 0-based start of the masked text
    original: str  # the masked text (to the end of the line, without the line break)
    prefix: str  # the line before ``column``

    @property
    def placeholder(self) -> str:
        return "_" * len(self.original)


_LONE_CR_RE = re.compile(r"\r(?!\n)")
_TERMINATOR_RE = re.compile(r"(?:\r\n|\n|\r)\Z")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _split_keep(text: str) -> List[str]:
    """Lines with their terminators (``\\n`` and ``\\r\\n``; a lone ``\\r`` is not a break
    in a notebook cell's source list)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _line_body(line: str) -> Tuple[str, str]:
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line.endswith("\n"):
        return line[:-1], "\n"
    return line, ""


def cell_magic(text: str) -> Optional[str]:
    """The name of the cell magic on the first line of ``text``, if any."""
    first = text.split("\n", 1)[0]
    match = _CELL_MAGIC_RE.match(first)
    return match.group("name") if match else None


def mask_cell(text: str) -> Tuple[str, List[Mask]]:
    """``text`` with IPython-only syntax replaced by same-length placeholders, and the masks."""
    lines = _split_keep(text)
    masks: List[Mask] = []
    continued = False  # inside a magic continued with a trailing backslash
    indent = ""  # the indentation of the magic being continued
    for index, line in enumerate(lines):
        body, _ = _line_body(line)
        row = index + 1
        if continued:
            # A continuation line belongs to the magic: its own indentation means nothing to
            # Python, so it is masked from the magic's indentation on (else: "unexpected indent").
            start = len(indent) if body.startswith(indent) and len(body) > len(indent) else \
                len(body) - len(body.lstrip(" \t"))
            masks.append(Mask(row, start, body[start:], body[:start]))
        elif index == 0 and cell_magic(text):
            start = len(body) - len(body.lstrip(" \t"))
            masks.append(Mask(row, start, body[start:], body[:start]))
        else:
            match = _ASSIGN_MAGIC_RE.match(body) or _SHELL_OR_MAGIC_RE.match(body) or _HELP_RE.match(body)
            if match is None:
                continue
            start = match.start("magic")
            if match.re is _ASSIGN_MAGIC_RE and "==" in body[:start + 1]:
                continue
            masks.append(Mask(row, start, body[start:], body[:start]))
        if masks and masks[-1].row == row and not continued:
            indent = body[:len(body) - len(body.lstrip(" \t"))]
        continued = body.endswith("\\") and masks and masks[-1].row == row
    if not masks:
        return text, []
    masked = _apply_masks(lines, masks)
    # A candidate inside a multi-line string is string content, not a magic: unmask it.
    inside = _rows_inside_strings(masked)
    if inside:
        masks = [m for m in masks if m.row not in inside]
        masked = _apply_masks(lines, masks)
    return masked, masks


def _apply_masks(lines: List[str], masks: Sequence[Mask]) -> str:
    out = list(lines)
    for m in masks:
        body, end = _line_body(out[m.row - 1])
        out[m.row - 1] = body[:m.column] + m.placeholder + end
    return "".join(out)


def _rows_inside_strings(text: str) -> set:
    rows = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return rows


def unmask_cell(text: str, masks: Sequence[Mask]) -> Optional[str]:
    """Put the masked text back (masks in order, each found on a later line than the last);
    None when a placeholder cannot be found (a fix touched it)."""
    if not masks:
        return text
    lines = _split_keep(text)
    position = 0
    for m in masks:
        for index in range(position, len(lines)):
            body, end = _line_body(lines[index])
            if body[:m.column] == m.prefix and body[m.column:] == m.placeholder:
                lines[index] = m.prefix + m.original + end
                position = index + 1
                break
        else:
            return None
    return "".join(lines)


# ------------------------------------------------------------------------------------------
# The JSON text: where each cell's source is, so only that span is rewritten
# ------------------------------------------------------------------------------------------

_WS_RE = re.compile(r"[ \t\n\r]*")
MAX_JSON_DEPTH = 400  # deeper notebooks are refused (json and our walk recurse per level)
MAX_INT_DIGITS = 4000  # CPython refuses int() of more than 4,300 digits; bigger ones stay text


def _int(text: str):
    return int(text) if len(text) <= MAX_INT_DIGITS else text  # never rewritten: only read


_DECODER = json.JSONDecoder(parse_int=_int)
_JSON_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_depth(text: str) -> int:
    depth = deepest = 0
    for match in _JSON_TOKEN_RE.finditer(text):
        char = match.group(0)
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _ws(s: str, i: int) -> int:
    return _WS_RE.match(s, i).end()


def _walk_object(s: str, i: int, on_value) -> int:
    """``s[i]`` is ``{``; calls ``on_value(key, start)`` (which returns the value's end) for
    each member; returns the index after ``}``."""
    i = _ws(s, i + 1)
    if s[i] == "}":
        return i + 1
    while True:
        key, i = scanstring(s, i + 1)
        i = _ws(s, i)
        i = _ws(s, i + 1)  # past ':'
        i = _ws(s, on_value(key, i))
        if s[i] == ",":
            i = _ws(s, i + 1)
            continue
        return i + 1


def _walk_array(s: str, i: int, on_value) -> int:
    i = _ws(s, i + 1)
    if s[i] == "]":
        return i + 1
    index = 0
    while True:
        i = _ws(s, on_value(index, i))
        index += 1
        if s[i] == ",":
            i = _ws(s, i + 1)
            continue
        return i + 1


def _skip(s: str, i: int) -> int:
    return _DECODER.raw_decode(s, i)[1]


@dataclasses.dataclass
class SourceSpan:
    start: int
    end: int
    elements: List[Tuple[int, int]]  # spans of the strings of a list-form source


def source_spans(s: str) -> Dict[int, SourceSpan]:
    """The span of each cell's ``source`` value in the JSON text ``s`` (0-based cell index)."""
    spans: Dict[int, SourceSpan] = {}

    def cell_member(cell_index):
        def on_value(key, i):
            if key != "source":
                return _skip(s, i)
            elements: List[Tuple[int, int]] = []
            if s[i] == "[":
                def element(_, j):
                    end = _skip(s, j)
                    elements.append((j, end))
                    return end
                end = _walk_array(s, i, element)
            else:
                end = _skip(s, i)
            spans[cell_index] = SourceSpan(i, end, elements)
            return end
        return on_value

    def cell(index, i):
        if s[i] != "{":
            return _skip(s, i)
        return _walk_object(s, i, cell_member(index))

    def top(key, i):
        if key == "cells" and s[i] == "[":
            return _walk_array(s, i, cell)
        return _skip(s, i)

    _walk_object(s, _ws(s, 0), top)
    return spans


def _indent_unit(s: str) -> str:
    match = re.search(r"\n([ \t]+)\S", s)
    return match.group(1) if match else ""


def render_source(s: str, span: SourceSpan, new_text: str, as_list: bool, ensure_ascii: bool) -> str:
    """The JSON for a changed cell's ``source``, in the style of the original value."""
    if not as_list:
        return json.dumps(new_text, ensure_ascii=ensure_ascii)
    raw_of: Dict[str, str] = {}
    for start, end in span.elements:
        raw = s[start:end]
        raw_of.setdefault(json.loads(raw), raw)
    # An element may end in a lone CR (nbformat splits lines as str.splitlines does): split
    # there too, unless an element holds a lone CR before its end (then it was not split).
    if any(_LONE_CR_RE.search(_TERMINATOR_RE.sub("", line)) for line in raw_of) \
            or not any("\r" in line for line in raw_of):
        lines = _split_keep(new_text)
    else:
        lines = re.findall(r"[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+$", new_text)
    if not lines:
        return "[]"
    items = [raw_of.get(line) or json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
    elements = span.elements
    if elements:
        opening = s[span.start + 1:elements[0][0]]
        closing = s[elements[-1][1]:span.end - 1]
        separator = s[elements[0][1]:elements[1][0]] if len(elements) > 1 else "," + opening
    else:
        line_start = s.rfind("\n", 0, span.start) + 1
        key_indent = re.match(r"[ \t]*", s[line_start:]).group(0)
        unit = _indent_unit(s)
        if "\n" in s.strip():
            opening, closing = "\n" + key_indent + unit, "\n" + key_indent
        else:
            opening = closing = ""
        separator = "," + opening if opening else (", " if re.search(r'",\s', s) else ",")
    return "[" + opening + separator.join(items) + closing + "]"


# ------------------------------------------------------------------------------------------
# The notebook model
# ------------------------------------------------------------------------------------------

@dataclasses.dataclass
class CodeCell:
    index: int  # 0-based position among all cells
    text: str  # the source, joined
    as_list: bool
    masked: str = ""
    masks: List[Mask] = dataclasses.field(default_factory=list)
    added_newline: bool = False
    start_row: int = 0  # first row of the cell in the virtual module
    start_offset: int = 0
    magic_line_end: int = 0  # offset in the cell after a %%time-style first line


def read_notebook(data: bytes) -> Tuple[str, bool, dict]:
    bom = data.startswith(BOM)
    body = data[len(BOM):] if bom else data
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        prefix = body[:exc.start]
        raise NotebookError(f"invalid notebook: not UTF-8 (byte 0x{body[exc.start]:02x})",
                            prefix.count(b"\n") + 1, exc.start - (prefix.rfind(b"\n") + 1) + 1)
    if _json_depth(text) > MAX_JSON_DEPTH:
        raise NotebookError(f"invalid notebook JSON: nesting too deep (more than {MAX_JSON_DEPTH} levels)")
    try:
        nb = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid notebook JSON: {exc.msg}", exc.lineno, exc.colno)
    except RecursionError:
        raise NotebookError("invalid notebook JSON: nesting too deep")
    except ValueError as exc:  # pragma: no cover - parse_int keeps long integers as text
        raise NotebookError(f"invalid notebook JSON: {str(exc).splitlines()[0]}")
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        if isinstance(nb, dict) and "worksheets" in nb:
            raise NotebookError("unsupported notebook format (nbformat 3); convert it with "
                                "`jupyter nbconvert --to notebook --nbformat 4`")
        raise NotebookError('not a Jupyter notebook: no "cells" list at the top level')
    return text, bom, nb


def is_python_notebook(nb: dict) -> bool:
    metadata = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    info = metadata.get("language_info")
    if isinstance(info, dict) and isinstance(info.get("name"), str):
        return info["name"].lower() == "python"
    kernel = metadata.get("kernelspec")
    if isinstance(kernel, dict) and isinstance(kernel.get("language"), str):
        return kernel["language"].lower() == "python"
    return True


def code_cells(nb: dict) -> List[CodeCell]:
    cells = []
    for index, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            text, as_list = "".join(source), True
        elif isinstance(source, str):
            text, as_list = source, False
        else:
            raise NotebookError(f"cell {index + 1}: source is not a string or a list of strings")
        magic = cell_magic(text)
        if magic is not None and magic not in PYTHON_CELL_MAGICS:
            continue  # %%bash, %%writefile, %%html ...: not Python run by the kernel
        surrogate = _SURROGATE_RE.search(text)
        if surrogate is not None:
            row = text.count("\n", 0, surrogate.start()) + 1
            raise NotebookError(f"cell {index + 1}, line {row}: a lone surrogate (\\u{ord(surrogate.group(0)):04x})"
                                " that no Python source can hold; the notebook is not analysed")
        cells.append(CodeCell(index, text, as_list))
    return cells


def build_virtual(cells: List[CodeCell]) -> Tuple[str, str]:
    """(virtual module text, boundary nonce)."""
    nonce = ""
    while any(_BOUNDARY + nonce + " " in c.text for c in cells):
        nonce += "_"
    parts = []
    row, offset = 1, 0
    for c in cells:
        c.masked, c.masks = mask_cell(c.text)
        if c.masked and not c.masked.endswith("\n"):
            c.masked += "\n"
            c.added_newline = True
        header = f"{_BOUNDARY}{nonce} {c.index + 1}\n"
        parts.append(header)
        row += 1
        offset += len(header)
        c.start_row, c.start_offset = row, offset
        c.magic_line_end = (c.masked.find("\n") + 1) if cell_magic(c.text) else 0
        parts.append(c.masked)
        row += c.masked.count("\n")
        offset += len(c.masked)
    return "".join(parts), nonce


def split_virtual(text: str, cells: List[CodeCell], nonce: str) -> Optional[Dict[int, str]]:
    """Cell index -> masked text, or None when the markers did not survive."""
    matches = [m for m in _BOUNDARY_RE.finditer(text) if m.group("nonce") == nonce]
    if [int(m.group("index")) - 1 for m in matches] != [c.index for c in cells]:
        return None
    out = {}
    for k, m in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        out[cells[k].index] = text[m.end():end]
    if matches and text[:matches[0].start()]:
        out[cells[0].index] = text[:matches[0].start()] + out[cells[0].index]
    return out


def _cell_of_row(cells: List[CodeCell], row: int) -> CodeCell:
    starts = [c.start_row - 1 for c in cells]  # the marker row belongs to the cell after it
    return cells[max(bisect.bisect_right(starts, row) - 1, 0)]


def _relocate(p: Optional[Position], cell: CodeCell) -> Optional[Position]:
    if p is None:
        return None
    return Position(max(p.row - cell.start_row + 1, 1), p.column)


def map_findings(findings: List[Finding], cells: List[CodeCell], path: str) -> List[Finding]:
    out = []
    for f in findings:
        if f is None:
            continue
        cell = _cell_of_row(cells, f.start.row) if cells else None
        if cell is None:
            out.append(f)
            continue
        fix = f.fix
        if fix is not None and fix.edits:
            edits = tuple(dataclasses.replace(e, location=_relocate(e.location, cell),
                                              end_location=_relocate(e.end_location, cell)) for e in fix.edits)
            fix = Fix(fix.applicability, fix.message, edits, fix.requires)
        end = f.end if f.end.row >= cell.start_row else f.start
        out.append(dataclasses.replace(f, start=_relocate(f.start, cell), end=_relocate(end, cell),
                                       cell=cell.index + 1, filename=path, fix=fix))
    return out


# ------------------------------------------------------------------------------------------
# Lint and fix
# ------------------------------------------------------------------------------------------

def _notebook_settings(settings: Settings) -> Settings:
    if settings.prelude.style == "auto":
        return settings.with_overrides(prelude=dataclasses.replace(settings.prelude, style="inline"))
    return settings


def _prelude_target(cells: List[CodeCell]) -> Optional[CodeCell]:
    for c in cells:
        if c.masked[c.magic_line_end:].strip():
            return c
    return cells[0] if cells else None


def _insertion_offset(cell: CodeCell) -> Tuple[int, bool]:
    """Where the generated block goes in ``cell`` (offset in its masked text, after an anchor?)."""
    text = cell.masked
    try:
        module = parsing.libcst_parse(text)
    except (cst.ParserSyntaxError, RecursionError, parsing.TooLarge):
        return cell.magic_line_end, False
    plan = placement.Placer(module, cst.MetadataWrapper(module, unsafe_skip_copy=True), text, LineIndex(text),
                            prelude.DEFAULT_GATE).plan(len(text))
    if plan.edit is None or plan.edit.start < cell.magic_line_end:
        return cell.magic_line_end, False
    return plan.edit.start, True


def _block_cell(text: str, block: prelude.Block, cells: List[CodeCell], nonce: str) -> Optional[Tuple[int, int]]:
    """(cell index, offset of the block in that cell's text) of the block in fixed ``text``."""
    matches = [m for m in _BOUNDARY_RE.finditer(text) if m.group("nonce") == nonce]
    owner = None
    for m in matches:
        if m.end() <= block.start:
            owner = m
    if owner is None:
        return None
    return int(owner.group("index")) - 1, block.start - owner.end()


def _fix_virtual(virtual: str, cells: List[CodeCell], nonce: str, path: str, settings: Settings, rules, enabled):
    result = fixing.fix_text(virtual, path, settings, rules, enabled)
    text = result[0]
    if text == virtual or prelude.find_block(virtual) is not None:
        return result
    block = prelude.find_block(text)
    target = _prelude_target(cells)
    if block is None or target is None:
        return result
    block_text = text[block.start:block.end]
    if block.style == "inline" and f"{block.gate} = _rocmport_hip" not in block_text:
        return result  # it reuses the notebook's own gate binding: it must stay after it
    where = _block_cell(text, block, cells, nonce)
    if where is not None and where[0] == target.index and where[1] >= target.magic_line_end:
        return result
    # Put the block into the first Python cell, then fix again around it.
    offset, after_anchor = _insertion_offset(target)
    newline = LineIndex(virtual).newline()
    at = target.start_offset + offset
    blank = newline if after_anchor else ""
    trailing = "" if virtual.startswith(("\n", "\r"), at) or not target.masked[offset:].strip() else newline
    seeded = virtual[:at] + blank + block_text + trailing + virtual[at:]
    second = fixing.fix_text(seeded, path, settings, rules, enabled)
    if prelude.find_block(second[0]) is None:  # pragma: no cover - the engine dropped it
        return result
    return second


def check_notebook(data: bytes, path: str, settings: Settings, fix: bool = False):
    """Lint (or fix) a notebook's bytes. Never raises for bad input."""
    report = FileReport(path=path, original=data)
    settings = _notebook_settings(settings)
    enabled, rules = linting.select_rules(settings, path)
    try:
        doc, bom, nb = read_notebook(data)
        if not is_python_notebook(nb):
            return report
        cells = code_cells(nb)
    except NotebookError as exc:
        report.findings = reports.unreadable(path, str(exc), exc.row, exc.column, enabled)
        return report
    if not cells:
        return report
    try:
        virtual, nonce = build_virtual(cells)
        if not fix:
            analysis = linting.analyze(virtual, path, settings, rules, enabled)
            report.findings = map_findings(analysis.findings, cells, path)
        else:
            text, analysis, applied, notes, extra = _fix_virtual(virtual, cells, nonce, path, settings, rules,
                                                                 enabled)
            findings = analysis.findings + [n for n in notes if n is not None]
            if text != virtual:
                new_doc = _write_back(doc, nb, cells, text, nonce)
                if new_doc is None:
                    # A fix touched a masked magic or a cell marker: keep the notebook as it was.
                    findings = linting.analyze(virtual, path, settings, rules, enabled).findings
                    findings = [reports.not_applied(f, f"fix for {f.code} not applied: it would change an IPython "
                                                  "magic or a cell boundary", enabled)
                                for f in findings if f.applies(settings.unsafe_fixes)] + findings
                    findings = [f for f in findings if f is not None]
                    report.findings = map_findings(findings, cells, path)
                    report.findings.sort(key=Finding.sort_key)
                    return report
                if new_doc != doc:
                    report.fixed = (BOM if bom else b"") + new_doc.encode("utf-8")
                report.fixes_applied = applied
                report.extra_files = extra
            mapped_cells = cells
            if text != virtual:
                # Positions of what remains refer to the fixed text: rebuild its cell table.
                mapped_cells = _cells_of_fixed(text, cells, nonce)
            report.findings = map_findings(findings, mapped_cells, path)
    except (RecursionError, MemoryError, parsing.TooLarge) as exc:  # deeper or larger than can be walked
        report.findings = reports.unreadable(path, parsing.too_much(exc), 1, 1, enabled)
        report.fixed, report.fixes_applied, report.extra_files = None, 0, {}
    except Exception as exc:  # a bug in rocmport: report it, go on with other files
        import traceback

        report.internal_error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        report.findings = []
    report.findings.sort(key=Finding.sort_key)
    return report


def _cells_of_fixed(text: str, cells: List[CodeCell], nonce: str) -> List[CodeCell]:
    out = []
    for m in _BOUNDARY_RE.finditer(text):
        if m.group("nonce") != nonce:
            continue
        row = text.count("\n", 0, m.end()) + 1
        out.append(CodeCell(int(m.group("index")) - 1, "", False, start_row=row, start_offset=m.end()))
    return out or cells


def _write_back(doc: str, nb: dict, cells: List[CodeCell], text: str, nonce: str) -> Optional[str]:
    parts = split_virtual(text, cells, nonce)
    if parts is None:
        return None
    spans = source_spans(doc)
    ensure_ascii = doc.isascii()
    replacements = []
    for c in cells:
        new_masked = parts[c.index]
        if new_masked == c.masked:
            continue
        new_text = unmask_cell(new_masked, c.masks)
        if new_text is None:
            return None
        if c.added_newline or (c.text and not c.text.endswith("\n")):
            new_text = new_text.rstrip("\n")
        if new_text == c.text:
            continue
        span = spans.get(c.index)
        if span is None:  # pragma: no cover - the cell has a source: json.loads saw it
            return None
        replacements.append((span.start, span.end, render_source(doc, span, new_text, c.as_list, ensure_ascii)))
    out = doc
    for start, end, content in sorted(replacements, reverse=True):
        out = out[:start] + content + out[end:]
    return out
