"""What checking one file produced (vocabulary, like findings): the engine fills it in, the
runner and the cache hand it on, the faces read it. It imports nothing heavy, so a run
answered from the cache never loads the engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Dict, List, Optional, Tuple

from .findings import Finding, Position


# The findings about rocmport itself (their rules' documentation: rocmport.rules.tool).
UNREADABLE = ("ROC001", "unreadable-file")
NOT_APPLIED = ("ROC002", "fix-not-applied")


def unreadable(path: str, message: str, row: int, column: int, enabled: Collection[str]) -> List[Finding]:
    """ROC001 for a file that could not be read, decoded or parsed (none where it is off)."""
    code, name = UNREADABLE
    if code not in enabled:
        return []
    pos = Position(max(row, 1), max(column, 1))
    return [Finding(code, name, message, pos, pos, filename=path)]


def not_applied(finding: Finding, message: str, enabled: Collection[str]) -> Optional[Finding]:
    """ROC002 at ``finding``'s place: its fix was not applied, for ``message``'s reason."""
    code, name = NOT_APPLIED
    return Finding(code, name, message, finding.start, finding.end, filename=finding.filename,
                   span=finding.span) if code in enabled else None


@dataclass
class FileReport:
    """What the engine found in one file, and what ``fix`` would make of it."""

    path: str
    findings: List[Finding] = field(default_factory=list)
    original: Optional[bytes] = None
    fixed: Optional[bytes] = None  # the fixed bytes, when they differ from the original
    fixes_applied: int = 0
    applied: List[Tuple[str, int, bool]] = field(default_factory=list)  # (code, row, gated) of each fix
    extra_files: Dict[str, bytes] = field(default_factory=dict)  # generated prelude module
    # files whose fixed bytes this one's rely on (the module that defines the gate it imports):
    # written first, and this one is not written when one of them cannot be
    needs_written: Tuple[str, ...] = ()
    internal_error: Optional[str] = None
