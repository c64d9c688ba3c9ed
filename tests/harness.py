"""Shared test helpers: lint/fix a snippet, and the four properties every fix must have.

1. the output parses; 2. a second ``fix`` changes nothing; 3. every byte outside the
rewritten spans is kept (checked independently of the engine, line by line); 4. the NVIDIA
path evaluates as before (see ``exec_harness``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List, Optional, Sequence

import libcst as cst

from rocmport import placement, prelude
from rocmport.config import Settings
from rocmport.reports import FileReport
from rocmport.inputs import check_bytes
from rocmport.findings import Applicability, Finding
from rocmport.source import LineIndex, SourceText

FIXTURES = Path(__file__).parent / "fixtures"
_PRELUDE_RE = re.compile(r"\{PRELUDE(?::(?P<parts>[a-z_,]+))?(?: gate=(?P<gate>\w+))?(?P<reuse> reuse)?\}")


def settings(select: Optional[Sequence[str]] = None, unsafe: bool = False, **kw) -> Settings:
    return Settings(select=tuple(select) if select else None, unsafe_fixes=unsafe, **kw)


def _bytes(src) -> bytes:
    return src.encode("utf-8") if isinstance(src, str) else src


def lint(src, select=None, path: str = "snippet.py", **kw) -> List[Finding]:
    report = check_bytes(_bytes(src), path, settings(select, **kw))
    assert report.internal_error is None, report.internal_error
    return report.findings


def codes(src, select=None, **kw) -> List[str]:
    return [f.code for f in lint(src, select, **kw)]


def fix(src, select=None, unsafe: bool = False, path: str = "snippet.py", **kw) -> FileReport:
    report = check_bytes(_bytes(src), path, settings(select, unsafe, **kw), fix=True)
    assert report.internal_error is None, report.internal_error
    return report


def fixed_text(src, select=None, unsafe: bool = False, **kw):
    report = fix(src, select, unsafe, **kw)
    data = report.fixed if report.fixed is not None else _bytes(src)
    return data.decode("utf-8") if isinstance(src, str) else data


def expand_prelude(expected: str, newline: str = "\n") -> str:
    """Replace ``{PRELUDE}`` / ``{PRELUDE gate=x}`` with the gate line rocmport adds, so
    cases do not repeat its text (``{PRELUDE:graph_helper}``: the marker block of that part;
    ``reuse``: the file binds the gate itself)."""
    def render(match):
        parts = (match.group("parts") or "").split(",") if match.group("parts") else []
        gate = match.group("gate") or prelude.DEFAULT_GATE
        if "graph_helper" in parts:
            return prelude.render_inline(gate, parts, prelude.PreludeOptions(), define_gate=not match.group("reuse"),
                                         newline=newline).rstrip("\r\n")
        return "" if match.group("reuse") else placement.gate_text(gate, "torch")
    return _PRELUDE_RE.sub(render, expected)


def split_lines(data: bytes) -> List[bytes]:
    return data.splitlines(keepends=True) if b"\r" not in data else re.split(rb"(?<=\n)|(?<=\r)(?!\n)", data)


def assert_fix_properties(original: bytes, select=None, unsafe: bool = False,
                          path: str = "snippet.py", **kw) -> FileReport:
    """Properties 1-3 for one input. Returns the fix report."""
    first_lint = [f for f in lint(original, select, path=path, **kw) if f.applies(unsafe)]
    report = fix(original, select, unsafe, path=path, **kw)
    if report.fixed is None:
        assert not first_lint, f"fixable findings but nothing changed: {first_lint}"
        return report
    fixed = report.fixed
    # 1. parses (LibCST, and CPython's compiler where this interpreter's grammar allows it)
    text = SourceText.from_bytes(fixed).text
    cst.parse_module(text)
    # 2. idempotent
    again = fix(fixed, select, unsafe, path=path, **kw)
    assert again.fixed is None, "a second fix changed the file again:\n" + again.fixed.decode("utf-8", "replace")
    # 3. bytes outside the fixed spans are kept: the untouched lines of the original appear
    #    in the output, byte for byte and in order; BOM and cookie lines included.
    touched = set()
    for f in first_lint:
        touched.update(range(f.start.row, f.end.row + 1))
    bom = b"\xef\xbb\xbf"
    body, fixed_body = (original[3:], fixed[3:]) if original.startswith(bom) and fixed.startswith(bom) \
        else (original, fixed)  # the BOM is checked below: it need not stay on the same line
    kept = [line for row, line in enumerate(split_lines(body), 1) if row not in touched]
    out_lines = split_lines(fixed_body)
    it = iter(out_lines)
    for line in kept:
        for candidate in it:
            if candidate == line:
                break
        else:
            raise AssertionError(f"original line {line!r} is missing or changed in the fixed output")
    if original.startswith(b"\xef\xbb\xbf"):
        assert fixed.startswith(b"\xef\xbb\xbf")
    return report


def fixture_pairs(family: str):
    """(input path, expected path or None) for every fixture of a family."""
    directory = FIXTURES / family
    for path in sorted(directory.glob("*.py")):
        if path.name.endswith(".expected.py"):
            continue
        expected = path.with_name(path.name[:-3] + ".expected.py")
        yield path, (expected if expected.exists() else None)


def check_fixture_pair(path: Path, expected: Optional[Path], select=None) -> FileReport:
    """One fixture: the fix properties always; the expected output (``{PRELUDE}`` expanded
    with the file's own newline), or, for a near-miss without one, no finding and no change."""
    original = path.read_bytes()
    report = assert_fix_properties(original, select=select, path=str(path))
    if expected is None:
        assert not lint(original, select=select, path=str(path)), "near-miss file has findings"
        assert report.fixed is None
        return report
    source = SourceText.from_bytes(expected.read_bytes())
    want = source.to_bytes(expand_prelude(source.text, LineIndex(source.text).newline()))
    assert report.fixed == want
    return report


def check_case(code: str, case, kind: str) -> None:
    """One Fixit-style case of rule ``code``: a valid case gives no finding of the rule, with the
    prefilters on and off (so detection itself leaves it alone, not only the prefilter); an
    invalid one gives one (at ``case.line``/``case.column`` with ``case.message`` where the case
    says), and every code of ``case.codes`` too with those rules selected, fixes to
    ``case.expected`` where given (unsafe fixes for an unsafe rule), and keeps the fix
    properties. A case is linted as the file ``case.path``."""
    from rocmport.analysis.prescan import PREFILTER
    from rocmport.registry import get

    unsafe = get(code).FIX_APPLICABILITY is Applicability.UNSAFE
    path = getattr(case, "path", "snippet.py")
    if kind == "valid":
        for enabled in (True, False):
            PREFILTER["enabled"] = enabled
            try:
                found = [f for f in lint(case.code, select=[code], path=path) if f.code == code]
            finally:
                PREFILTER["enabled"] = True
            assert not found, f"{code} should not fire (prefilters {'on' if enabled else 'off'}) on:\n{case.code}\n{found}"
        return
    select = sorted({code, *case.codes})
    everything = lint(case.code, select=select, path=path)
    found = [f for f in everything if f.code == code]
    assert found, f"{code} should fire on:\n{case.code}"
    missing = set(case.codes) - {f.code for f in everything}
    assert not missing, f"{code}'s case also expects {sorted(missing)}"
    first = found[0]
    if case.line is not None:
        assert first.start.row == case.line, f"{code}: line {first.start.row}, the case says {case.line}"
    if case.column is not None:
        assert first.start.column == case.column, f"{code}: column {first.start.column}, the case says {case.column}"
    if case.message is not None:
        assert first.message == case.message, f"{code}: message {first.message!r}, the case says {case.message!r}"
    if case.expected is not None:
        assert fixed_text(case.code, select=select, unsafe=unsafe, path=path) == expand_prelude(case.expected)
    assert_fix_properties(case.code.encode(), select=select, unsafe=unsafe, path=path)


# The imports a rule's documentation example takes for granted.
EXAMPLE_IMPORTS = ("import os\nimport time\n\nimport torch\nimport torch._inductor.config\nimport triton\n"
                   "import triton.language as tl\n\n")


def doc_example(text: str) -> str:
    """A rule's EXAMPLE or FIXED_EXAMPLE as a module: its imports, then the dedented code."""
    import textwrap

    return EXAMPLE_IMPORTS + textwrap.dedent(text).strip("\n") + "\n"


_GATE_LINE_RE = re.compile(r"^[ \t]*\w+ = getattr\((?:getattr\()?\w+(?:\.version)?, .*\) is not None$")


def without_prelude(text: str) -> str:
    """``text`` without the prelude block, the gate line and empty lines."""
    block = prelude.find_block(text)
    if block is not None:
        text = text[:block.start] + text[block.end:]
    return "\n".join(line for line in text.splitlines() if line.strip() and not _GATE_LINE_RE.match(line)) + "\n"
