"""The fix loop (``rocmport.fixing.fix_text``): a rule whose fixes never settle gets none of
them applied, and says so (ROC002); the other rules' fixes still are."""

from __future__ import annotations

import libcst as cst

from rocmport.config import Settings
from rocmport.findings import Applicability, Fix
from rocmport.fixing import MAX_FIX_PASSES, fix_text
from rocmport.rules.base import Rule


class _Grows(Rule):
    """Finds `grow()` and adds a line above it: the call is still there on the next pass, so
    its fix never settles (what a fix that its own detection does not see as done does)."""

    CODE = "ROC998"
    NAME = "grows"
    TRIGGERS = ("grow",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "grow":
            self.report(node, "grows", fix=Fix(Applicability.SAFE, "add a line",
                                                (self.context.insert_before(node, "x = 1; "),)))


class _Renames(Rule):
    """Renames `old_name` to `new_name`: done in one pass."""

    CODE = "ROC997"
    NAME = "renames"
    TRIGGERS = ("old_name",)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == "old_name":
            self.report(node, "renamed", fix=Fix(Applicability.SAFE, "rename", (self.context.replace(node, "new_name"),)))


SOURCE = "def f():\n    grow()\n    return old_name\n"


def _fix(rules):
    return fix_text(SOURCE, "t.py", Settings(), rules, frozenset({"ROC001", "ROC002"} | {r.CODE for r in rules}))


def test_a_fix_that_never_settles_is_not_applied_and_is_reported():
    fixed, _analysis, _applied, notes, _extra = _fix([_Grows, _Renames])
    assert fixed == SOURCE.replace("old_name", "new_name")  # no line of the rule that grew
    assert [(n.code, n.start.row) for n in notes] == [("ROC002", 2)]
    assert f"fix for ROC998 did not settle after {MAX_FIX_PASSES} passes: none of its fixes was applied" \
        in notes[0].message


def test_the_rule_alone_leaves_the_text_as_it_was():
    fixed, _analysis, applied, notes, _extra = _fix([_Grows])
    assert fixed == SOURCE and applied == 0
    assert [n.code for n in notes] == ["ROC002"]


def test_a_fix_that_settles_is_applied_once():
    fixed, _analysis, applied, notes, _extra = _fix([_Renames])
    assert fixed == SOURCE.replace("old_name", "new_name") and applied == 1 and notes == []
