"""Rewritten statements in the repository's own format.

A fix that gates a value (``"default" if is_rocm else "reduce-overhead"``) can push a
statement past the repository's line length. Where the repository formats its code with
ruff or black (``[tool.ruff]``, ``ruff.toml`` or ``[tool.black]``), each statement rocmport
changed and that no longer fits is handed to that formatter, alone, and put back with its
indentation: the result is what the repository's own ``ruff format``/``black`` would write, so
they leave it as it is. Nothing else in the file is touched. The formatter is the one
installed beside rocmport (``ruff`` on PATH or the ``black`` package); without it the
statement stays on one line.

The formatter's answer is not trusted: it replaces the statement only when it holds the
same syntax tree (``ast.dump``: line breaks, parentheses, quotes and trailing commas do not
count) and the same comments, and nothing around it. Formatters run as child processes in
a process group of their own, stopped whole at a deadline, within one budget per file.
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import tokenize
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


# The formatter is someone else's program: it may hang, spawn children, print bytes that
# are not UTF-8 or rewrite more than it was given. Each call runs in a process group of its
# own, killed whole at its deadline; one file gets FILE_BUDGET_S seconds of formatting in
# all, one call at most CALL_TIMEOUT_S, and a formatter that ran out of time once is not
# called again by this process (the statements stay on one line, as without a formatter).
FILE_BUDGET_S = 20.0
CALL_TIMEOUT_S = 10.0
_TIMED_OUT: set = set()


def _run(args: List[str], data: bytes, deadline: float, name: str, env=None) -> Optional[bytes]:
    """stdout of ``args`` fed ``data``, or None (failure, non-zero exit, out of time)."""
    timeout = min(CALL_TIMEOUT_S, deadline - time.monotonic())
    if name in _TIMED_OUT or timeout <= 0:
        return None
    try:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    try:
        out, _ = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _TIMED_OUT.add(name)
        _kill_group(proc)
        return None
    except (OSError, ValueError):
        _kill_group(proc)
        return None
    _kill_group(proc, wait=False)  # children it left behind
    return out if proc.returncode == 0 else None


def _kill_group(proc: subprocess.Popen, wait: bool = True) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if wait:
        try:
            proc.communicate(timeout=5)
        except (subprocess.SubprocessError, OSError, ValueError):
            pass


def _decode(out: Optional[bytes]) -> Optional[str]:
    if out is None:
        return None
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None  # not Python source as rocmport reads it: the statement stays as it was


def _run_ruff(codes: List[Tuple[str, int]], path: str, deadline: float) -> List[Optional[str]]:
    exe = shutil.which("ruff") or shutil.which("ruff", path=os.path.dirname(sys.executable))
    if exe is None:
        return [None] * len(codes)
    out = []
    for code, width in codes:
        args = [exe, "format", "--line-length", str(width), "--quiet"]
        if path not in ("", "-"):
            args += ["--stdin-filename", path]
        args.append("-")
        out.append(_decode(_run(args, code.encode("utf-8"), deadline, "ruff")))
    return out


# black runs in a child interpreter of rocmport's own (the black package installed beside
# it), all of a file's statements in one call: in-process it could not be stopped.
_BLACK = r"""
import json, sys
try:
    import black
except Exception:
    sys.exit(3)
out = []
for code, width, magic in json.loads(sys.stdin.buffer.read().decode("utf-8")):
    try:
        out.append(black.format_str(code, mode=black.Mode(line_length=width, magic_trailing_comma=magic)))
    except Exception:
        out.append(None)
sys.stdout.buffer.write(json.dumps(out).encode("utf-8"))
"""


def _run_black(codes: List[Tuple[str, int]], magic_trailing_comma: bool, deadline: float) -> List[Optional[str]]:
    if not codes or not sys.executable:
        return [None] * len(codes)
    data = json.dumps([(code, width, magic_trailing_comma) for code, width in codes]).encode("utf-8")
    out = _decode(_run([sys.executable, "-c", _BLACK], data, deadline, "black"))
    try:
        found = json.loads(out) if out is not None else None
    except ValueError:
        found = None
    if not isinstance(found, list) or len(found) != len(codes):
        return [None] * len(codes)
    return [item if isinstance(item, str) else None for item in found]


def _format(codes: List[Tuple[str, int]], style: Style, path: str) -> List[Optional[str]]:
    deadline = time.monotonic() + FILE_BUDGET_S
    if style.formatter == "ruff":
        return _run_ruff(codes, path, deadline)
    if style.formatter == "black":
        return _run_black(codes, style.magic_trailing_comma, deadline)
    return [None] * len(codes)


def _comments(code: str) -> Optional[List[str]]:
    """The comments of ``code`` in order, blanks removed (a formatter may write ``#x`` as
    ``# x``); None when it does not tokenize."""
    try:
        return ["".join(tok.string.split()) for tok in tokenize.generate_tokens(io.StringIO(code).readline)
                if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def _same_code(before: str, after: str, indent: str) -> bool:
    """Do two spellings of one statement (at ``indent``) hold the same syntax tree and the
    same comments? Only what formatting changes may differ: line breaks, parentheses,
    quotes, blanks, trailing commas."""
    def tree(code: str) -> Optional[str]:
        source = code if not indent else "if True:\n" + code
        try:
            return ast.dump(ast.parse(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    old = tree(before)
    return old is not None and old == tree(after) and _comments(before) == _comments(after) is not None


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
    # simple statements do not nest: each is formatted apart, all of them in one go
    jobs = []  # (start, end, indent, chunk, code, is_decorator)
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
        if not is_decorator and not _whole_lines(tree, start, end, len(indent)):
            continue  # the lines hold more than the statement (``if x: y = ...``)
        code = body.replace("\r\n", "\n").replace("\r", "\n")
        if is_decorator:
            if not code.lstrip().startswith("@"):
                continue
            code = code.rstrip("\n") + "\n" + _STUB
        jobs.append((start, end, indent, chunk, code, is_decorator))
    results = _format([(job[4], max(style.line_length - len(job[2]), 1)) for job in jobs], style, path)
    for (start, end, indent, chunk, code, is_decorator), formatted in zip(jobs, results):
        if formatted is None:
            continue
        formatted = formatted.strip("\n") + "\n"  # blank lines around it are not the statement's
        if is_decorator:
            if not formatted.endswith(_STUB) or not _same_code(code, formatted, ""):
                continue
            formatted = formatted[:-len(_STUB)]
        out = "".join((indent + ln if ln.strip() else ln) for ln in formatted.splitlines(keepends=True))
        if newline != "\n":
            out = out.replace("\n", newline)
        if not chunk.endswith(("\n", "\r")):
            out = out.rstrip("\r\n")
        stub = indent + _STUB.replace("\n", newline).replace(newline + "    ", newline + indent + "    ")
        if is_decorator:
            if not _same_code(_ends_line(chunk, newline) + stub, _ends_line(out, newline) + stub, indent):
                continue
        elif not _same_code(chunk, out, indent):
            continue  # the formatter changed what the statement does, or wrote more than it: kept as it was
        lines[start - 1:end] = [out]
    result = "".join(lines)
    try:
        ast.parse(result)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return new
    return result


def _ends_line(text: str, newline: str) -> str:
    return text if text.endswith(("\n", "\r")) else text + newline


def _whole_lines(tree: ast.AST, start: int, end: int, indent: int) -> bool:
    """Does the simple statement on lines ``start``-``end`` begin at the indentation (nothing
    of another statement before it on its first line)?"""
    for stmt in _simple_statements(tree):
        if stmt.lineno == start and (stmt.end_lineno or stmt.lineno) == end:
            return stmt.col_offset == indent
    return False


_STUB = "def _rocmport_stub():\n    pass\n"


def _shares_line(tree: ast.AST, start: int, end: int) -> bool:
    count = 0
    for stmt in _simple_statements(tree):
        s, e = stmt.lineno, stmt.end_lineno or stmt.lineno
        if s <= end and e >= start:
            count += 1
    return count > 1
