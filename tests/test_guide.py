"""docs/adding-a-rule.md is true: its walk-through, followed in a copy of the repository, adds a
working rule with a safe fix by writing the files it shows and running the commands it gives,
and touches exactly the files it says (issue 30: "a test walks the guide's steps on a
throwaway rule and fails when the guide and the code disagree").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "adding-a-rule.md"
WALK = "## Walk-through"
_WRITTEN = re.compile(r'^```python title="([^"]+)"\n(.*?)^```\n', re.S | re.M)
_COMMANDS = re.compile(r"^```sh\n(.*?)^```\n", re.S | re.M)
_CLAIM = re.compile(r"It touches (\d+) files? you write; the commands below regenerate (\d+) more")
_LIMIT = re.compile(r"Files you write for a rule with an applied fix: \*\*at most (\d+)\*\*")
_SKIP = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", "*.egg-info",
                               ".mypy_cache", ".rocmport_cache")


def walk_through() -> Tuple[Dict[str, str], List[str], str]:
    """(files to write, commands to run, the section's text) of the guide's walk-through."""
    text = GUIDE.read_text(encoding="utf-8")
    assert WALK in text, "the guide lost its walk-through section"
    section = text[text.index(WALK):]
    files = {path: body for path, body in _WRITTEN.findall(section)}
    commands = [line.strip() for block in _COMMANDS.findall(section) for line in block.splitlines() if line.strip()]
    return files, commands, section


def snapshot(root: Path) -> Dict[str, bytes]:
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if path.is_file() and not any(part in {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", ".rocmport_cache"}
                                      or part.endswith(".egg-info") for part in rel.parts):
            out[rel.as_posix()] = path.read_bytes()
    return out


def test_the_walk_through_is_complete_and_within_the_limit():
    files, commands, section = walk_through()
    claim = _CLAIM.search(section)
    limit = _LIMIT.search(GUIDE.read_text(encoding="utf-8"))
    assert claim and limit, "the guide no longer states how many files a rule touches"
    assert len(files) == int(claim.group(1)) <= int(limit.group(1)) <= 4
    assert commands and commands[0] == "python scripts/regenerate.py"
    for path in files:
        assert not (ROOT / path).exists(), f"the scratch rule's file {path} exists in the repository"


@pytest.mark.slow
def test_following_the_guide_adds_a_working_rule(tmp_path):
    files, commands, section = walk_through()
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=_SKIP)
    before = snapshot(copy)
    for path, body in files.items():
        target = copy / path
        assert target.parent.is_dir(), f"the guide writes into {path}, whose folder does not exist"
        target.write_text(body, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    for command in commands:
        argv = command.split()
        if argv[0] == "python":
            argv[0] = sys.executable
        # pytest's -k takes one quoted argument in the guide's shell line
        if "-k" in argv:
            at = argv.index("-k")
            argv = argv[:at + 1] + [" ".join(argv[at + 1:]).strip('"')]
        proc = subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        if "pytest" in argv:
            assert " passed" in proc.stdout and "failed" not in proc.stdout, proc.stdout[-2000:]

    # the rule is there, as a user meets it
    code = re.search(r'CODE = "(ROC\d+)"', next(iter(files.values()))).group(1)
    shown = subprocess.run([sys.executable, "-m", "rocmport", "rule", code], cwd=copy, env=env,
                           capture_output=True, text=True, timeout=120, check=False)
    assert shown.returncode == 0 and f"# {code}" in shown.stdout, shown.stderr
    target = copy / "scratch_target.py"
    target.write_text("import torch\ntorch.cuda.set_sync_debug_mode(1)\n", encoding="utf-8")
    linted = subprocess.run([sys.executable, "-m", "rocmport", "lint", "--select", code, "scratch_target.py"],
                            cwd=copy, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert f"scratch_target.py:2:1: {code}" in linted.stdout, linted.stdout + linted.stderr
    target.unlink()

    # and exactly the files the guide names changed: the ones written and the generated ones
    after = snapshot(copy)
    changed = sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
    generated = sorted(set(changed) - set(files))
    assert set(files) <= set(changed)
    assert generated == sorted(["docs/rules.md", "rocmport/_rule_index.py", f"tests/snapshots/{code}.md"])
    claimed = int(_CLAIM.search(section).group(2))
    assert len(generated) == claimed
