"""One-line reason comments above the statements a fix gates (``reason-comments = true``).

A maintainer reading ``x = 64 if is_rocm else 32`` asks why; the comment answers with the
rule and where its documentation is: ``# ROC501 triton-block-not-wavefront-multiple: see
`rocmport rule ROC501```. It goes on a line of its own above the logical line that holds the
gated code, at that line's indentation, so a formatter keeps it where it is (black and ruff
format never join or move a comment line) and no line of code grows. Off by default.
"""

from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, List, Optional, Sequence, Tuple

from .findings import Edit, Finding

MARK = "rocmport rule "


def logical_line_starts(text: str) -> Optional[List[int]]:
    """For each physical line (0-based), the 0-based row its logical line starts on; None
    when the text does not tokenize."""
    lines = text.splitlines(keepends=True)
    starts = list(range(len(lines)))
    first: Optional[int] = None
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.ENDMARKER:
                break
            if tok.type in skip:
                continue
            if first is None:
                first = tok.start[0] - 1
            if tok.type == tokenize.NEWLINE:
                for row in range(first, min(tok.end[0], len(starts))):
                    starts[row] = first
                first = None
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return starts


def comment_text(codes: Sequence[Tuple[str, str]], indent: str, line_length: int) -> str:
    """The comment for the rules ``codes`` ((code, name) pairs): the long form where it fits
    the line length, else the short one."""
    first = codes[0][0]
    names = ", ".join(f"{code} {name}" for code, name in codes)
    long = f"{indent}# {names}: see `{MARK}{first}`"
    if len(long) <= line_length:
        return long
    return f"{indent}# ROCm: `{MARK}{first}`"


def comment_edits(text: str, findings: Sequence[Finding], gate: str, edits: Sequence[Edit],
                  newline: str, line_length: int) -> List[Edit]:
    """The edits that put a reason comment above each logical line a fix of ``findings`` gates
    (its own edits test ``gate``), merged with an insertion at the same point in ``edits``:
    returns the new edit list."""
    starts = logical_line_starts(text)
    if starts is None:
        return list(edits)
    line_offsets = [0]
    for line in text.splitlines(keepends=True):
        line_offsets.append(line_offsets[-1] + len(line))
    word = re.compile(rf"(?<![\w.]){re.escape(gate)}(?!\w)")
    wanted: Dict[int, List[Tuple[str, str]]] = {}
    for f in findings:
        own = [e for e in f.fix.edits if e.start != e.end and word.search(e.content)] if f.fix else []
        if not own:
            continue
        offset = min(e.start for e in own)
        row = _row(line_offsets, offset)
        if row >= len(starts):
            continue
        first = starts[row]
        codes = wanted.setdefault(first, [])
        if (f.code, f.name) not in codes:
            codes.append((f.code, f.name))
    out = list(edits)
    for row, codes in sorted(wanted.items()):
        at = line_offsets[row]
        line = text[at:line_offsets[row + 1]]
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        if row and MARK in text[line_offsets[row - 1]:at]:
            continue  # a reason comment (or one like it) is there already
        comment = comment_text(codes, indent, line_length) + newline
        for i, e in enumerate(out):
            if e.start == e.end == at:
                out[i] = Edit(e.start, e.end, e.content + comment, e.location, e.end_location)
                break
        else:
            out.append(Edit(at, at, comment))
    return out


def _row(line_offsets: List[int], offset: int) -> int:
    import bisect

    return max(bisect.bisect_right(line_offsets, offset) - 1, 0)
