"""The GitHub Action (``action.yml``): its shape, and its lint step run for real with bash
(GitHub's expressions only feed ``env:``; the scripts read environment variables, so they can
run here as they run on a runner)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'


def step(name: str) -> dict:
    (found,) = [s for s in ACTION["runs"]["steps"] if s["name"] == name]
    return found


def test_shape_and_expressions():
    assert ACTION["runs"]["using"] == "composite"
    inputs = set(ACTION["inputs"])
    assert {"args", "output-format", "sarif-file", "upload-sarif", "fail-on-findings", "version"} <= inputs
    text = (REPO / "action.yml").read_text()
    for name in re.findall(r"inputs\.([\w-]+)", text):
        assert name in inputs, name
    for s in ACTION["runs"]["steps"]:
        # no expression is ever pasted into a script (injection): they go through env
        assert "${{" not in s.get("run", ""), s["name"]
        if "run" in s:
            assert s["shell"] == "bash"
    upload = step("Upload SARIF")
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"


@pytest.fixture
def runner(tmp_path):
    if shutil.which("bash") is None:
        pytest.skip("bash is needed")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(HAZARD)
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport]\n")
    shim = tmp_path / "bin" / "rocmport"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m rocmport "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "out").write_text("")

    def run(**inputs):
        env = dict(os.environ, ROCMPORT_BIN=str(shim), GITHUB_OUTPUT=str(tmp_path / "out"),
                   ROCMPORT_ARGS=inputs.get("args", "."), ROCMPORT_FORMAT=inputs.get("format", "github"),
                   ROCMPORT_SARIF=inputs.get("sarif", "rocmport.sarif"))
        (tmp_path / "out").write_text("")
        proc = subprocess.run(["bash", "-c", step("Run rocmport")["run"]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        outputs = dict(line.split("=", 1) for line in (tmp_path / "out").read_text().splitlines())
        return proc, outputs

    return tmp_path, run


def test_lint_step_annotates(runner):
    root, run = runner
    proc, outputs = run(args="src --no-cache")
    assert proc.returncode == 0, proc.stderr  # findings do not fail this step: "Fail on findings" does
    assert outputs["exit-code"] == "1"
    assert proc.stdout.startswith("::error title=rocmport (ROC101),file=src/train.py,line=2,col=27,")
    (root / "src" / "train.py").write_text("x = 1\n")
    proc, outputs = run(args="src")
    assert outputs["exit-code"] == "0" and proc.stdout == ""


def test_lint_step_writes_sarif(runner):
    root, run = runner
    proc, outputs = run(format="sarif", sarif="reports/rocmport.sarif", args="src")
    assert proc.returncode == 2 and outputs["exit-code"] == "2"  # the directory does not exist: exit 2
    assert "error: cannot write --output-file" in proc.stderr
    (root / "reports").mkdir()
    proc, outputs = run(format="sarif", sarif="reports/rocmport.sarif", args="src")
    assert proc.returncode == 0 and outputs == {"sarif-file": "reports/rocmport.sarif", "exit-code": "1"}
    sarif = json.loads((root / "reports" / "rocmport.sarif").read_text())
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "ROC101"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/train.py"


def test_lint_step_rejects_an_unknown_format_and_bad_flags(runner):
    _, run = runner
    proc, outputs = run(format="xml")
    assert proc.returncode == 2 and outputs["exit-code"] == "2"
    assert "output-format must be github or sarif" in proc.stdout
    proc, outputs = run(args="src --select NOPE")
    assert proc.returncode == 2 and outputs["exit-code"] == "2"
