"""docs/rules.md is generated from the rules' own documentation and must be current; each
rule's section is exactly what `rocmport rule CODE` prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport import docs
from rocmport.cli import main
from rocmport.registry import all_rules

REPO = Path(__file__).resolve().parents[1]
RULES_MD = REPO / "docs" / "rules.md"


def test_rules_md_is_current():
    assert RULES_MD.is_file(), f"docs/rules.md is missing: generate it with `{docs.REGENERATE}`"
    assert RULES_MD.read_text(encoding="utf-8") == docs.render(), (
        f"docs/rules.md is stale (a rule's documentation changed): regenerate it with `{docs.REGENERATE}`")


def test_every_rule_has_a_section_and_an_index_row():
    text = RULES_MD.read_text(encoding="utf-8")
    sections = docs.sections(text)
    assert list(sections) == list(all_rules())
    for code, rule in all_rules().items():
        assert f"| [{code}](#{docs.anchor(rule)}) | `{rule.NAME}` |" in text


@pytest.mark.parametrize("code", list(all_rules()))
def test_rule_command_prints_the_section(code):
    section = docs.sections(RULES_MD.read_text(encoding="utf-8"))[code]
    result = CliRunner().invoke(main, ["rule", code.lower()])
    assert result.exit_code == 0
    assert result.output == section


def test_rule_sections_have_the_parts_the_contract_names():
    for code, section in docs.sections(docs.render()).items():
        for heading in ("## What it finds", "## Why it is a problem on ROCm", "## Example", "## Fix ("):
            assert heading in section, (code, heading)


def test_generator_script_check_mode(tmp_path):
    script = REPO / "scripts" / "gen_rule_docs.py"
    proc = subprocess.run([sys.executable, str(script), "--check"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    stale = tmp_path / "rules.md"
    stale.write_text("old\n")
    proc = subprocess.run([sys.executable, str(script), "--check", str(stale)], capture_output=True, text=True)
    assert proc.returncode == 1 and "gen_rule_docs.py" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "rocmport.docs", str(stale)], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and stale.read_text(encoding="utf-8") == docs.render()


def test_unknown_rule_is_a_usage_error():
    result = CliRunner().invoke(main, ["rule", "ROC999"])
    assert result.exit_code == 2
