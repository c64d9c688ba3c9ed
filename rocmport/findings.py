"""The data rocmport's engine hands to output formats: findings, fixes and edits.

Edits are expressed as character offsets into the decoded source text; positions shown to
users are 1-based rows and 1-based columns counted in Unicode code points (ruff's and
SARIF's ``unicodeCodePoints``). The end column is exclusive.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional, Tuple


class Applicability(str, enum.Enum):
    """How far a fix may be trusted (ruff's model)."""

    SAFE = "safe"  # NVIDIA path unchanged, ROCm path is the intended port
    UNSAFE = "unsafe"  # valid code that may change behaviour; applied only on request
    DISPLAY_ONLY = "display-only"  # a suggestion that is never applied

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value


@dataclass(frozen=True)
class Position:
    row: int  # 1-based
    column: int  # 1-based, code points


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``content`` (offsets into the decoded source)."""

    start: int
    end: int
    content: str
    # 1-based positions of start and end, for output formats (filled in by the rule context)
    location: Optional[Position] = field(default=None, compare=False)
    end_location: Optional[Position] = field(default=None, compare=False)

    def overlaps(self, other: "Edit") -> bool:
        if self.start == self.end == other.start == other.end:
            return True  # two insertions at one point: order would be ambiguous
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: Tuple[Edit, ...] = ()
    # Names of prelude parts the edited code relies on ("gate", "mode_mapper", ...).
    # The engine asks the prelude generator for them; a rule never writes the prelude.
    requires: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Related:
    """Another place of the same finding: a copy of the decision it reports (one finding per
    decision), shown in JSON as ``related_locations`` and in SARIF as ``relatedLocations``."""

    start: Position
    end: Position
    message: str = ""


# What a finding's place is: code of the package ("source"), or a test module ("tests": it
# imports pytest or unittest and defines tests, or is a conftest). ``--scope`` picks one.
SCOPES = ("source", "tests")


@dataclass
class Finding:
    code: str
    name: str
    message: str
    start: Position
    end: Position
    fix: Optional[Fix] = None
    filename: str = "-"
    cell: Optional[int] = None
    url: Optional[str] = None
    # offsets of the reported span in the decoded text (used for noqa and sorting)
    span: Tuple[int, int] = field(default=(0, 0), compare=False)
    # the other places of the same decision (the engine groups findings of a rule that carry
    # the same ``decision`` key: ``rocmport.linting``); kept in source order
    related: Tuple[Related, ...] = ()
    # the rule's grouping key: findings of one rule in one file with the same key report one
    # decision (a display-only rule that meets the same choice many times). Not serialised:
    # the engine has grouped them before a finding leaves it.
    decision: Optional[str] = field(default=None, compare=False)
    scope: str = "source"  # "source" or "tests" (SCOPES)
    # why this is not a port, so a fix leaves it alone (a skipped test, a test of CUDA graphs,
    # code for NVIDIA GPUs only, a test the repository already runs on ROCm); None: a port

    not_a_port: Optional[str] = None

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.applicability is not Applicability.DISPLAY_ONLY

    def applies(self, unsafe_fixes: bool) -> bool:
        """True when the current flags would apply this finding's fix."""
        if self.fix is None or not self.fix.edits:
            return False
        if self.fix.applicability is Applicability.SAFE:
            return True
        return unsafe_fixes and self.fix.applicability is Applicability.UNSAFE

    def sort_key(self):
        return (self.filename, self.cell or 0, self.start.row, self.start.column, self.code)


# -- serialisation (the cache stores findings as JSON) --------------------------------------

def _pos(p: Optional[Position]):
    return None if p is None else [p.row, p.column]


def _unpos(v) -> Optional[Position]:
    return None if v is None else Position(v[0], v[1])


def finding_to_data(f: Finding) -> dict:
    fix = None
    if f.fix is not None:
        fix = {"a": f.fix.applicability.value, "m": f.fix.message, "r": list(f.fix.requires),
               "e": [[e.start, e.end, e.content, _pos(e.location), _pos(e.end_location)] for e in f.fix.edits]}
    return {"c": f.code, "n": f.name, "m": f.message, "s": _pos(f.start), "e": _pos(f.end), "f": fix,
            "cell": f.cell, "u": f.url, "sp": list(f.span),
            "rel": [[_pos(r.start), _pos(r.end), r.message] for r in f.related], "sc": f.scope, "np": f.not_a_port}


def finding_from_data(d: dict, filename: str) -> Finding:
    fix = None
    if d["f"] is not None:
        x = d["f"]
        fix = Fix(Applicability(x["a"]), x["m"],
                  tuple(Edit(s, e, c, _unpos(l), _unpos(el)) for s, e, c, l, el in x["e"]), tuple(x["r"]))
    return Finding(d["c"], d["n"], d["m"], _unpos(d["s"]), _unpos(d["e"]), fix, filename, d["cell"], d["u"],
                   tuple(d["sp"]), tuple(Related(_unpos(s), _unpos(e), m) for s, e, m in d["rel"]),
                   scope=d["sc"], not_a_port=d["np"])
