"""Rewritten statements in the repository's own format.

A fix that gates a value (``"default" if is_rocm else "reduce-overhead"``) can push a
statement past the repository's line length. Where the repository formats its code with
ruff or black (``[tool.ruff]``, ``ruff.toml`` or ``[tool.black]``), each statement rocmport
changed and that no longer fits is handed to that formatter, alone, and put back with its
indentation: the result is what the repository's own ``ruff format``/``black`` would write, so
they leave it as it is. Nothing else in the file is touched. The formatter is the one
installed beside rocmport (``ruff`` on PATH or the ``black`` package); without it the
statement stays on one line.
"""

from __future__ import annotations

import ast
import difflib
import os
import shutil
import subprocess
import sys
import textwrap
from typing import List, Optional, Tuple

from .house import Style

_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef) + ((ast.Match,) if hasattr(ast, "Match") else ()) + (
             (ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _changed_rows(old: str, new: str) -> List[int]:
    """1-based rows of ``new`` that are not in ``old``."""
    rows = []
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            rows.extend(range(j1 + 1, j2 + 1))
    return rows


def _simple_statements(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND):
            yield node


def _run_ruff(code: str, line_length: int, path: str, quote: str) -> Optional[str]:
    exe = shutil.which("ruff") or shutil.which("ruff", path=os.path.dirname(sys.executable))
    if exe is None:
        return None
    args = [exe, "format", "--line-length", str(line_length), "--quiet"]
    if path not in ("", "-"):
        args += ["--stdin-filename", path]
    args.append("-")
    try:
        done = subprocess.run(args, input=code, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _run_black(code: str, line_length: int, magic_trailing_comma: bool) -> Optional[str]:
    try:
        import black  # optional: only where the repository uses black and it is installed
    except ImportError:
        return None
    try:
        mode = black.Mode(line_length=line_length, magic_trailing_comma=magic_trailing_comma)
        return black.format_str(code, mode=mode)
    except Exception:  # black refuses some input: keep the line as it is
        return None


def _format(code: str, style: Style, width: int, path: str) -> Optional[str]:
    if style.formatter == "ruff":
        return _run_ruff(code, width, path, style.quote)
    if style.formatter == "black":
        return _run_black(code, width, style.magic_trailing_comma)
    return None


def reformat(old: str, new: str, style: Style, path: str, newline: str = "\n") -> str:
    """``new`` with every statement that differs from ``old`` and is over the line length
    formatted by the repository's formatter. Returns ``new`` unchanged when nothing is over
    the limit, the repository has no formatter, or the formatter is not installed."""
    if style.formatter is None:
        return new
    lines = new.splitlines(keepends=True)
    rows = [r for r in _changed_rows(old, new) if len(lines[r - 1].rstrip("\r\n")) > style.line_length]
    if not rows:
        return new
    try:
        tree = ast.parse(new)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return new
    spans: List[Tuple[int, int]] = []
    for stmt in _simple_statements(tree):
        start, end = stmt.lineno, stmt.end_lineno or stmt.lineno
        if any(start <= r <= end for r in rows) and (start, end) not in spans:
            spans.append((start, end))
    decorators = set()
    for node in ast.walk(tree):  # a decorator line (``@torch.compile(mode=...)``) is formatted alone too
        for dec in getattr(node, "decorator_list", ()):
            start, end = dec.lineno, dec.end_lineno or dec.lineno
            if any(start <= r <= end for r in rows) and (start, end) not in spans:
                spans.append((start, end))
                decorators.add((start, end))
    # innermost first is not needed: simple statements do not nest; apply from the bottom up
    for start, end in sorted(spans, reverse=True):
        first = lines[start - 1]
        indent = first[:len(first) - len(first.lstrip(" \t"))]
        if "\t" in indent:
            continue
        chunk = "".join(lines[start - 1:end])
        # a statement shares its line with another ("a = 1; b = 2"): leave it
        body = textwrap.dedent(chunk)
        is_decorator = (start, end) in decorators
        if not body.strip() or (not is_decorator and _shares_line(tree, start, end)):
            continue
        code = body.replace("\r\n", "\n").replace("\r", "\n")
        if is_decorator:
            if not code.lstrip().startswith("@"):
                continue
            code = code.rstrip("\n") + "\n" + _STUB
        formatted = _format(code, style, max(style.line_length - len(indent), 1), path)
        if formatted is None:
            continue
        if is_decorator:
            if not formatted.endswith(_STUB):
                continue
            formatted = formatted[:-len(_STUB)]
        out = "".join((indent + ln if ln.strip() else ln) for ln in formatted.splitlines(keepends=True))
        if newline != "\n":
            out = out.replace("\n", newline)
        if not chunk.endswith(("\n", "\r")):
            out = out.rstrip("\r\n")
        lines[start - 1:end] = [out]
    result = "".join(lines)
    try:
        ast.parse(result)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return new
    return result


_STUB = "def _rocmport_stub():\n    pass\n"


def _shares_line(tree: ast.AST, start: int, end: int) -> bool:
    count = 0
    for stmt in _simple_statements(tree):
        s, e = stmt.lineno, stmt.end_lineno or stmt.lineno
        if s <= end and e >= start:
            count += 1
    return count > 1
