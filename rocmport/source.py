"""Raw bytes in, raw bytes out: decoding that keeps BOM, encoding cookie and line endings.

rocmport never lets LibCST regenerate a file. It decodes the bytes itself, applies text
edits to the decoded string and encodes the result with the same encoding (and BOM), so
every byte outside an edited span comes back exactly as it was.
"""

from __future__ import annotations

import bisect
import codecs
import io
import re
import tokenize
from dataclasses import dataclass
from typing import List

from .findings import Position

BOM = codecs.BOM_UTF8
# Python's own line terminators (form feed and the other str.splitlines() breaks are not).
_NEWLINE_RE = re.compile(r"\r\n|\r|\n")
_COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+", re.M)


class SourceError(Exception):
    """The bytes cannot be decoded as Python source; the message is user-facing."""

    def __init__(self, message: str, row: int = 1, column: int = 1):
        super().__init__(message)
        self.row = row
        self.column = column


@dataclass
class SourceText:
    text: str
    encoding: str
    bom: bool

    @classmethod
    def from_bytes(cls, data: bytes) -> "SourceText":
        if b"\x00" in data:
            offset = data.index(b"\x00")
            row = data.count(b"\n", 0, offset) + 1
            raise SourceError("source contains a NUL byte", row, offset - data.rfind(b"\n", 0, offset))
        bom = data.startswith(BOM)
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            message = str(exc.msg if hasattr(exc, "msg") else exc)
            if "invalid or missing encoding declaration" not in message or _COOKIE_RE.search(data[:512]):
                raise SourceError(f"cannot determine the encoding: {message}")
            encoding = "utf-8"  # no cookie, bad UTF-8 early on: report the byte below
        if encoding == "utf-8-sig":
            encoding = "utf-8"
        body = data[len(BOM):] if bom else data
        try:
            text = body.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            if isinstance(exc, UnicodeDecodeError):
                prefix = body[: exc.start]
                row = prefix.count(b"\n") + 1
                col = exc.start - (prefix.rfind(b"\n") + 1) + 1
                raise SourceError(
                    f"invalid {encoding} byte 0x{body[exc.start]:02x} (no encoding cookie declares another encoding)"
                    if encoding == "utf-8"
                    else f"invalid {encoding} byte 0x{body[exc.start]:02x}",
                    row,
                    col,
                )
            raise SourceError(f"unknown encoding {encoding!r}")
        return cls(text=text, encoding=encoding, bom=bom)

    def to_bytes(self, text: str | None = None) -> bytes:
        body = (self.text if text is None else text).encode(self.encoding)
        return (BOM + body) if self.bom else body


class LineIndex:
    """Maps between offsets in a text and (1-based row, 0-based column) positions."""

    def __init__(self, text: str):
        self.text = text
        starts = [0]
        for match in _NEWLINE_RE.finditer(text):
            starts.append(match.end())
        self.starts: List[int] = starts

    def offset(self, row: int, column0: int) -> int:
        """Offset of 1-based ``row`` and 0-based ``column0`` (clamped to the text)."""
        if row - 1 >= len(self.starts):
            return len(self.text)
        return min(self.starts[row - 1] + column0, len(self.text))

    def position(self, offset: int) -> Position:
        row = bisect.bisect_right(self.starts, offset)
        return Position(row, offset - self.starts[row - 1] + 1)

    def line_span(self, row: int) -> tuple[int, int]:
        """Offsets of the start and the end (before the terminator) of 1-based ``row``."""
        start = self.starts[row - 1]
        match = _NEWLINE_RE.search(self.text, start)
        end = match.start() if match else len(self.text)
        return start, end

    def newline(self) -> str:
        """The file's newline: the first terminator in it, else ``\\n``."""
        match = _NEWLINE_RE.search(self.text)
        return match.group(0) if match else "\n"


def apply_edits(text: str, edits) -> str:
    """Apply non-overlapping edits (any order) to ``text``."""
    out = []
    last = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        out.append(text[last : edit.start])
        out.append(edit.content)
        last = edit.end
    out.append(text[last:])
    return "".join(out)
