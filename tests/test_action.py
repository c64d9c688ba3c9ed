"""The GitHub Action (``action.yml``), its steps run the way a GitHub runner runs a composite
action's steps:

- each ``run:`` is written to a script file and run as ``bash --noprofile --norc -eo pipefail
  FILE`` (GitHub's ``shell: bash`` line), in the workspace, with ``GITHUB_OUTPUT``,
  ``GITHUB_ENV``, ``GITHUB_STEP_SUMMARY``, ``GITHUB_ACTION_PATH``, ``RUNNER_TEMP`` pointing at
  fresh files and folders, and what earlier steps wrote to ``GITHUB_ENV`` in the environment;
- every ``${{ ... }}`` in ``env:``, ``with:``, ``if:`` and the action's outputs is evaluated
  here from the inputs (the action's defaults, then the caller's ``with:``), ``github.*`` and
  the earlier steps' outputs, with GitHub's rules for what the tests use: ``if:`` without a
  status function means ``success() && ...``, string comparison ignores case, null is '';
- composite actions get no ``INPUT_*`` variables (only JavaScript and Docker actions do), so
  none is set; a step that reads one would see it empty, as on GitHub.

What is not exercised (docs/integrations.md says so too): no real runner; the ``uses:`` steps
(actions/setup-python, github/codeql-action/upload-sarif) are not run, only whether they would
run and with what; ``pip`` is a stand-in that records what it was asked to install and leaves
a ``rocmport`` that runs the code of that path (no network here)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
GITHUB_SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"]  # shell: bash, on a runner


def step(name: str) -> dict:
    (found,) = [s for s in ACTION["runs"]["steps"] if s["name"] == name]
    return found


# ------------------------------------------------------------------------------------------
# GitHub's expressions, the part action.yml uses
# ------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"
                    r"|(?P<num>\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][\w.\-]*))")
_STATUS_FUNCTIONS = ("always", "success", "failure", "cancelled")


class Expression:
    """A recursive-descent evaluator for GitHub's expression syntax: literals, property
    paths (``inputs.fail-on-findings``, ``steps.lint.outputs.exit-code``), ``!``, ``==``,
    ``!=``, ``&&``, ``||``, parentheses and the status functions."""

    def __init__(self, text: str, contexts: dict, status: Dict[str, bool]):
        self.tokens, position = [], 0
        text = text.strip()
        while position < len(text):
            match = _TOKEN.match(text, position)
            assert match and match.end() > position, f"cannot read {text[position:]!r}"
            self.tokens.append((match.lastgroup, match.group(match.lastgroup)))
            position = match.end()
            while position < len(text) and text[position].isspace():
                position += 1
        self.contexts, self.status, self.at = contexts, status, 0

    def value(self):
        result = self._or()
        assert self.at == len(self.tokens), self.tokens[self.at:]
        return result

    def _peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else (None, None)

    def _take(self, text=None):
        token = self._peek()
        assert text is None or token[1] == text, (token, text)
        self.at += 1
        return token

    def _or(self):
        left = self._and()
        while self._peek()[1] == "||":
            self._take()
            right = self._and()
            left = left if truthy(left) else right
        return left

    def _and(self):
        left = self._compare()
        while self._peek()[1] == "&&":
            self._take()
            right = self._compare()
            left = right if truthy(left) else left
        return left

    def _compare(self):
        left = self._unary()
        while self._peek()[1] in ("==", "!="):
            op = self._take()[1]
            right = self._unary()
            left = equal(left, right) == (op == "==")
        return left

    def _unary(self):
        if self._peek()[1] == "!":
            self._take()
            return not truthy(self._unary())
        return self._primary()

    def _primary(self):
        kind, text = self._take()
        if text == "(":
            value = self._or()
            self._take(")")
            return value
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if self._peek()[1] == "(":  # a function: only the status functions are used
            self._take("(")
            self._take(")")
            assert text in _STATUS_FUNCTIONS, text
            return self.status[text]
        value = self.contexts
        for part in text.split("."):
            if not isinstance(value, dict):
                return None
            lowered = {k.lower(): v for k, v in value.items()}  # property names ignore case
            value = lowered.get(part.lower())
        return value


def truthy(value) -> bool:
    return value not in (None, False, 0, 0.0, "")


def equal(a, b) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()  # GitHub compares strings ignoring case
    return _number(a) == _number(b)  # otherwise both as numbers: null, false and '' are 0


def _number(value) -> float:
    if value is None or value == "":
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def substitute(text: str, contexts: dict, status: Dict[str, bool]) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: as_text(Expression(m.group(1), contexts, status).value()), text)


def condition(text: Optional[str], contexts: dict, status: Dict[str, bool]) -> bool:
    if text is None:
        return status["success"]
    text = str(text).strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    if not re.search(r"\b(" + "|".join(_STATUS_FUNCTIONS) + r")\s*\(", text):
        text = f"success() && ({text})"  # GitHub's implicit status check
    return truthy(Expression(text, contexts, status).value())


def read_file_commands(path: Path) -> Dict[str, str]:
    """``name=value`` lines and ``name<<DELIMITER`` blocks, as GITHUB_OUTPUT and GITHUB_ENV hold them."""
    values, lines = {}, path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            values[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if line:
            name, value = line.split("=", 1)
            values[name] = value
        i += 1
    return values


# ------------------------------------------------------------------------------------------
# A runner for the composite action
# ------------------------------------------------------------------------------------------

@dataclass
class StepRun:
    name: str
    ran: bool
    outcome: str = "skipped"  # success | failure | skipped
    returncode: Optional[int] = None
    stdout: str = ""
    stderr: str = ""
    outputs: Dict[str, str] = field(default_factory=dict)
    summary: str = ""
    uses: Optional[str] = None
    with_: Dict[str, str] = field(default_factory=dict)


@dataclass
class ActionRun:
    steps: List[StepRun]
    outputs: Dict[str, str]
    failed: bool

    def __getitem__(self, name: str) -> StepRun:
        (found,) = [s for s in self.steps if s.name == name]
        return found


class Runner:
    """Runs action.yml's steps in order in ``workspace``, as GitHub would for
    ``uses: rocmport/rocmport@SHA`` with the given ``with:`` inputs."""

    def __init__(self, workspace: Path, action_path: Path, path_dirs: List[Path], temp: Path):
        self.workspace, self.action_path, self.temp = workspace, action_path, temp
        self.path = os.pathsep.join([str(d) for d in path_dirs] + [os.environ.get("PATH", "")])

    def run(self, **given: str) -> ActionRun:
        inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
        for name, value in given.items():
            name = name.replace("_", "-")
            assert name in inputs, f"the action has no input {name}"
            inputs[name] = value
        steps_context: Dict[str, dict] = {}
        contexts = {"inputs": inputs, "steps": steps_context,
                    "github": {"action_path": str(self.action_path), "workspace": str(self.workspace)},
                    "runner": {"temp": str(self.temp), "os": "Linux"}}
        env_file = self.temp / f"env-{uuid.uuid4().hex}"
        env_file.write_text("")
        failed = False
        runs = []
        for spec in ACTION["runs"]["steps"]:
            status = {"always": True, "success": not failed, "failure": failed, "cancelled": False}
            record = StepRun(spec["name"], ran=False, uses=spec.get("uses"))
            runs.append(record)
            if not condition(spec.get("if"), contexts, status):
                if spec.get("id"):
                    steps_context[spec["id"]] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
                continue
            record.ran = True
            if "uses" in spec:  # another action: not run here, only what it would be given
                record.with_ = {k: substitute(str(v), contexts, status) for k, v in spec.get("with", {}).items()}
                record.outcome = "success"
            else:
                self._script(spec, record, contexts, status, env_file)
                failed = failed or record.outcome == "failure"
            if spec.get("id"):
                steps_context[spec["id"]] = {"outputs": record.outputs, "outcome": record.outcome,
                                             "conclusion": record.outcome}
        status = {"always": True, "success": not failed, "failure": failed, "cancelled": False}
        outputs = {name: substitute(str(spec["value"]), contexts, status)
                   for name, spec in ACTION.get("outputs", {}).items()}
        return ActionRun(runs, outputs, failed)

    def _script(self, spec: dict, record: StepRun, contexts: dict, status: dict, env_file: Path) -> None:
        assert spec["shell"] == "bash"
        script = self.temp / f"{uuid.uuid4()}.sh"
        script.write_text(substitute(spec["run"], contexts, status))
        output, summary = self.temp / f"out-{uuid.uuid4().hex}", self.temp / f"summary-{uuid.uuid4().hex}"
        output.write_text("")
        summary.write_text("")
        env = {"PATH": self.path, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
               "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(self.workspace),
               "GITHUB_ACTION_PATH": str(self.action_path), "RUNNER_TEMP": str(self.temp),
               "GITHUB_OUTPUT": str(output), "GITHUB_ENV": str(env_file), "GITHUB_STEP_SUMMARY": str(summary)}
        env.update(read_file_commands(env_file))
        env.update({k: substitute(str(v), contexts, status) for k, v in spec.get("env", {}).items()})
        command = [str(script) if part == "{0}" else part for part in GITHUB_SHELL]
        proc = subprocess.run(command, cwd=self.workspace, env=env, capture_output=True, text=True, timeout=300)
        record.returncode, record.stdout, record.stderr = proc.returncode, proc.stdout, proc.stderr
        record.outcome = "success" if proc.returncode == 0 else "failure"
        record.outputs = read_file_commands(output)
        record.summary = summary.read_text()


FAKE_PYTHON3 = """#!/bin/bash
# `python3` on the runner's PATH, for the install step: `python3 -m venv DIR` makes DIR/bin/python,
# whose `-m pip install ... SPEC` logs SPEC and leaves DIR/bin/rocmport running the code at SPEC.
set -eu
[ "$1" = "-m" ] && [ "$2" = "venv" ] || exec "{python}" "$@"
venv="$3"
mkdir -p "$venv/bin"
cat > "$venv/bin/python" <<'PY'
#!/bin/bash
set -eu
bin="$(cd "$(dirname "$0")" && pwd)"
[ "$1 $2 $3" = "-m pip install" ] || {{ echo "unexpected: $*" >&2; exit 3; }}
shift 3
echo "pip install $*" >> "{log}"
spec="${{@: -1}}"
[ -f "$spec/pyproject.toml" ] && [ -d "$spec/rocmport" ] || {{ echo "ERROR: not a checkout: $spec" >&2; exit 1; }}
printf '#!/bin/sh\\nPYTHONPATH="%s" exec "{python}" -m rocmport "$@"\\n' "$spec" > "$bin/rocmport"
chmod +x "$bin/rocmport"
PY
chmod +x "$venv/bin/python"
"""


@pytest.fixture
def github(tmp_path):
    """(workspace, runner, pip log): a checkout of a user's repository with one hazard in src/,
    the action's own checkout (this repository's files), and ``python3`` whose pip is a stand-in."""
    if shutil.which("bash") is None:
        pytest.skip("bash is needed")
    workspace = tmp_path / "workspace"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "train.py").write_text(HAZARD)
    (workspace / "pyproject.toml").write_text("[tool.rocmport]\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    action_path = tmp_path / "_actions" / "rocmport" / "rocmport" / "0123abc"
    shutil.copytree(REPO, action_path, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", ".rocmport_cache", "tests", "benchmarks", "examples", "*.egg-info", "build"))
    bin_dir, temp = tmp_path / "bin", tmp_path / "runner-temp"
    bin_dir.mkdir()
    temp.mkdir()
    log = tmp_path / "pip.log"
    python3 = bin_dir / "python3"
    python3.write_text(FAKE_PYTHON3.format(python=sys.executable, log=log))
    python3.chmod(python3.stat().st_mode | stat.S_IXUSR)
    return workspace, Runner(workspace, action_path, [bin_dir], temp), log


def test_shape_and_expressions():
    assert ACTION["runs"]["using"] == "composite"
    inputs = set(ACTION["inputs"])
    assert {"args", "output-format", "sarif-file", "upload-sarif", "fail-on-findings"} <= inputs
    assert "version" not in inputs  # there is no release on a package index to pick a version from
    text = (REPO / "action.yml").read_text()
    for name in re.findall(r"inputs\.([\w-]+)", text):
        assert name in inputs, name
    assert "INPUT_" not in text  # composite actions get no INPUT_* variables
    for s in ACTION["runs"]["steps"]:
        # no expression is ever pasted into a script (injection): they go through env
        assert "${{" not in s.get("run", ""), s["name"]
        if "run" in s:
            assert s["shell"] == "bash"
    upload = step("Upload SARIF")
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"


def test_the_evaluator_follows_githubs_rules():
    status = {"always": True, "success": True, "failure": False, "cancelled": False}
    contexts = {"inputs": {"fail-on-findings": "TRUE", "python-version": ""}, "steps": {}}
    assert condition("${{ inputs.fail-on-findings == 'true' }}", contexts, status)  # case ignored
    assert not condition("inputs.python-version != ''", contexts, status)
    assert condition("steps.lint.outputs.exit-code == ''", contexts, status)  # null is ''
    assert not condition("inputs.fail-on-findings == 'true'", contexts, dict(status, success=False))
    assert condition("always() && inputs.fail-on-findings == 'true'", contexts, dict(status, success=False))
    assert substitute("a ${{ inputs.missing }} b", contexts, status) == "a  b"


def test_install_step_installs_the_actions_own_checkout(github):
    workspace, runner, log = github
    result = runner.run(args="src")
    install = result["Install rocmport"]
    assert install.outcome == "success", install.stderr
    assert install.stdout.strip().startswith("rocmport, version ")
    (line,) = log.read_text().splitlines()
    assert line.endswith(f" {runner.action_path}") and "--index-url" not in line  # its own checkout
    assert not result["Set up Python"].ran  # python-version empty: the runner's python3


def test_findings_annotate_and_fail_the_job_after_the_outputs_are_written(github):
    workspace, runner, _ = github
    result = runner.run(args="src --no-cache")
    lint = result["Run rocmport"]
    assert lint.outcome == "success", lint.stderr  # findings do not end this step: "Fail on findings" does
    assert lint.outputs == {"exit-code": "1"} and result.outputs["exit-code"] == "1"
    assert lint.stdout.startswith("::error title=rocmport (ROC101),file=src/train.py,line=2,col=27,")
    assert lint.summary.startswith("rocmport lint: findings remain")
    assert result["Fail on findings"].outcome == "failure" and result.failed
    assert not result["Upload SARIF"].ran


def test_fail_on_findings_false_keeps_the_job_green(github):
    _, runner, _ = github
    result = runner.run(args="src", fail_on_findings="false")
    assert result.outputs["exit-code"] == "1"
    assert not result["Fail on findings"].ran and not result.failed


def test_a_clean_tree_passes(github):
    workspace, runner, _ = github
    (workspace / "src" / "train.py").write_text("x = 1\n")
    result = runner.run(args="src")
    assert result.outputs["exit-code"] == "0" and not result.failed
    assert result["Run rocmport"].stdout == ""
    assert result["Run rocmport"].summary == "rocmport lint: no findings\n"


@pytest.mark.parametrize("fail", ["true", "false"])
def test_code_scanning_uploads_sarif_into_a_new_folder(github, fail):
    workspace, runner, _ = github
    result = runner.run(output_format="sarif", sarif_file="reports/rocmport.sarif", upload_sarif="true",
                        fail_on_findings=fail, args="src")
    assert result["Run rocmport"].outcome == "success", result["Run rocmport"].stderr
    assert result.outputs == {"exit-code": "1", "sarif-file": "reports/rocmport.sarif"}
    upload = result["Upload SARIF"]
    assert upload.ran and upload.with_ == {"sarif_file": "reports/rocmport.sarif", "category": "rocmport"}
    sarif = json.loads((workspace / "reports" / "rocmport.sarif").read_text())
    (found,) = sarif["runs"][0]["results"]
    assert found["ruleId"] == "ROC101"
    assert found["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/train.py"
    assert result.failed == (fail == "true")


def test_an_unknown_format_or_bad_flag_fails_at_once_and_uploads_nothing(github):
    _, runner, _ = github
    for inputs in ({"output_format": "xml"}, {"args": "src --select NOPE", "output_format": "sarif",
                                              "upload_sarif": "true"}):
        result = runner.run(**inputs)
        lint = result["Run rocmport"]
        assert lint.outcome == "failure" and lint.returncode == 2
        assert result.outputs["exit-code"] == "2" and result.failed
        assert not result["Upload SARIF"].ran and not result["Fail on findings"].ran
    assert "output-format must be github or sarif" in runner.run(output_format="xml")["Run rocmport"].stdout


def test_empty_args_lint_the_workspace(github):
    _, runner, _ = github
    result = runner.run(args="")  # an empty array under `set -u` (bash 3.2 on macOS runners too)
    assert result["Run rocmport"].outcome == "success", result["Run rocmport"].stderr
    assert result.outputs["exit-code"] == "1" and "file=src/train.py" in result["Run rocmport"].stdout
