"""``--add-noqa``: write ``# noqa: CODE`` comments for what is found (a baseline), as ruff does.

A comment goes at the end of the line a finding starts on (the line the engine reads it
from). An existing ``# noqa: X`` comment on that line gets the new codes merged into it
(sorted, no duplicates); any other comment is kept and the directive follows it. Only Python
source files (``.py``/``.pyi``/...) are edited: a notebook cell's JSON, shell scripts,
Dockerfiles and YAML are left alone and counted as skipped. A line whose end is inside a
multi-line string, or ends with a backslash continuation, cannot take a comment without
changing the code: it is skipped too. Every other byte stays as it was (encoding, BOM, CRLF,
tabs); running it again adds nothing.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

from .findings import Finding
from .source import LineIndex, SourceError, SourceText
from .suppression import line_directive_match, split_codes

_PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")


@dataclass
class NoqaResult:
    data: Optional[bytes]  # the new bytes, None when nothing changed
    added: int  # directives added or extended (one a line)
    skipped: int  # findings that could not get a directive


def is_python_file(path: str) -> bool:
    return path.endswith(_PYTHON_SUFFIXES)


def _line_ends(text: str) -> Tuple[Set[int], Dict[int, Tuple[int, str]]]:
    """Rows whose end lies between tokens (a comment may follow), and each row's comment
    (column, text). Raises ``tokenize.TokenError``/``SyntaxError`` on broken input."""
    free: Set[int] = set()
    comments: Dict[int, Tuple[int, str]] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.NL):
            free.add(tok.start[0])
        elif tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = (tok.start[1], tok.string)
    return free, comments


def add_noqa(data: bytes, findings: Iterable[Finding]) -> NoqaResult:
    """``data`` with a directive for every finding, or the reason it could not have one."""
    wanted: Dict[int, Set[str]] = {}
    count = 0
    for f in findings:
        if f.cell is not None or f.code == "ROC001":
            count += 1
            continue
        wanted.setdefault(f.start.row, set()).add(f.code)
    skipped = count
    if not wanted:
        return NoqaResult(None, 0, skipped)
    try:
        source = SourceText.from_bytes(data)
        if source.to_bytes() != data:  # would not round-trip: never rewrite such a file
            raise SourceError("not round-trip")
        free, comments = _line_ends(source.text)
    except (SourceError, tokenize.TokenError, SyntaxError, UnicodeError):
        return NoqaResult(None, 0, skipped + sum(len(c) for c in wanted.values()))
    text = source.text
    lines = LineIndex(text)
    edits: List[Tuple[int, int, str]] = []
    added = 0
    for row, codes in sorted(wanted.items()):
        if row not in free or row > len(lines.starts):
            skipped += len(codes)
            continue
        start, end = lines.line_span(row)
        comment = comments.get(row)
        if comment is not None:
            column, comment_text = comment
            match = line_directive_match(comment_text)  # the engine's own reading of it
            if match:
                if match.group("codes") is None:
                    continue  # a bare directive already silences the line
                existing = split_codes(match.group("codes"))
                have = {c.upper() for c in existing}
                new = sorted(c for c in codes if not any(c.startswith(h) for h in have))
                if not new:
                    continue
                merged = ", ".join(sorted(existing + new, key=str.upper))
                s = start + column + match.start("codes")
                edits.append((s, s + len(match.group("codes")), merged))
                added += 1
                continue
        directive = "# noqa: " + ", ".join(sorted(codes))
        body = text[start:end]
        stripped = body.rstrip(" \t")
        if stripped.strip() == "":
            skipped += len(codes)  # a blank line: nothing to attach to
            continue
        edits.append((start + len(stripped), end, "  " + directive))
        added += 1
    if not edits:
        return NoqaResult(None, 0, skipped)
    out = []
    last = 0
    for s, e, content in sorted(edits):
        out.append(text[last:s])
        out.append(content)
        last = e
    out.append(text[last:])
    new_text = "".join(out)
    return NoqaResult(source.to_bytes(new_text), added, skipped)
