"""The engine: one file in, findings (and the fixed text) out. It never prints.

For each file: decode the bytes (keeping BOM, cookie and line endings), run the byte-level
prefilter, parse once with LibCST, build one ``MetadataWrapper`` so every metadata provider
runs once, visit the tree once with every enabled rule batched together, drop suppressed
findings. ``fix`` repeats that until no applicable fix remains: it applies non-overlapping
fixes as text edits, inserts or updates the prelude, and keeps the original text for any fix
whose result would not parse.
"""


from __future__ import annotations

from . import fixing, gating, house, linting, parsing, reformat
from .config import Settings
from .findings import Finding
from .reports import FileReport, not_applied, unreadable
from .source import SourceError, SourceText

# ------------------------------------------------------------------------------------------
# Entry points
# ------------------------------------------------------------------------------------------

def check_bytes(data: bytes, path: str, settings: Settings, *, fix: bool = False, index=None) -> FileReport:
    """Lint (or fix) the bytes of one Python file. Never raises for bad input. (Files of other
    kinds -- notebooks, shell, Dockerfiles, YAML, .env -- go through ``rocmport.inputs``.)"""
    report = FileReport(path=path, original=data)
    enabled, rules = linting.select_rules(settings, path)
    try:
        source = SourceText.from_bytes(data)
    except SourceError as exc:
        report.findings = unreadable(path, str(exc), exc.row, exc.column, enabled)
        return report
    with parsing.collector_paused():
        try:
            if fix:
                text, analysis, applied, notes, extra = fixing.fix_text(source.text, path, settings, rules, enabled, index,
                                                                        record=report.applied)
                if settings.is_entry_point(path):
                    text, extra = gating.with_setup(text, path, settings, rules, enabled, extra)
                    analysis = linting.analyze(text, path, settings, rules, enabled, index)
                if text != source.text:
                    formatted = reformat.reformat(source.text, text, house.style_for(path), path, analysis.lines.newline())
                    if formatted != text:
                        text = formatted
                        analysis = linting.analyze(text, path, settings, rules, enabled, index)
                report.findings = analysis.findings + [n for n in notes if n is not None]
                report.fixes_applied = applied
                report.extra_files = extra
                if text != source.text:
                    problem = source.rewrite_problem(data)
                    fixed = source.encode_changed(text) if problem is None else None
                    if fixed is not None:  # what is written is what Python will read
                        problem = source.written_problem(data, fixed)
                        fixed = None if problem is not None else fixed
                    if fixed is None:  # keep every byte: no fix rather than a changed file
                        problem = problem or f"the fixed text cannot be encoded in {source.encoding} byte for byte"
                        findings = linting.analyze(source.text, path, settings, rules, enabled, index).findings
                        notes = [not_applied(f, f"fix for {f.code} not applied: {problem}; the file is left as it was",
                                         enabled) for f in findings if f.applies(settings.unsafe_fixes)]
                        report.findings = findings + [n for n in notes if n is not None]
                        report.fixes_applied, report.extra_files, report.applied = 0, {}, []
                    else:
                        report.fixed = fixed
            else:
                report.findings = linting.analyze(source.text, path, settings, rules, enabled, index,
                                          partial=True).findings
        except (RecursionError, MemoryError, parsing.TooLarge) as exc:  # deeper or larger than can be walked
            report.findings = unreadable(path, parsing.too_much(exc), 1, 1, enabled)
            report.fixed, report.fixes_applied, report.extra_files = None, 0, {}
        except Exception as exc:  # a bug in rocmport: report it, go on with other files
            import traceback

            report.internal_error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
            report.findings = []
    for f in report.findings:
        f.filename = path
    report.findings.sort(key=Finding.sort_key)
    return report
