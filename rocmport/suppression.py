"""Suppression comments, read one way for every kind of file.

- ``# noqa`` anywhere in a comment silences every finding that starts on that line;
  ``# noqa: ROC101, ROC102`` (commas or spaces between codes) only those codes.
- ``# rocmport: noqa`` in a comment on a line of its own (indentation allowed) silences the
  whole file; ``# rocmport: noqa: ROC5`` only those codes in it.

The syntax is ruff's: a code is capital letters followed by digits, ``noqa`` itself may be
written in any case, text may follow the code list, and a directive whose colon is followed by
no valid code (``# noqa: ROC``, ``# noqa: roc101``, ``# noqa:``) is not a suppression at all,
so the finding stays visible. Unlike ruff, and like flake8, a listed code also covers the codes
it starts: ``ROC5`` silences ROC501 to ROC505.

Python comments come from the tokenizer (so ``"# noqa"`` in a string is not one). In shell,
YAML and ``.env`` files a comment starts at a ``#`` at the start of a line or after white
space, outside quotes; in a Dockerfile only a whole line can be a comment, so only the
file-level form applies there.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from .findings import Finding

_CODES = r"(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)"
# "noqa", then a colon and the codes, or the end of the comment, or a character that does not
# continue a word ("# noqa F401" is a bare noqa; "# noqaF401" is nothing)
_LINE = re.compile(r"#\s*(?i:noqa)(?::\s*" + _CODES + r"|(?P<colon>:)|(?![A-Za-z0-9_]))")
_FILE = re.compile(r"#\s*(?i:rocmport)\s*:\s*(?i:noqa)(?::\s*" + _CODES + r"|(?P<colon>:)|(?![A-Za-z0-9_]))")
_ANY = re.compile(r"(?i)noqa")
_FILE_ANY = re.compile(r"(?i)rocmport\s*:\s*noqa")

#: a directive that names no code: everything
ALL = None


def _first(pattern: "re.Pattern[str]", comment: str) -> Optional["re.Match[str]"]:
    for match in pattern.finditer(comment):
        if not match.group("colon"):  # "noqa:" without a valid code: not a suppression (ruff warns)
            return match
    return None


def _parse(pattern: "re.Pattern[str]", comment: str) -> Tuple[bool, Optional[FrozenSet[str]]]:
    """(whether ``comment`` holds a valid directive, its codes or ALL)."""
    match = _first(pattern, comment)
    if match is None:
        return False, ALL
    codes = match.group("codes")
    return True, (frozenset(split_codes(codes)) if codes else ALL)


def split_codes(codes: str) -> List[str]:
    """The codes of a directive's code list (``"ROC101, ROC102"``), in their order."""
    return [c for c in re.split(r"[\s,]+", codes) if c]


def line_directive_match(comment: str) -> Optional["re.Match[str]"]:
    """The first valid ``# noqa`` directive in ``comment``, for tools that edit it (``--add-noqa``):
    its ``codes`` group spans the code list (None for a bare ``# noqa``); None when there is none."""
    return _first(_LINE, comment)


def line_directive(comment: str) -> Tuple[bool, Optional[FrozenSet[str]]]:
    """Whether the comment text ``comment`` is a ``# noqa`` directive, and its codes (ALL:
    every code)."""
    return _parse(_LINE, comment)


def file_directive(comment: str) -> Tuple[bool, Optional[FrozenSet[str]]]:
    """Whether ``comment`` (a comment alone on its line) is a ``# rocmport: noqa`` directive,
    and its codes (ALL: every code)."""
    return _parse(_FILE, comment.lstrip())


def _covers(codes: Optional[FrozenSet[str]], code: str) -> bool:
    return codes is ALL or any(code.startswith(c) for c in codes)


@dataclass
class Suppressions:
    """The suppression comments of one file."""
    whole_file: bool = False
    file_codes: Set[str] = field(default_factory=set)
    lines: Dict[int, Optional[FrozenSet[str]]] = field(default_factory=dict)

    @classmethod
    def from_comments(cls, comments: Iterable[Tuple[int, str, bool]]) -> "Suppressions":
        """From (row, comment text from its ``#``, alone on its line) triples."""
        found = cls()
        for row, comment, alone in comments:
            if alone:
                valid, codes = file_directive(comment)
                if valid:
                    if codes is ALL:
                        found.whole_file = True
                    else:
                        found.file_codes.update(codes)
                    continue
            valid, codes = line_directive(comment)
            if valid:
                old = found.lines.get(row, frozenset())
                found.lines[row] = ALL if codes is ALL or old is ALL else old | codes
        return found

    def suppresses(self, code: str, row: int) -> bool:
        if self.whole_file or _covers(frozenset(self.file_codes), code):
            return True
        return row in self.lines and _covers(self.lines[row], code)

    def filter(self, findings: Sequence[Finding]) -> List[Finding]:
        return [f for f in findings if not self.suppresses(f.code, f.start.row)]


def python_comments(text: str) -> Iterator[Tuple[int, str, bool]]:
    """(row, comment, alone on its line) for every comment of Python source ``text``."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                row, col = tok.start
                yield row, tok.string, tok.line[:col].strip() == ""
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return


def line_comment(line: str) -> Optional[str]:
    """The comment of one shell, YAML or ``.env`` line: from the first ``#`` that starts the
    line or follows white space, outside quotes; None when there is none."""
    quote = None
    escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[index:]
    return None


def line_comments(lines: Sequence[str], kind: str) -> Iterator[Tuple[int, str, bool]]:
    """(row, comment, alone on its line) for a shell, YAML, ``.env`` file or Dockerfile split
    into ``lines``. A Dockerfile's comments are whole lines only."""
    for row, line in enumerate(lines, 1):
        if "#" not in line:
            continue
        if kind == "dockerfile":
            if line.lstrip().startswith("#"):
                yield row, line.lstrip(), True
            continue
        comment = line_comment(line)
        if comment is not None:
            yield row, comment, line[:len(line) - len(comment)].strip() == ""


def for_python(text: str, lines: Optional[Iterable[str]] = None) -> Suppressions:
    """The suppressions of Python source ``text``. ``lines``: the only lines whose line
    directives matter (where the findings start); the file is tokenized only when one of
    them, or the file, may hold a directive. (With a CR in the text the tokenizer's rows
    may not be those lines: it is read whole.)"""
    if not _ANY.search(text):
        return Suppressions()
    if lines is not None and "\r" not in text and not _FILE_ANY.search(text) and \
            not any(_ANY.search(line) for line in lines):
        return Suppressions()
    return Suppressions.from_comments(python_comments(text))


def for_lines(lines: Sequence[str], kind: str) -> Suppressions:
    return Suppressions.from_comments(line_comments(lines, kind))
