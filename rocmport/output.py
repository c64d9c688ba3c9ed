"""Output formats. Each takes the engine's findings and returns text.

Every formatter is called as ``formatter(findings, unsafe_fixes, **context)`` and ignores the
context it does not need. The context the command line passes:

- ``read_source(path) -> str | None``: the text a finding's positions refer to (``full``
  shows source lines and the fix as a diff); formatters never read files otherwise, except
  that ``full`` falls back to the file on disk when no reader is given;
- ``root``: the directory paths are made relative to (``github``, ``sarif``); by default the
  git work tree around the working directory, else the working directory.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from .findings import Finding, Position
from .source import SourceError, SourceText, apply_edits, read_regular


# C0 controls (ESC above all), DEL and C1 controls (CSI is 0x9b): in a file name, a message or
# a source line they would reach the terminal as commands. Tab is kept (the underline uses it).
_CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def visible(text: str, terminal: bool = False) -> str:
    """``text`` as concise and full print it: each control character as ``\\xNN``. For a
    terminal (``terminal``), also the bytes of a file name that are not UTF-8 (kept as
    ``surrogateescape`` code points: a raw 0x9b is CSI to an 8-bit terminal); elsewhere (a
    file, a pipe) those are written as the name's own bytes."""
    if _CONTROL_RE.search(text) is not None:
        text = _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)
    if terminal and _has_surrogate(text):
        text = "".join(f"\\x{ord(ch) - 0xDC00:02x}" if 0xDC80 <= ord(ch) <= 0xDCFF else ch for ch in text)
    return text


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _location(f: Finding, color: bool = False, terminal: bool = False) -> str:
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    name = visible(f.filename, terminal)
    if color:
        sep = _paint(":", CYAN)
        return f"{_paint(name, BOLD)}{sep}{cell.replace(':', sep)}{f.start.row}{sep}{f.start.column}"
    return f"{name}:{cell}{f.start.row}:{f.start.column}"


# ANSI styles, as ruff colours its concise output (the CLI decides whether colour is on).
BOLD, RED, CYAN = "1", "1;91", "1;96"


def _paint(text: str, style: str) -> str:
    return f"\x1b[{style}m{text}\x1b[0m"


def _headline(f: Finding, unsafe_fixes: bool, color: bool, terminal: bool = False) -> str:
    message = visible(f.message, terminal)
    if not color:
        marker = " [*]" if f.applies(unsafe_fixes) else ""
        return f"{_location(f, False, terminal)}: {f.code}{marker} {message}"
    marker = f" [{_paint('*', CYAN)}]" if f.applies(unsafe_fixes) else ""
    return f"{_location(f, True, terminal)}{_paint(':', CYAN)} {_paint(f.code, RED)}{marker} {message}"


def concise(findings: Sequence[Finding], unsafe_fixes: bool, *, color: bool = False, summary: bool = True,
            terminal: bool = False, **_) -> str:
    """``terminal``: the text goes to a terminal (:func:`visible`)."""
    lines = [_headline(f, unsafe_fixes, color, terminal) for f in findings]
    return "\n".join(lines) + ("\n" if lines else "") + (_summary(findings, unsafe_fixes) if summary else "")


def statistics(findings: Sequence[Finding], unsafe_fixes: bool, *, as_json: bool = False,
               summary: bool = True) -> str:
    """``--statistics``: one line per rule, most frequent first (ruff's layout:
    count, code, ``[*]`` when the current flags would fix some of them, name)."""
    counts: Dict[str, List[Finding]] = {}
    for f in findings:
        counts.setdefault(f.code, []).append(f)
    rows = sorted(counts.items(), key=lambda item: (-len(item[1]), item[0]))
    if as_json:
        return json.dumps([{"code": code, "name": group[0].name, "count": len(group),
                            "fixable": any(f.applies(unsafe_fixes) for f in group)} for code, group in rows],
                          indent=2) + "\n"
    if not rows:
        return _summary(findings, unsafe_fixes) if summary else ""
    width = max(len(str(len(group))) for _, group in rows)
    code_width = max(len(code) for code, _ in rows)
    lines = [f"{len(group):>{width}}\t{code:<{code_width}}\t"
             f"{'[*]' if any(f.applies(unsafe_fixes) for f in group) else '[ ]'} {group[0].name}"
             for code, group in rows]
    return "\n".join(lines) + "\n" + (_summary(findings, unsafe_fixes) if summary else "")


def _summary(findings: Sequence[Finding], unsafe_fixes: bool) -> str:
    lines = []
    fixable = sum(1 for f in findings if f.applies(unsafe_fixes))
    if findings:
        noun = "finding" if len(findings) == 1 else "findings"
        lines.append(f"Found {len(findings)} {noun} ({fixable} fixable with `rocmport fix --write`).")
        hidden = sum(1 for f in findings if not f.applies(unsafe_fixes) and f.fix is not None
                     and f.fix.applicability.value == "unsafe")
        if hidden and not unsafe_fixes:
            lines.append(f"{hidden} more fixable with `--unsafe-fixes`.")
    else:
        lines.append("All checks passed!")
    return "\n".join(lines) + "\n"


def _pos(p):
    return {"row": p.row, "column": p.column} if p is not None else None


def rule_url(code: str) -> Optional[str]:
    """The rule's section of docs/rules.md in the repository (``rocmport.docs.rule_url``);
    None for a code that is not a rule."""
    return _rule_urls().get(code)


_URLS: Dict[str, str] = {}


def _rule_urls() -> Dict[str, str]:
    if not _URLS:
        from .docs import rule_url as url_of
        from .registry import rule_infos

        _URLS.update({code: url_of(info) for code, info in rule_infos().items()})
    return _URLS


def finding_dict(f: Finding) -> dict:
    fix = None
    if f.fix is not None:
        edits = []
        for e in f.fix.edits:
            edits.append({
                "content": e.content,
                "location": _pos(e.location),
                "end_location": _pos(e.end_location),
            })
        fix = {"applicability": f.fix.applicability.value, "message": f.fix.message, "edits": edits}
    return {
        "code": f.code,
        "name": f.name,
        "message": f.message,
        "filename": f.filename,
        "location": {"row": f.start.row, "column": f.start.column},
        "end_location": {"row": f.end.row, "column": f.end.column},
        "fix": fix,
        "url": f.url or rule_url(f.code),
        "cell": f.cell,
        # where the finding is (its module is a test module or not: ``--scope``), and why a
        # fix leaves it alone (a skipped test, a test of CUDA graphs, NVIDIA-only code, a test
        # the repository already runs on ROCm); null for a port
        "scope": f.scope,
        "not_a_port": f.not_a_port,
        # the other places of the same decision (one finding per decision), in source order
        "related_locations": [{"location": _pos(r.start), "end_location": _pos(r.end), "message": r.message}
                              for r in f.related],
    }


def as_json(findings: Sequence[Finding], unsafe_fixes: bool, **_) -> str:
    return json.dumps([finding_dict(f) for f in findings], indent=2) + "\n"




# ------------------------------------------------------------------------------------------
# Context the richer formats need: source text and repository-relative paths
# ------------------------------------------------------------------------------------------

SourceReader = Callable[[str], Optional[str]]

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


def decode_source(data: Optional[bytes]) -> Optional[str]:
    """Decode a file's bytes the way the engine does (cookie, BOM); never raises."""
    if data is None:
        return None
    try:
        return SourceText.from_bytes(data).text
    except SourceError:
        return data.decode("utf-8", "replace")


def read_from_disk(path: str) -> Optional[str]:
    """The default ``read_source``: the file's current text, or None."""
    if path in ("-", ""):
        return None
    try:
        return decode_source(read_regular(path))  # never a FIFO or a device: they could block
    except OSError:
        return None


def find_root(start: Optional[Path] = None) -> Path:
    """The git work tree containing ``start`` (default: the working directory), else ``start``."""
    start = Path(os.path.abspath(start or os.getcwd()))
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def relative_path(filename: str, root: Optional[Path] = None) -> str:
    """``filename`` relative to ``root`` (the git root or the working directory), with forward
    slashes; an absolute path only when it lies outside both."""
    if filename == "-":
        return filename
    absolute = Path(os.path.abspath(filename))
    candidates = [root] if root is not None else [find_root(), Path(os.path.abspath(os.getcwd()))]
    for resolve in (os.path.abspath, os.path.realpath):  # then through symbolic links
        for base in candidates:
            try:
                return Path(resolve(absolute)).relative_to(Path(resolve(base))).as_posix()
            except ValueError:
                continue
    return absolute.as_posix()


def _lines(text: str) -> List[str]:
    """The lines of ``text`` split on Python's terminators only (as the engine counts rows)."""
    return _NEWLINE_RE.split(text)


# ------------------------------------------------------------------------------------------
# full: concise, plus the source line(s) with an underline, plus the fix as a diff
# ------------------------------------------------------------------------------------------

MAX_SNIPPET_LINES = 8


def _underline(line: str, start: int, end: int) -> str:
    """Carets under ``line[start:end]`` (0-based code points) as :func:`visible` shows the
    line, keeping the tabs before it."""
    pad = "".join("\t" if ch == "\t" else " " * len(visible(ch)) for ch in line[:start])
    return pad + "^" * max(sum(len(visible(ch)) for ch in line[start:end]), 1)


def _snippet(f: Finding, lines: List[str]) -> List[str]:
    first, last = f.start.row, max(f.end.row, f.start.row)
    if first < 1 or first > len(lines):
        return []
    last = min(last, len(lines))
    if f.end.row > f.start.row and f.end.column == 1 and last > first:
        last -= 1  # a span that ends at the start of a line does not cover that line
    width = len(str(last))
    out = [f"{' ' * width} |"]
    shown = list(range(first, last + 1))
    if len(shown) > MAX_SNIPPET_LINES:
        shown = shown[: MAX_SNIPPET_LINES - 1] + [last]
    previous = None
    for row in shown:
        if previous is not None and row != previous + 1:
            out.append(f"{'.' * width} |")
        previous = row
        line = lines[row - 1]
        start = f.start.column - 1 if row == f.start.row else len(line) - len(line.lstrip())
        end = f.end.column - 1 if row == f.end.row else len(line)
        start, end = min(start, len(line)), min(max(end, start), len(line))
        out.append(f"{row:>{width}} | {visible(line)}".rstrip())
        out.append(f"{' ' * width} | {_underline(line, start, end)}")
    out.append(f"{' ' * width} |")
    return out


def _fix_diff(f: Finding, text: str) -> List[str]:
    """The finding's own edits (its gate line included) as a small diff of the lines they
    touch, one hunk per place, ``...`` between hunks."""
    import difflib

    edits = list(f.fix.edits) if f.fix is not None else []
    if not edits or any(e.end > len(text) or e.start < 0 for e in edits):
        return []
    try:
        new = apply_edits(text, edits)
    except Exception:  # overlapping edits: nothing sensible to show
        return []
    out: List[str] = []
    for line in difflib.unified_diff(_lines(text), _lines(new), n=0, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            if out:
                out.append("...")
            continue
        out.append(f"{line[0]} {visible(line[1:])}".rstrip())
    return out


def full(findings: Sequence[Finding], unsafe_fixes: bool, *, read_source: Optional[SourceReader] = None,
         color: bool = False, summary: bool = True, terminal: bool = False, **_) -> str:
    """Each finding as in ``concise``, then its source with the span underlined, then its fix."""
    reader = read_source or read_from_disk
    texts: Dict[str, Optional[str]] = {}
    blocks = []
    for f in findings:
        block = [_headline(f, unsafe_fixes, color, terminal)]
        text = None
        if f.cell is None:  # a notebook cell's rows are not the file's rows
            if f.filename not in texts:
                texts[f.filename] = reader(f.filename)
            text = texts[f.filename]
        if text is not None:
            block += ["  " + line if line else line for line in _snippet(f, _lines(text))]
        if f.fix is not None:
            applicability = f.fix.applicability.value
            block.append(f"  = fix ({applicability}): {visible(f.fix.message or '')}".rstrip())
            diff = _fix_diff(f, text) if text is not None else []
            block += ["    " + line for line in diff]
            if diff and f.fix.requires:
                block.append("    (and the rocmport prelude: " + ", ".join(f.fix.requires) + ")")
        blocks.append("\n".join(block) + "\n")
    return "\n".join(blocks) + ("\n" if blocks else "") + (_summary(findings, unsafe_fixes) if summary else "")


# ------------------------------------------------------------------------------------------
# github: workflow commands that GitHub Actions turns into annotations
# ------------------------------------------------------------------------------------------

def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(findings: Sequence[Finding], unsafe_fixes: bool, *, root: Optional[Path] = None, **_) -> str:
    lines = []
    for f in findings:
        props = [("title", f"rocmport ({f.code})"), ("file", relative_path(f.filename, root))]
        message = f.message
        props += [("line", str(f.start.row)), ("col", str(f.start.column)),
                  ("endLine", str(f.end.row)), ("endColumn", str(f.end.column))]
        if f.cell is not None:  # as ruff: the row inside the cell, and the cell named in the message
            message = f"cell {f.cell}:{f.start.row}:{f.start.column}: {message}"
        rendered = ",".join(f"{key}={escape_property(value)}" for key, value in props)
        lines.append(f"::error {rendered}::{escape_data(message)}")
    return "".join(line + "\n" for line in lines)


# ------------------------------------------------------------------------------------------
# sarif: SARIF 2.1.0 for GitHub code scanning and other static-analysis viewers
# ------------------------------------------------------------------------------------------

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_DESCRIPTION = 1023


def _shorten(text: str, limit: int = MAX_DESCRIPTION) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    sentence = head.rfind(". ")
    if sentence > limit // 2:  # whole sentences where they fit
        return head[: sentence + 1]
    return text[: limit - 1].rsplit(" ", 1)[0] + "…"


def rule_level(rule) -> str:
    """SARIF level of a rule: display-only advice is a warning, everything else an error."""
    applicability = getattr(rule, "FIX_APPLICABILITY", None)
    return "warning" if applicability is not None and applicability.value == "display-only" else "error"


def _sarif_rule(rule) -> dict:
    from .docs import rule_url

    import textwrap
    what = textwrap.dedent(rule.WHAT).strip() or rule.SUMMARY
    return {
        "id": rule.CODE,
        "name": rule.NAME,
        "shortDescription": {"text": _shorten(rule.SUMMARY)},
        "fullDescription": {"text": _shorten(what)},
        "helpUri": rule_url(rule),
        "help": {"text": _shorten(rule.SUMMARY + " " + textwrap.dedent(rule.WHY).strip()),
                 "markdown": rule.doc()},
        "defaultConfiguration": {"level": rule_level(rule), "enabled": bool(rule.DEFAULT_ENABLED)},
        "properties": {"fix": rule.FIX_APPLICABILITY.value if rule.FIX_APPLICABILITY else "none"},
    }


def _region(start: Position, end: Position) -> dict:
    return {"startLine": start.row, "startColumn": start.column, "endLine": end.row, "endColumn": end.column}


def sarif_document(findings: Sequence[Finding], unsafe_fixes: bool, *, root: Optional[Path] = None) -> dict:
    from . import __version__
    from .docs import HOMEPAGE
    from .registry import rule_infos

    rules = rule_infos()
    codes = list(rules)
    base = Path(os.path.abspath(root)) if root is not None else find_root()
    results = []
    for f in findings:
        artifact = artifact_location(relative_path(f.filename, base))
        location: dict = {"artifactLocation": artifact}
        message = f.message
        if f.cell is None:
            location["region"] = _region(f.start, f.end)
        else:
            message = f"cell {f.cell}:{f.start.row}:{f.start.column}: {message}"
        rule = rules.get(f.code)
        result = {
            "ruleId": f.code,
            "level": rule_level(rule) if rule is not None else "error",
            "message": {"text": message},
            "locations": [{"physicalLocation": location}],
        }
        if f.code in rules:
            result["ruleIndex"] = codes.index(f.code)
        if f.related:
            related = []
            for i, r in enumerate(f.related, 1):
                place: dict = {"artifactLocation": dict(artifact)}
                if f.cell is None:
                    place["region"] = _region(r.start, r.end)
                related.append({"id": i, "physicalLocation": place,
                                "message": {"text": r.message or f"another place of this decision ({f.code})"}})
            result["relatedLocations"] = related
        properties = {}
        if f.cell is not None:
            properties["cell"] = f.cell
        if f.scope != "source":
            properties["scope"] = f.scope
        if f.not_a_port is not None:
            properties["notAPort"] = f.not_a_port
        if properties:
            result["properties"] = properties
        if (f.cell is None and f.fixable and f.fix.edits
                and all(e.location is not None and e.end_location is not None for e in f.fix.edits)):
            result["fixes"] = [{
                "description": {"text": (f.fix.message or f"Apply the {f.code} fix") + (
                    " (the replacement also needs rocmport's prelude ("
                    + ", ".join(f.fix.requires) + "), which `rocmport fix --write` adds)"
                    if f.fix.requires else "")},
                "artifactChanges": [{
                    "artifactLocation": dict(artifact),
                    "replacements": [{"deletedRegion": _region(e.location, e.end_location),
                                      "insertedContent": {"text": e.content}} for e in f.fix.edits],
                }],
                "properties": {"applicability": f.fix.applicability.value,
                               "appliedByDefault": f.applies(unsafe_fixes)},
            }]
        results.append(result)
    run = {
        "tool": {"driver": {
            "name": "rocmport",
            "version": __version__,
            "semanticVersion": __version__,
            "informationUri": HOMEPAGE,
            "rules": [_sarif_rule(rules[code]) for code in codes],
        }},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": base.as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def artifact_location(path: str) -> dict:
    """A SARIF ``artifactLocation`` for ``path`` (relative to %SRCROOT%, or absolute): its
    ``uri`` percent-encoded per RFC 3986 from the name's own bytes (``os.fsencode``: a name
    that is not UTF-8 keeps its bytes, as %XX), so a space, ``#``, ``%``, ``?`` or a
    non-ASCII letter is never taken for URI syntax; an absolute path is a ``file:`` URI."""
    from urllib.parse import quote

    encoded = quote(os.fsencode(path), safe="/")  # unreserved characters and "/" stay as they are
    if os.path.isabs(path):
        return {"uri": "file://" + encoded}
    return {"uri": encoded, "uriBaseId": "%SRCROOT%"}


def _valid_text(value):
    """Strings of the document as valid Unicode: a message that carries a non-UTF-8 file
    name's bytes (surrogates) gets U+FFFD there, never raw bytes in the JSON."""
    if isinstance(value, str):
        if not _has_surrogate(value):
            return value
        try:  # a file name's bytes: one U+FFFD for each byte that is not UTF-8
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:  # any other lone surrogate
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {k: _valid_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_text(v) for v in value]
    return value


def sarif(findings: Sequence[Finding], unsafe_fixes: bool, *, root: Optional[Path] = None, **_) -> str:
    document = _valid_text(sarif_document(findings, unsafe_fixes, root=root))
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


FORMATTERS: Dict[str, Callable[..., str]] = {
    "concise": concise,
    "full": full,
    "json": as_json,
    "github": github,
    "sarif": sarif,
}
FORMATS = tuple(FORMATTERS)
