"""What checking one file produced (vocabulary, like findings): the engine fills it in, the
runner and the cache hand it on, the faces read it. It imports nothing heavy, so a run
answered from the cache never loads the engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .findings import Finding


@dataclass
class FileReport:
    """What the engine found in one file, and what ``fix`` would make of it."""

    path: str
    findings: List[Finding] = field(default_factory=list)
    original: Optional[bytes] = None
    fixed: Optional[bytes] = None  # the fixed bytes, when they differ from the original
    fixes_applied: int = 0
    extra_files: Dict[str, bytes] = field(default_factory=dict)  # generated prelude module
    internal_error: Optional[str] = None
