"""Every rule's reviewed snapshot (tests/snapshots/<CODE>.md) is what the rule reports and
fixes now: a change to a message, a position or a fix fails here, with the difference, until
the snapshot is regenerated (and the change reviewed in its diff)."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

from rocmport.registry import visitor_rules
from rocmport.rules.base import Case

from . import rule_snapshots
from .rule_snapshots import REGENERATE, SNAPSHOTS, render

REPO = Path(__file__).resolve().parents[1]
RULES = visitor_rules()


@pytest.mark.parametrize("rule", RULES, ids=[rule.CODE for rule in RULES])
def test_snapshot_is_current(rule):
    path = SNAPSHOTS / f"{rule.CODE}.md"
    want = render(rule)
    if not path.is_file():
        pytest.fail(f"{path.relative_to(REPO)} is missing: generate it with `{REGENERATE}`")
    current = path.read_text(encoding="utf-8")
    if current != want:
        diff = "\n".join(difflib.unified_diff(current.splitlines(), want.splitlines(), f"{path.name} (checked in)",
                                              f"{path.name} (what {rule.CODE} gives now)", lineterm=""))
        pytest.fail(f"{path.relative_to(REPO)} is stale. What {rule.CODE} reports or fixes changed:\n{diff}\n"
                    f"If the change is intended, regenerate it with `{REGENERATE}` and commit the diff.")


def test_no_snapshot_without_a_rule():
    orphans = rule_snapshots.orphans(rule_snapshots.snapshots())
    assert not orphans, f"snapshots of no rule: {[p.name for p in orphans]}; `{REGENERATE}` removes them"


def test_a_changed_message_or_fix_changes_the_snapshot():
    """The snapshot holds the position, the message, the fix's applicability and message, and
    the fixed code: changing any of them changes the text."""
    rule = next(r for r in RULES if r.CODE == "ROC101")
    base = render(rule)
    assert '2:27 ROC101 [*] mode="reduce-overhead" turns on CUDA graphs' in base
    assert "    fix (safe): " in base
    assert '+f = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")' in base

    class Moved(rule):
        INVALID = (Case('import torch\n\nf = torch.compile(g, mode="reduce-overhead")\n'),)

    assert "3:27 ROC101" in render(Moved) and render(Moved) != base


def test_control_characters_and_trailing_spaces_stay_visible():
    assert rule_snapshots.visible("a\tb\r") == "a\\tb\\r"
    assert rule_snapshots.visible("x = 1  ") == "x = 1··"
    assert rule_snapshots._lines("a\nb") == ["a", "b\\ (no newline at end)"]


def test_regenerate_check_lists_stale_files(monkeypatch, capsys):
    """`scripts/regenerate.py --check` passes on this checkout and names a stale snapshot."""
    script = REPO / "scripts" / "regenerate.py"
    proc = subprocess.run([sys.executable, str(script), "--check"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    sys.path.insert(0, str(script.parent))
    try:
        import regenerate
    finally:
        sys.path.remove(str(script.parent))
    real = regenerate.generated()
    stale = SNAPSHOTS / "ROC101.md"
    monkeypatch.setattr(regenerate, "generated", lambda: {**real, stale: real[stale] + "changed\n"})
    capsys.readouterr()
    assert regenerate.main(["--check"]) == 1
    assert "tests/snapshots/ROC101.md is stale" in capsys.readouterr().err
    assert stale.read_text(encoding="utf-8") == real[stale]  # --check writes nothing
