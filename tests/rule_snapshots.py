"""Reviewed snapshots of what every rule reports and fixes (ruff's ``.snap``).

``tests/snapshots/<CODE>.md`` holds, for the rule's ``EXAMPLE`` and each of its ``INVALID``
cases: the code, the findings as ``rocmport lint`` prints them (``line:col CODE [*] message``)
each with its fix's applicability and message, and what ``rocmport fix`` makes of the code,
as a unified diff. A change to a message, a position or a fix shows in review as a change to
that file. ``tests/test_rule_snapshots.py`` compares them with what the rules produce now;
``python scripts/regenerate.py`` rewrites them.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Dict, List, Sequence

from rocmport import prelude
from rocmport.findings import Applicability, Finding
from rocmport.registry import visitor_rules

from .harness import doc_example, fix, lint

SNAPSHOTS = Path(__file__).parent / "snapshots"
REGENERATE = "python scripts/regenerate.py"


def visible(line: str) -> str:
    """A line of code as the snapshot shows it: control characters escaped (``\\t``,
    ``\\r``, ``\\x0c``), trailing spaces as ``·``, so that the file holds no byte an editor or
    a diff would change or hide."""
    out = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in line)
    stripped = out.rstrip(" ")
    return stripped + "·" * (len(out) - len(stripped))


def collapsed(text: str) -> str:
    """``text`` with a generated prelude block shown as its two marker lines (its body is the
    prelude's, tested with the prelude, not any rule's output)."""
    block = prelude.find_block(text)
    if block is None:
        return text
    body = text[block.start:block.end]
    ending = body[len(body.rstrip("\r\n")):]
    lines = body[:len(body) - len(ending)].splitlines()
    if len(lines) <= 2:
        return text
    middle = f"# ... {len(lines) - 2} lines of the prelude (`rocmport prelude` prints them) ..."
    return text[:block.start] + "\n".join([lines[0], middle, lines[-1]]) + ending + collapsed(text[block.end:])


def _lines(text: str) -> List[str]:
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    else:
        lines[-1] += "\\ (no newline at end)"
    return [visible(line) for line in lines]


def _fence(body: str) -> str:
    longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=2)
    return "`" * max(3, longest + 1)


def _block(language: str, lines: Sequence[str]) -> List[str]:
    body = "\n".join(lines)
    fence = _fence(body)
    return [f"{fence}{language}", *lines, fence]


def finding_lines(findings: Sequence[Finding]) -> List[str]:
    """Each finding as ``rocmport lint`` prints it (default flags), then its fix."""
    out = []
    for f in findings:
        marker = " [*]" if f.applies(False) else ""
        out.append(f"{f.start.row}:{f.start.column} {f.code}{marker} {visible(f.message)}")
        if f.fix is None:
            out.append("    no fix")
        else:
            edits = "" if f.fix.edits or f.fix.applicability is Applicability.DISPLAY_ONLY else ", no edits"
            out.append(f"    fix ({f.fix.applicability.value}{edits}): {visible(f.fix.message)}")
    return out or ["(no finding)"]


def project_entry(rule, title: str, case) -> List[str]:
    """One section for a case about several modules: each other module of its project, then
    the case's own, and its findings with the project index (such a case is display-only)."""
    from tests.harness import lint_project

    out = [f"## {title}", ""]
    for name, text in case.files:
        out += [f"`{name}`:", "", *_block("python", _lines(collapsed(text))), ""]
    findings = [f for f in lint_project(case.code, case.path, case.files, select=[rule.CODE]) if f.code == rule.CODE]
    out += [f"`{case.path}` (linted):", "", *_block("python", _lines(collapsed(case.code))), "",
            *_block("text", finding_lines(findings)), "", "No fix applied.", ""]
    return out


def entry(rule, title: str, code: str) -> List[str]:
    """One section: the code, its findings, the fixed code as a diff."""
    unsafe = rule.FIX_APPLICABILITY is Applicability.UNSAFE
    findings = lint(code, select=[rule.CODE])
    out = [f"## {title}", "", *_block("python", _lines(collapsed(code))), "", *_block("text", finding_lines(findings)), ""]
    report = fix(code, select=[rule.CODE], unsafe=unsafe)
    if report.fixed is None:
        out += ["No fix applied.", ""]
        return out
    fixed = collapsed(report.fixed.decode("utf-8"))
    flags = " --unsafe-fixes" if unsafe else ""
    diff = difflib.unified_diff(_lines(collapsed(code)), _lines(fixed), title, f"{title} after `rocmport fix{flags}`",
                                lineterm="")
    out += [*_block("diff", [line.rstrip(" ") for line in diff]), ""]
    return out


def render(rule) -> str:
    """The snapshot of one rule."""
    fix_kind = rule.FIX_APPLICABILITY.value if rule.FIX_APPLICABILITY else "none"
    out = [
        f"# {rule.CODE} {rule.NAME}",
        "",
        f"<!-- Generated by `{REGENERATE}` from the rule's EXAMPLE and INVALID cases: review a change, "
        "do not edit. -->",
        "",
        f"Fix: {fix_kind}. Each section: the code, the findings as `rocmport lint` prints them (the "
        "fix's applicability and message under each), and what `rocmport fix` writes, as a diff.",
        "",
    ]
    if rule.EXAMPLE:
        out += entry(rule, "EXAMPLE", doc_example(rule.EXAMPLE))
    for i, case in enumerate(rule.INVALID):
        if getattr(case, "files", ()):
            out += project_entry(rule, f"INVALID[{i}]", case)
        else:
            out += entry(rule, f"INVALID[{i}]", case.code)
    return "\n".join(out).rstrip("\n") + "\n"


def snapshots() -> Dict[Path, str]:
    """Every rule's snapshot file and the text it must hold."""
    return {SNAPSHOTS / f"{rule.CODE}.md": render(rule) for rule in visitor_rules()}


def orphans(wanted: Dict[Path, str]) -> List[Path]:
    """Snapshot files of no rule (a rule removed or renumbered)."""
    return sorted(p for p in SNAPSHOTS.glob("*.md") if p not in wanted)
