"""The analyse stage: the rules run on one text, once (prefilters, one parse, one batched
visit), suppression comments applied, and each fix completed with the edits that bind its
gate.
"""


from __future__ import annotations

import dataclasses
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple, Type

import libcst as cst

from rocmport.analysis import inert as _inert
from rocmport.analysis import prescan as _prescan
from rocmport.analysis import testing as _testing
from rocmport.analysis import walk as _walk
from rocmport.analysis.metadata import Metadata
from rocmport.analysis.prescan import PREFILTER
from rocmport.analysis.resolve import ScopeBindings
from rocmport.rules.base import Rule, RuleContext, RuleOptions

from . import gating, house, parsing, placement, prelude, suppression
from .config import Settings
from .file_analysis import FileAnalysis
from .findings import Applicability, Finding, Fix, Related
from .registry import text_triggered, visitor_rules
from .reports import unreadable
from .source import LineIndex


def select_rules(settings: Settings, path: str) -> Tuple[FrozenSet[str], List[Type[Rule]]]:
    enabled = settings.enabled_codes(path)
    return enabled, [rule for rule in visitor_rules() if rule.CODE in enabled]


def analyze(text: str, path: str, settings: Settings, rules: Sequence[Type[Rule]],
            enabled: FrozenSet[str], index=None, partial: bool = False) -> FileAnalysis:
    """Lint ``text`` once. Raises nothing for bad input: it becomes an ROC001 finding. With
    ``partial`` (a lint, whose tree no fix is applied to), the definitions that no rule
    run on the file reads are left unparsed (:func:`parse_partial`)."""
    lines = LineIndex(text)
    if PREFILTER["enabled"]:
        triggered = text_triggered(rules, text, index)
    else:
        triggered = list(rules)
    if not triggered:
        # Nothing can match: only check that the file parses, with CPython's fast parser.
        error = parsing.quick_syntax_error(text) if "ROC001" in enabled else None
        findings = [error] if error else []
        if findings and settings.scope != "all":
            findings = [] if not in_scope(file_scope(_quick_tree(text), path), settings) else findings
        for f in findings:
            f.filename = path
        return FileAnalysis(text, findings, lines=lines)
    reduction = None
    if PREFILTER["enabled"] and parsing.REDUCE["enabled"] and parsing.reducible(text) \
            and not parsing.parsed_last(text):
        # a large file: the module-level statements that no rule of it reads are left out of
        # both trees (``analysis/inert.py``)
        words = _inert.seed_words(triggered, index)
        reduction = parsing.reduced(text, lines, words) if words is not None else None
    if reduction is not None:
        tree, deep = reduction.tree, None
    else:
        tree, deep = parsing.cpython_parse(text)
    scope = file_scope(tree, path)
    if not in_scope(scope, settings):
        return FileAnalysis(text, [], lines=lines)  # --scope leaves this file out
    if deep is not None:
        return FileAnalysis(text, _scoped(unreadable(path, *deep, enabled), scope), lines=lines)
    facts = _prescan.Facts.of(tree) if tree is not None else None
    if facts is not None:
        facts.index, facts.path = index, path
    if facts is not None and PREFILTER["enabled"]:
        triggered = [r for r in triggered if r.may_match(facts)]
        if not triggered:
            return FileAnalysis(text, [], lines=lines)  # it parses (CPython): nothing can match
    try:
        if reduction is not None and reduction.module is not None:
            module = reduction.module
        else:
            module = parsing.parse_partial(text, lines, tree, facts, triggered) if partial and PREFILTER["enabled"] \
                else None
            if module is None:
                module = parsing.parse(text, tree)
    except cst.ParserSyntaxError as exc:
        return FileAnalysis(text, _scoped(parsing.syntax_findings(path, text, exc, enabled), scope), lines=lines)
    except RecursionError:
        return FileAnalysis(text, unreadable(path, "cannot parse: nesting too deep", 1, 1, enabled), lines=lines)
    except parsing.TooLarge as exc:
        return FileAnalysis(text, unreadable(path, str(exc), 1, 1, enabled), lines=lines)
    lost = parsing.lost_continuation(text, module, lines)
    if lost is not None:
        return FileAnalysis(text, unreadable(path, "cannot be checked safely: LibCST drops the backslash continuation"
                                            f" that begins line {lost}; join it to the next line", lost, 1,
                                      enabled), lines=lines)
    wrapper = Metadata(module, tree, text)
    block = prelude.find_block(text)
    gate, binding = gating.choose_gate(module, text, block)
    style = house.style_for(path)

    def run(gate: str) -> Optional[List[Finding]]:
        context = RuleContext(path=path, text=text, module=module, wrapper=wrapper, lines=lines,
                              gate_name=gate, options=RuleOptions(unsafe_fixes=settings.unsafe_fixes,
                                                                   extra={"enabled_for": settings.enabled_codes}),
                              facts=facts, index=index)
        context.quote = style.quote
        context.scopes = ScopeBindings(module, wrapper.parents.get)
        try:
            # Not wrapper.visit_batched: that would resolve every declared provider up front.
            # Rules resolve metadata lazily through their context (Rule.get_metadata); the
            # visit records each node's parent on its way (Metadata.enter / leave). LibCST's
            # calls, in its order, without rebuilding the tree (_walk).
            _walk.visit_batched(module, [rule(context) for rule in triggered],
                                before_visit=wrapper.enter, after_leave=wrapper.leave, skip_whitespace=True)
        except RecursionError:
            return None
        finally:
            context.release()
        return _unsuppressed(context.findings, text, lines)

    findings = run(gate)
    own = None
    needy = [f for f in findings or () if f.fix is not None and f.fix.edits and "gate" in f.fix.requires]
    if needy and binding is None and block is None:
        # The project's own ROCm test, where the file imports its module and every fix that
        # tests it comes after that import; else the test as the file spells it inline
        # (`torch.version.hip is None`), after its `import torch`: the fixes are made again,
        # testing it. A project test the file already imports comes first; one that needs an
        # import edit comes after the file's own spelling.
        starts = [min(e.start for e in f.fix.edits) for f in needy]
        project = None
        if index is not None:
            project = placement.house_gate(module, wrapper, text, lines, index.module_name(path), index,
                                         gating.code_names(text), style.line_length, style.force_single_line, tree)
            if project is not None and not all(start >= project.bound_at for start in starts):
                project = None
        inline = gating.inline_gate(module, wrapper, text, lines, starts)
        own = project if project is not None and project.edit is None else (inline or project)
        if own is not None:
            findings, gate = run(own.text), own.text
    if findings is None:
        return FileAnalysis(text, unreadable(path, "cannot analyse: nesting too deep", 1, 1, enabled), lines=lines)
    analysis = FileAnalysis(text, findings, module, wrapper, lines, gate, binding, block, own)
    if reduction is not None and reduction.module is not None:
        analysis.reduce_words = lambda other: _inert.seed_words(text_triggered(rules, other, index), index)
    analysis.findings = gating.with_gate_edits(analysis, settings)
    analysis.findings = _decisions(_not_ports(analysis.findings, scope, settings))
    return analysis


# ------------------------------------------------------------------------------------------
# Suppression: line and file noqa comments, read by rocmport.suppression (the same parser as
# for shell, YAML and .env files)
# ------------------------------------------------------------------------------------------

def _unsuppressed(findings: List[Finding], text: str, lines: LineIndex) -> List[Finding]:
    if not findings:
        return findings
    spans = [lines.line_span(row) for row in {f.start.row for f in findings}]
    return suppression.for_python(text, [text[start:end] for start, end in spans]).filter(findings)


# Fixes that turn CUDA graphs off: in a test of CUDA graphs they would make it test nothing.
_GRAPH_OFF_PREFIXES = ("ROC1", "ROC2", "ROC6")


def _quick_tree(text: str):
    try:
        return parsing.cpython_parse(text)[0]
    except Exception:  # noqa: BLE001 - a text CPython cannot read is judged by its name
        return None


def _scoped(findings: List[Finding], scope: str) -> List[Finding]:
    for f in findings:
        f.scope = scope
    return findings


def file_scope(tree, path: str) -> str:
    """"tests" for a test module, as its code proves it (``testing.is_test_module``), else
    "source"."""
    return "tests" if _testing.is_test_module(tree, path) else "source"


def in_scope(scope: str, settings: Settings) -> bool:
    """Does ``--scope`` (``settings.scope``) take findings of a file of this scope?"""
    return settings.scope in ("all", scope)


def _not_ports(findings: List[Finding], scope: str, settings: Settings) -> List[Finding]:
    """Each finding gets its file's scope; one that is not a port (the rule's reason: a skipped
    test, a test of CUDA graphs, NVIDIA-only code; or a test of a repository that already runs
    its tests on ROCm) is reported, marked as such, and its fix is left to the user: a
    display-only fix that says why. In a test of CUDA graphs, a fix that turns them off would
    leave a test that passes while testing no graph: the message and the fix say to skip it on
    ROCm instead, one thing."""
    out = []
    for f in findings:
        f.scope = scope
        reason = f.not_a_port
        if reason is None and scope == "tests" and settings.rocm_ci:
            reason = f"a test the repository already runs on ROCm: {settings.rocm_ci}"
        if reason is None:
            out.append(f)
            continue
        if reason.startswith(_testing.GRAPH_TEST) and f.code.startswith(_GRAPH_OFF_PREFIXES):
            advice = ("skip the test on ROCm rather than turn CUDA graphs off, e.g. `@pytest.mark.skipif("
                      "torch.version.hip is not None, reason=\"CUDA graphs are not used on ROCm\")`")
            message = f"{f.message} [not a port, {reason}: {advice}]"
            fix = Fix(Applicability.DISPLAY_ONLY, f"Not a port ({reason}): {advice[0].upper()}{advice[1:]}")
        else:
            message = f"{f.message} [not a port, {reason}: `rocmport fix` leaves it alone]"
            suggestion = f.fix.message if f.fix is not None and f.fix.message else f.name
            fix = Fix(Applicability.DISPLAY_ONLY, f"Not a port ({reason}); if you port it: {suggestion}")
        out.append(dataclasses.replace(f, message=message, fix=fix, not_a_port=reason))
    return out


def _decisions(findings: List[Finding]) -> List[Finding]:
    """One finding per decision: the display-only findings of one rule in this file that carry
    the same ``decision`` key are reported once, at the first the rule reported, with the count
    of the places that follow from it in its message and every other place as a related
    location (JSON ``related_locations``, SARIF ``relatedLocations``)."""
    groups: Dict[Tuple[str, str], List[Finding]] = {}
    for f in findings:
        if f.decision is not None and not (f.fix is not None and f.fix.edits):
            groups.setdefault((f.code, f.decision), []).append(f)
    dropped = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        head, rest = group[0], sorted(group[1:], key=lambda f: f.span)
        lines = ", ".join(str(f.start.row) for f in rest[:6]) + (", ..." if len(rest) > 6 else "")
        many = len(rest) != 1
        head.message += (f" ({len(rest)} more place{'s' if many else ''} in this file follow{'' if many else 's'}"
                         f" from this decision: line{'s' if many else ''} {lines})")
        head.related = head.related + tuple(Related(f.start, f.end, f.message) for f in rest)
        dropped.update(id(f) for f in rest)
    return [f for f in findings if id(f) not in dropped] if dropped else findings
