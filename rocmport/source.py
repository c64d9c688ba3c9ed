"""Raw bytes in, raw bytes out: decoding that keeps BOM, encoding cookie and line endings.

rocmport never lets LibCST regenerate a file. It decodes the bytes itself, applies text
edits to the decoded string and encodes the result with the same encoding (and BOM), so
every byte outside an edited span comes back exactly as it was.
"""

from __future__ import annotations

import ast
import bisect
import codecs
import errno
import io
import itertools
import os
import re
import stat
import tokenize
from dataclasses import dataclass
from typing import List, Optional, Sequence

from .findings import Position

BOM = codecs.BOM_UTF8
# Python's own line terminators (form feed and the other str.splitlines() breaks are not).
_NEWLINE_RE = re.compile(r"\r\n|\r|\n")
_COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+", re.M)


# The most rocmport reads from one file or from stdin (documented in docs/reliability.md). A
# larger input is refused with a finding rather than read until memory runs out (/dev/zero).
MAX_INPUT_BYTES = 64 * 1024 * 1024

# Codecs whose encoder keeps a state across characters (escape sequences, shift states) or
# spells a character differently from how it was read (backslash escapes): re-encoding a
# changed text can change bytes far from the change, so files in these are never rewritten.
UNSAFE_CODECS = frozenset({
    "utf-7", "unicode-escape", "raw-unicode-escape", "hz", "punycode", "idna",
    "iso2022-jp", "iso2022-jp-1", "iso2022-jp-2", "iso2022-jp-2004", "iso2022-jp-3",
    "iso2022-jp-ext", "iso2022-kr",
})


class InputTooLarge(OSError):
    """More than :data:`MAX_INPUT_BYTES`; the message is user-facing."""


class NotRegularFile(OSError):
    """A FIFO, socket or device: never read (it could block forever or never end)."""


_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def file_type_name(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_limited(handle, limit: int = MAX_INPUT_BYTES) -> bytes:
    """At most ``limit`` bytes of a binary stream; :class:`InputTooLarge` beyond that."""
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(errno.EFBIG, f"larger than {limit // (1024 * 1024)} MiB: not read")
    return data


def read_regular(path: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (a symbolic link is followed).

    A FIFO, device or socket is never read: it is opened without blocking and refused after
    ``fstat`` (so a file swapped for a FIFO between a check and the open cannot hang us).
    Raises OSError (:class:`NotRegularFile`, :class:`InputTooLarge`, or the system's)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            error = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
            raise NotRegularFile(error, f"{file_type_name(mode)}: not read")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return read_limited(handle, limit)
    finally:
        os.close(fd)


def read_head(path: str, size: int) -> bytes:
    """The first ``size`` bytes of a regular file (b"" for anything else or on error)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, size)
    except OSError:
        return b""
    finally:
        os.close(fd)


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

    def rewrite_problem(self, original: bytes) -> Optional[str]:
        """Why a changed text could not be written back byte for byte (None: it can).

        The codec must be stateless and never escape (:data:`UNSAFE_CODECS`), and the
        unchanged text must encode to exactly ``original`` (cp932, big5 and others read
        several byte sequences as one character and write back only one of them). A
        stateless codec that round-trips the whole text writes each character as it was
        read, so the bytes outside an edit stay as they were; ``encode_changed`` checks the
        edited text itself."""
        name = codecs.lookup(self.encoding).name.replace("_", "-")
        if name in UNSAFE_CODECS:
            return f"the file's encoding ({self.encoding}) cannot be rewritten byte for byte"
        try:
            again = self.to_bytes()
        except UnicodeError:
            again = None
        if again != original:
            offset = _first_difference(again or b"", original)
            row = original.count(b"\n", 0, offset) + 1
            return (f"the file's {self.encoding} bytes do not survive decoding and encoding unchanged"
                    f" (line {row})")
        return None

    def written_problem(self, original: bytes, written: bytes) -> Optional[str]:
        """Why ``written``, the fixed file's bytes, would not be read by Python as the fixed
        text (None: it would). Python takes a file's encoding from its first two lines and a
        script's interpreter from its first: the written bytes must declare what the
        original declares, keep its ``#!`` line first, and compile where it compiles (a
        file of at most :data:`COMPILE_CHECK_BYTES`; a larger one is compiled when the
        declarations differ anyway)."""
        if _declared_encoding(written) != _declared_encoding(original):
            return "the encoding declaration would not stay on the file's first two lines"
        if original.startswith(b"#!") and _first_line(written) != _first_line(original):
            return "the `#!` line would not stay the file's first line"
        if len(written) > COMPILE_CHECK_BYTES:
            return None
        try:
            compile(written, "<fixed>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as exc:
            try:
                compile(original, "<original>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None  # this interpreter cannot read the original either: no verdict
            return f"the written file would not compile ({exc.msg}, line {exc.lineno})"
        except (ValueError, RecursionError, MemoryError):
            return None
        return None

    def encode_changed(self, text: str) -> Optional[bytes]:
        """``text`` encoded, or None when that does not decode back to ``text`` exactly."""
        try:
            data = self.to_bytes(text)
            body = data[len(BOM):] if self.bom else data
            return data if body.decode(self.encoding) == text else None
        except UnicodeError:
            return None


# Written files up to this size are compiled as Python would read them (a few ms); larger
# ones only have their encoding declaration and ``#!`` line checked (compiling 100,000 lines
# costs seconds and hundreds of MB).
COMPILE_CHECK_BYTES = 2 * 1024 * 1024
_FIRST_LINE_RE = re.compile(rb"[^\r\n]*")


def _declared_encoding(data: bytes) -> Optional[str]:
    """The encoding Python reads ``data`` in (from its BOM or cookie), normalised."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return None
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        return encoding


def _first_line(data: bytes) -> bytes:
    return _FIRST_LINE_RE.match(data).group(0)


def _first_difference(a: bytes, b: bytes) -> int:
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return index
    return min(len(a), len(b))


class LineIndex:
    """Maps between offsets in a text and (1-based row, 0-based column) positions."""

    def __init__(self, text: str):
        self.text = text
        self._starts: Optional[List[int]] = None

    @property
    def starts(self) -> List[int]:
        """The offset where each line begins: made on first use (a file that no rule reads
        never needs it), with ``str.split`` and C-level sums where the text holds no CR."""
        starts = self._starts
        if starts is None:
            text = self.text
            if "\r" in text:
                starts = [0]
                starts.extend(match.end() for match in _NEWLINE_RE.finditer(text))
            else:
                lines = text.split("\n")
                lines.pop()  # the text after the last newline begins no further line
                starts = list(itertools.accumulate(map((1).__add__, map(len, lines)), initial=0))
            self._starts = starts
        return starts

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


def encode_lines(lines: Sequence[str]) -> bytes:
    """The bytes of decoded ``lines`` in the encoding their coding cookie names (UTF-8 without
    one; lone surrogates, as ``surrogateescape`` decoding leaves them, back as bytes)."""
    text = "".join(lines)
    head = "".join(lines[:2]).encode("utf-8", "surrogateescape")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(head).readline)
    except SyntaxError:
        encoding = "utf-8"
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    try:
        return text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return text.encode("utf-8", "surrogateescape")
