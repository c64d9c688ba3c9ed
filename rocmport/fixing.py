"""The fix stage: apply fixes and analyse again until nothing changes; a fix whose result
would not parse is kept out (ROC002).
"""


from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from . import gating, linting, parsing, placement
from .config import Settings
from .file_analysis import FileAnalysis
from .findings import Edit, Finding
from .reports import not_applied
from .source import apply_edits

MAX_FIX_PASSES = 8


# ------------------------------------------------------------------------------------------
# Fixing
# ------------------------------------------------------------------------------------------

def _fix_key(f: Finding) -> Tuple[str, Tuple[Edit, ...]]:
    return (f.code, f.fix.edits if f.fix else ())


def apply_fixes(analysis: FileAnalysis, group: List[Finding], path: str,
                settings: Settings) -> Tuple[Optional[str], Dict[str, bytes], Optional[str], List[Edit]]:
    """The analysed text with the fixes of ``group`` applied as the fix loop applies them:
    their edits once each, and the prelude parts they need as a block, merged with a gate line
    inserted at the same point. (new text, or None when it would not parse; the generated
    files; why not; the edits)."""
    text = analysis.text
    edits = placement.dedupe([e for f in group for e in f.fix.edits])
    requires = {r for f in group for r in f.fix.requires} - {"gate"}
    files: Dict[str, bytes] = {}
    if requires:
        # the block goes after the imports that come before the fix's own code (not before
        # an import or gate line the fix inserts at the top of the file)
        own = [e.start for e in edits if not (e.start == e.end and (
            gating.binds_gate(e.content, analysis.gate) or e.content.lstrip().startswith(("import ", "from "))))]
        pedit, files, problem = gating.prelude_edit(analysis, requires, min(own or [e.start for e in edits]), path,
                                                    settings)
        if problem is not None:
            return None, files, problem, edits
        if pedit is not None:
            # the gate line and a new block at one point: the gate first, then the block
            for i, e in enumerate(edits):
                if e.start == e.end == pedit.start and gating.binds_gate(e.content, analysis.gate):
                    newline = analysis.lines.newline()
                    edits[i] = Edit(e.start, e.end, e.content.rstrip("\r\n") + newline * 2
                                    + pedit.content.lstrip("\r\n"))
                    pedit = None
                    break
        if pedit is not None:
            if any(pedit.overlaps(e) for e in edits):
                return None, files, "the generated block would overlap the fix", edits
            edits.append(pedit)
    if settings.reason_comments:  # a one-line comment above each statement a fix gates
        from . import house, reasons

        edits = reasons.comment_edits(text, group, analysis.gate, edits, analysis.lines.newline(),
                                      house.style_for(path).line_length)
    new_text = apply_edits(text, edits)
    error = parsing.parse_error(new_text, (analysis, edits))
    if error:
        return None, files, f"the result would not parse ({error})", edits
    return new_text, files, None, edits


def fix_text(text: str, path: str, settings: Settings, rules, enabled, index=None,
             record: Optional[List[Tuple[str, int, bool]]] = None) -> Tuple[str, FileAnalysis, int, List[Finding], Dict[str, bytes]]:
    """Apply fixes until none applies. Returns (text, last analysis, fixes applied, notes, extra files).
    ``record``: a list that gets (code, row, gated) of each fix applied: the row in the original
    text (0 for a fix of a later pass) and whether its code tests the ROCm gate, for the pull
    request's description (``--pr-body``).

    A rule whose fixes have not settled after MAX_FIX_PASSES passes (each pass finds its fix
    again: a fix its own detection does not see as done) gets none of its fixes applied: the
    passes are made again from ``text`` without them, and each of its findings is an ROC002
    note. Its passes' edits would otherwise stay, one per pass."""
    withheld: Set[str] = set()
    while True:
        passes: Optional[List[Tuple[str, int, bool]]] = [] if record is not None else None
        fixed, analysis, applied, notes, extra, unsettled = _fix_passes(text, path, settings, rules, enabled, index,
                                                                        passes, withheld)
        if not unsettled:
            break
        withheld |= unsettled
    unsafe = settings.unsafe_fixes
    for f in analysis.findings:
        if f.code in withheld and f.applies(unsafe):
            notes.append(not_applied(f, f"fix for {f.code} did not settle after {MAX_FIX_PASSES} passes: none of"
                                        " its fixes was applied", enabled))
    if record is not None and passes is not None:
        record.extend(passes)
    return fixed, analysis, applied, notes, extra


def _fix_passes(text: str, path: str, settings: Settings, rules, enabled, index,
                record: Optional[List[Tuple[str, int, bool]]], withheld: Set[str]):
    """The passes of :func:`fix_text`, the fixes of the ``withheld`` codes left out. Returns
    (text, last analysis, fixes applied, notes, extra files, the codes whose fixes still
    applied after the last pass)."""
    unsafe = settings.unsafe_fixes
    failed: Set = set()
    notes: List[Finding] = []
    applied = 0
    extra: Dict[str, bytes] = {}
    for _ in range(MAX_FIX_PASSES):
        analysis = linting.analyze(text, path, settings, rules, enabled, index)
        candidates = [f for f in analysis.findings
                      if f.applies(unsafe) and f.code not in withheld and _fix_key(f) not in failed]
        if not candidates or analysis.module is None:
            parsing.forget_last_parse()
            return text, analysis, applied, notes, extra, set()
        chosen: List[Finding] = []
        taken: List[Edit] = []
        for f in sorted(candidates, key=lambda f: (f.span, f.code)):
            own = [e for e in f.fix.edits if e not in taken]
            if any(e.overlaps(t) for e in own for t in taken):
                continue
            chosen.append(f)
            taken.extend(own)

        new_text, files, error = apply_fixes(analysis, chosen, path, settings)[:3]
        if new_text is None:
            good = []
            for f in chosen:
                t, _, reason, _ = apply_fixes(analysis, [f], path, settings)
                if t is None:
                    failed.add(_fix_key(f))
                    notes.append(not_applied(f, f"fix for {f.code} not applied: {reason}", enabled))
                else:
                    good.append(f)
            if not good:
                continue
            chosen = good
            new_text, files, error = apply_fixes(analysis, chosen, path, settings)[:3]
            if new_text is None:  # each applies alone, not together: one now, the rest next pass
                chosen = good[:1]
                new_text, files, error = apply_fixes(analysis, chosen, path, settings)[:3]
        text = new_text
        applied += len(chosen)
        if record is not None:  # rows of the original text (first pass) only; whether it tests the gate
            record.extend((f.code, f.start.row if applied == len(chosen) else 0,
                           any(e.start != e.end and (analysis.gate in e.content or "version.hip" in e.content)
                               for e in f.fix.edits)) for f in chosen)
        extra.update(files)
    analysis = linting.analyze(text, path, settings, rules, enabled, index)
    parsing.forget_last_parse()
    unsettled = {f.code for f in analysis.findings
                 if f.applies(unsafe) and f.code not in withheld and _fix_key(f) not in failed}
    return text, analysis, applied, notes, extra, unsettled
