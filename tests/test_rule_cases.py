"""Every rule's own VALID / INVALID cases (Fixit style), for every registered rule."""

from __future__ import annotations

import pytest

from rocmport.registry import all_rules, visitor_rules

from .harness import assert_fix_properties, expand_prelude, fixed_text, lint

CASES = [(rule.CODE, i, case, kind) for rule in visitor_rules()
         for kind, cases in (("valid", rule.VALID), ("invalid", rule.INVALID))
         for i, case in enumerate(cases)]


def test_every_rule_has_cases_and_docs():
    for code, rule in all_rules().items():
        assert rule.NAME and rule.SUMMARY and rule.WHAT and rule.WHY and rule.FIX, code
        if not code.startswith("ROC0"):
            assert rule.VALID and rule.INVALID, f"{code} needs VALID and INVALID cases"
            assert rule.TRIGGERS, f"{code} needs prefilter triggers"


@pytest.mark.parametrize("code,index,case,kind", CASES, ids=[f"{c[0]}-{c[3]}-{c[1]}" for c in CASES])
def test_case(code, index, case, kind):
    found = [f for f in lint(case.code, select=[code]) if f.code == code]
    if kind == "valid":
        assert not found, f"{code} should not fire on:\n{case.code}\n{found}"
        return
    assert found, f"{code} should fire on:\n{case.code}"
    if case.expected is not None:
        assert fixed_text(case.code, select=[code]) == expand_prelude(case.expected)
    assert_fix_properties(case.code.encode(), select=[code])
