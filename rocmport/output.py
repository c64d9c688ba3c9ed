"""Output formats. Each takes the engine's findings and returns text; none reads files."""

from __future__ import annotations

import json
from typing import Callable, Dict, List, Sequence

from .findings import Finding

FORMATS = ("concise", "json")


def _location(f: Finding) -> str:
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{f.filename}:{cell}{f.start.row}:{f.start.column}"


def concise(findings: Sequence[Finding], unsafe_fixes: bool, **_) -> str:
    lines = []
    for f in findings:
        marker = " [*]" if f.applies(unsafe_fixes) else ""
        lines.append(f"{_location(f)}: {f.code}{marker} {f.message}")
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
        "url": f.url,
        "cell": f.cell,
    }


def as_json(findings: Sequence[Finding], unsafe_fixes: bool, **_) -> str:
    return json.dumps([finding_dict(f) for f in findings], indent=2) + "\n"


FORMATTERS: Dict[str, Callable[..., str]] = {"concise": concise, "json": as_json}
