"""One gate for a package (issue 29): where a ``fix`` run gives several modules of one
package a gate line each, and the package (or one above it: the nearest) has a utilities
module that imports torch, the line goes there once, as a private name (``_is_rocm``), and
those modules import it; a utilities module that got a gate line of its own is the gate.

The plan is made from the first round's reports (``plan``); the modules are then fixed
again with the project index reading the utilities module as it will be written, and the
house-gate machinery (``placement.house_gate``, proved by ``rocmport.reuse``: no import
cycle, no import-time effect, the name bound once) decides for each module whether it may
import the name. A module it does not prove keeps its own line; where fewer than two lines
go, nothing changes (``taken``). The utilities module is one of the files being fixed
(a run that names only some files never edits another), is no test, imports torch at module
level itself (the gate adds no dependency), and does not use the name already.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Dict, List, Optional, Sequence

import libcst as cst

from . import house, parsing, placement
from .analysis.metadata import Metadata
from .analysis.testing import is_test_module
from .prelude import PACKAGE_GATE
from .reports import FileReport
from .source import LineIndex, SourceError, SourceText, apply_edits

# Module names a package's shared helpers go by, most usual first (``pkg/utils.py`` or
# ``pkg/utils/__init__.py``).
UTILITY_NAMES = ("utils", "_utils", "util", "utilities", "common", "_common")

# A gate line as ``placement.gate_text`` writes it (either quote), at module level (column 0).
_GATE_LINE = re.compile("(?m)^(\\w+)(?:" + "|".join(
    re.escape(placement.gate_text("", "TORCH", quote)).replace("TORCH", "\\w+") for quote in "\"'")
    + ")[ \\t]*\\r?$")


@dataclasses.dataclass
class Plan:
    """The utilities module of one package and the modules that may import its gate."""

    slot: int  # the utilities module's report
    text: bytes  # its bytes with the gate, as they would be written
    importers: List[int]  # the reports of the modules that got a gate line of their own
    own: bool  # the utilities module got its own gate line in the first round (it is the gate)
    applied: Dict[int, int]  # fixes applied to each importer in the first round


def _text(data: Optional[bytes]) -> Optional[str]:
    if data is None:
        return None
    try:
        return SourceText.from_bytes(data).text
    except SourceError:
        return None


def added_gate(report: FileReport) -> Optional[str]:
    """The name of the module-level gate line the fix added to the file (None: none)."""
    if report.fixed is None or report.internal_error is not None or b"hip" not in report.fixed:
        return None
    fixed, original = _text(report.fixed), _text(report.original)
    if fixed is None or original is None:
        return None
    before = set(_GATE_LINE.findall(original))
    added = [name for name in _GATE_LINE.findall(fixed) if name not in before]
    return added[0] if len(added) == 1 else None


def plan(files: Sequence[str], reports: Sequence[FileReport], index) -> List[Plan]:
    """Each utilities module that two or more of the modules that got a gate line would
    share (itself among them when it got one), with its bytes as they would be written."""
    slot_of = {os.path.abspath(path): slot for slot, path in enumerate(files)}
    texts: Dict[int, Optional[bytes]] = {}  # utilities module -> its bytes with the gate (None: unusable)
    needy = {slot for slot, report in enumerate(reports) if report is not None and added_gate(report) is not None}
    groups: Dict[int, List[int]] = {}
    for slot in sorted(needy):
        name = index.module_name(files[slot])
        if name is None or "." not in name:
            continue  # a script or a top-level module: no package to share a gate with
        for package in _packages(name, files[slot]):
            utility = _utility(index, package, slot_of)
            if utility is None:
                continue
            if utility not in texts:
                texts[utility] = (reports[utility].fixed if utility in needy
                                  else _with_gate(files[utility], reports[utility]))
            if texts[utility] is not None:
                groups.setdefault(utility, []).append(slot)
                break
    plans = []
    for utility, members in sorted(groups.items()):
        own = utility in needy
        importers = [m for m in members if m != utility]
        if len(importers) < (1 if own else 2):
            continue
        plans.append(Plan(utility, texts[utility], importers, own, {m: reports[m].fixes_applied for m in importers}))
    return plans


def _packages(name: str, path: str) -> List[str]:
    """The packages a module is in, innermost first (a package's ``__init__`` is in itself)."""
    parts = name.split(".") if os.path.basename(path).startswith("__init__.") else name.split(".")[:-1]
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


def _utility(index, package: str, slot_of: Dict[str, int]) -> Optional[int]:
    """The report slot of ``package``'s utilities module, when it is among the files fixed."""
    for util in UTILITY_NAMES:
        path = index.path_of(f"{package}.{util}")
        if path is not None and path in slot_of:
            return slot_of[path]
    return None


def _with_gate(path: str, report: FileReport) -> Optional[bytes]:
    """The utilities module's bytes (as the first round leaves them) with the gate line after
    its import block; None where it does not import torch there or uses the name."""
    data = report.fixed if report.fixed is not None else report.original
    if data is None or report.internal_error is not None:
        return None
    try:
        source = SourceText.from_bytes(data)
    except SourceError:
        return None
    text = source.text
    if PACKAGE_GATE in text:
        return None
    tree, deep = parsing.cpython_parse(text)
    if tree is None or deep is not None or is_test_module(tree, path):
        return None
    try:
        module = parsing.parse(text, tree)
    except (cst.ParserSyntaxError, RecursionError, parsing.TooLarge):
        return None  # a module LibCST cannot read is not edited
    if not any(placement.torch_binding(stmt) for stmt in module.body) or placement.torch_optional(module):
        return None  # the gate would make torch required there
    style = house.style_for(path)
    lines = LineIndex(text)
    gate_plan = placement.Placer(module, Metadata(module), text, lines, PACKAGE_GATE, quote=style.quote,
                                 lines_after_imports=style.lines_after_imports).plan(len(text))
    if gate_plan.edit is None or gate_plan.extra or not _GATE_LINE.search(gate_plan.edit.content):
        return None  # not the plain line after the module's own binding of torch
    updated = apply_edits(text, [gate_plan.edit])
    if parsing.parse_error(updated) is not None:
        return None
    written = source.encode_changed(updated)
    if written is None or source.written_problem(data, written) is not None:
        return None
    return written


def taken(plan: Plan, again: Dict[int, FileReport]) -> Dict[int, FileReport]:
    """The second round's reports the run keeps: those of modules that import the gate now
    (no gate line of their own, nothing lost), when that saves lines; else none."""
    keep = {slot: report for slot, report in again.items()
            if report.internal_error is None and report.fixed is not None and added_gate(report) is None
            and report.fixes_applied == plan.applied.get(slot)}
    needed = 1 if plan.own else 2  # the utilities module's line must be paid for
    return keep if len(keep) >= needed else {}


def with_gate(plan: Plan, report: FileReport, written: Optional[FileReport]) -> FileReport:
    """The utilities module's report with the gate line in what is written, and its findings
    as a lint of that text places them (``written``)."""
    if plan.own:
        return report
    findings = written.findings if written is not None and written.internal_error is None else report.findings
    return dataclasses.replace(report, fixed=plan.text, findings=findings)
