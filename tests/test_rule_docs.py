"""docs/rules.md is generated from the rules' own documentation and must be current; each
rule's section is exactly what `rocmport rule CODE` prints."""

from __future__ import annotations

import re
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


# ---------------------------------------------------------------------------------------------
# README and docs/: short, current, self-contained
# ---------------------------------------------------------------------------------------------

PAGES = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```toml\n(.*?)^```", re.S | re.M)


def _anchors(text: str):
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", text, re.M)}


def test_readme_is_short_and_keeps_the_two_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    # the one-command set-up and the one-command test run that .ci/run executes
    assert ".venv/bin/pip install -q -e . && .venv/bin/rocmport lint examples/" in text
    test_command = '.venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q'
    assert test_command in text
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert '.venv/bin/pip install -q -e ".[test]"' in ci and ".venv/bin/python -m pytest -q" in ci


def test_install_and_pinning_name_only_what_exists():
    """No release on a package index and no tag exist: the pages show installs from the
    repository at a commit, and one repository address (rocmport.docs.HOMEPAGE) everywhere."""
    texts = {p.name: p.read_text(encoding="utf-8") for p in PAGES}
    for extra in ("action.yml", ".pre-commit-hooks.yaml", "rocmport/cli.py"):
        texts[extra] = (REPO / extra).read_text(encoding="utf-8")
    for name, text in texts.items():
        for url in re.findall(r"https://github\.com/[\w.-]+/rocmport\b", text):
            assert url == docs.HOMEPAGE, (name, url)
        assert "github.com/<owner>" not in text, name
        assert not re.search(r"pip install ['\"]?rocmport(\[\w+\])?['\"]?(?!\s*@)(\s|$|`)", text), name  # from an index
        assert not re.search(r"rocmport@v\d|rocmport/rocmport\s+rev: v\d|==0\.\d", text), name  # a tag, a release
    readme = texts["README.md"]
    assert f'pip install "rocmport @ git+{docs.HOMEPAGE}@<commit>"' in readme
    for command in main.commands:
        assert f"| `rocmport {command}" in readme, command
    license_text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert license_text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in license_text and len(license_text.splitlines()) > 170


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_stay_inside_the_repository_and_resolve(page):
    text = page.read_text(encoding="utf-8")
    assert "shared/docs" not in text and "../shared" not in text, "a reference outside the repository"
    assert not re.search(r"^#+ .*\b(issue|#)\s*\d+", text, re.M | re.I), "a tracker number in a heading"
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.is_relative_to(REPO) and resolved.exists(), f"{page.name}: broken link {target}"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved.read_text(encoding="utf-8")), f"{page.name}: no #{anchor} in {path}"


@pytest.mark.parametrize("page", [REPO / "README.md", REPO / "docs" / "usage.md"], ids=lambda p: p.name)
def test_configuration_examples_load(page, tmp_path):
    from rocmport.config import load_settings

    blocks = _FENCE.findall(page.read_text(encoding="utf-8"))
    assert blocks
    for block in blocks:
        (tmp_path / "pyproject.toml").write_text(block, encoding="utf-8")
        load_settings(tmp_path)  # raises ConfigError on an unknown key or a bad value


def test_usage_lists_every_command_option():
    text = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")
    for command in ("lint", "fix", "prelude", "doctor", "setup"):
        for param in main.commands[command].params:
            for opt in param.opts:
                if opt.startswith("--") and opt != "--help":
                    assert f"`{opt}" in text or f"{opt}`" in text or f" {opt}" in text, (command, opt)
