"""Every rule's own VALID / INVALID cases (Fixit style), and every rule's documentation
example: the example fires, the fixed example does not, and fixing the one gives the other."""

from __future__ import annotations

import pytest

from rocmport.findings import Applicability
from rocmport.registry import all_rules, visitor_rules
from rocmport.rules.base import Case

from .harness import check_case, doc_example, fixed_text, lint, without_prelude

CASES = [(rule.CODE, i, case, kind) for rule in visitor_rules()
         for kind, cases in (("valid", rule.VALID), ("invalid", rule.INVALID))
         for i, case in enumerate(cases)]


def test_every_rule_has_cases_and_docs():
    for code, rule in all_rules().items():
        assert rule.NAME and rule.SUMMARY and rule.WHAT and rule.WHY and rule.FIX, code
        if not code.startswith("ROC0"):
            assert rule.VALID and rule.INVALID, f"{code} needs VALID and INVALID cases"
            assert rule.TRIGGERS, f"{code} needs prefilter triggers"
            assert rule.EXAMPLE, f"{code} needs an EXAMPLE"
            applied = rule.FIX_APPLICABILITY in (Applicability.SAFE, Applicability.UNSAFE)
            assert bool(rule.FIXED_EXAMPLE) == applied, f"{code}: FIXED_EXAMPLE goes with an applied fix"


@pytest.mark.parametrize("code,index,case,kind", CASES, ids=[f"{c[0]}-{c[3]}-{c[1]}" for c in CASES])
def test_case(code, index, case, kind):
    check_case(code, case, kind)


def unpinned(cases):
    """The (code, kind, index) of cases that do not say what they expect: an INVALID case
    without its first finding's line, column and message, or a VALID case with any of them
    or an expected text (which nothing would check)."""
    out = []
    for code, index, case, kind in cases:
        pins = (case.line, case.column, case.message)
        if kind == "invalid" and None in pins:
            out.append((code, "INVALID", index))
        if kind == "valid" and (pins != (None, None, None) or case.expected is not None):
            out.append((code, "VALID", index))
    return out


def test_every_invalid_case_pins_its_first_finding():
    """A new rule pins its INVALID cases' positions and messages, so that a change to either
    shows in review (docs/adding-a-rule.md, step 3)."""
    missing = unpinned(CASES)
    assert not missing, (
        "INVALID cases need line=, column= and message= (the rule's first finding), VALID cases none: "
        + ", ".join(f"{code} {kind}[{index}]" for code, kind, index in missing))
    assert unpinned([("ROC101", 0, Case(HAZARD), "invalid"), ("ROC101", 1, Case(HAZARD, line=2, column=27), "invalid"),
                     ("ROC101", 2, Case(HAZARD, line=2), "valid")]) == [
        ("ROC101", "INVALID", 0), ("ROC101", "INVALID", 1), ("ROC101", "VALID", 2)]


# ------------------------------------------------------------------------------------------
# Documentation examples, for every family
# ------------------------------------------------------------------------------------------

DOCUMENTED = [rule for rule in visitor_rules() if rule.EXAMPLE]


@pytest.mark.parametrize("rule", DOCUMENTED, ids=[rule.CODE for rule in DOCUMENTED])
def test_doc_example_fires_and_fixed_example_does_not(rule):
    example = doc_example(rule.EXAMPLE)
    assert rule.CODE in [f.code for f in lint(example, select=[rule.CODE])], \
        f"{rule.CODE}'s EXAMPLE gives no {rule.CODE}:\n{example}"
    if not rule.FIXED_EXAMPLE:
        return
    fixed_example = doc_example(rule.FIXED_EXAMPLE)
    assert rule.CODE not in [f.code for f in lint(fixed_example, select=[rule.CODE])], \
        f"{rule.CODE}'s FIXED_EXAMPLE still gives {rule.CODE}:\n{fixed_example}"
    # what `rocmport fix` makes of the example is the fixed example (prelude and blank lines aside)
    unsafe = rule.FIX_APPLICABILITY is Applicability.UNSAFE
    assert without_prelude(fixed_text(example, select=[rule.CODE], unsafe=unsafe)) == without_prelude(fixed_example)


def test_every_family_has_documented_examples():
    families = {rule.__module__.rsplit(".", 1)[0] for rule in visitor_rules()}
    assert families == {rule.__module__.rsplit(".", 1)[0] for rule in DOCUMENTED}
    assert {f"rocmport.rules.{family}" for family in ("compile_modes", "inductor_config", "capture", "graph_breaks",
                                                       "triton_launch", "env_vars", "vendor_checks")} <= families


# ------------------------------------------------------------------------------------------
# The Case fields themselves
# ------------------------------------------------------------------------------------------

HAZARD = 'import torch\nm = torch.compile(f, mode="reduce-overhead")\n'
MESSAGE = 'mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; use "default" there'


def test_case_code_is_dedented():
    case = Case("""
        import torch
        m = torch.compile(f, mode="reduce-overhead")
        """, expected="""
        x = 1
        """)
    assert case.code == HAZARD and case.expected == "x = 1\n"
    assert Case(HAZARD).code == HAZARD  # already flush left: unchanged


def test_position_and_message_are_checked():
    check_case("ROC101", Case(HAZARD, line=2, column=27, message=MESSAGE), "invalid")
    for wrong in (Case(HAZARD, line=1), Case(HAZARD, column=1), Case(HAZARD, message="another message")):
        with pytest.raises(AssertionError):
            check_case("ROC101", wrong, "invalid")
    with pytest.raises(AssertionError):
        check_case("ROC101", Case(HAZARD), "valid")
    with pytest.raises(AssertionError):
        check_case("ROC101", Case("import torch\nm = torch.compile(f)\n"), "invalid")
