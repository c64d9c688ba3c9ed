"""The pre-commit hooks, run by real ``pre-commit`` on a throwaway repository, offline.

How it works without a network:

- pre-commit needs the hook repository to be a git repository with a commit. The test copies
  the files of this checkout that installing rocmport needs (``pyproject.toml``,
  ``README.md``, ``.pre-commit-hooks.yaml``, ``rocmport/``, ``rocmport/rules/``, as they are in the
  working tree now) into a temporary directory, commits them there, and names that
  directory and commit as ``repo:`` / ``rev:``. Nothing is ever committed in the checkout.
- ``language: python`` makes pre-commit create a virtualenv and ``pip install`` the hook
  repository into it, which needs rocmport's build backend (setuptools) and its runtime
  dependencies (libcst, click, pathspec and theirs). They are already installed in the
  interpreter running the tests, so the test *repacks* those installed distributions into
  wheels (the files listed in each one's ``RECORD`` plus its ``.dist-info``, with the tag
  from its ``WHEEL`` file, which is the interpreter pre-commit's virtualenv uses) in a
  temporary wheelhouse, and runs pre-commit with ``PIP_NO_INDEX=1`` and
  ``PIP_FIND_LINKS=<wheelhouse>``. pip honours both for the isolated build environment too,
  so the install never touches an index. ``PRE_COMMIT_HOME`` is a temporary directory, so
  the user's pre-commit cache is neither used nor changed.

Slow (about half a minute, mostly creating the hook's virtualenv), but part of every run.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
HOOK_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "rocmport")
FIXTURE_NB = ROOT / "tests" / "fixtures" / "notebooks" / "indent1_list.ipynb"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git"),
]


def _closure(names):
    """The installed distributions ``names`` need at run time (markers evaluated here)."""
    seen, todo = {}, list(names)
    while todo:
        requirement = Requirement(todo.pop())
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        key = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if key in seen:
            continue
        dist = metadata.distribution(requirement.name)
        seen[key] = dist
        todo.extend(dist.requires or ())
    return list(seen.values())


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def repack(dist, wheelhouse: Path) -> Path:
    """Build a wheel from an installed distribution (its RECORD's files and dist-info)."""
    files = [f for f in dist.files or () if not str(f).startswith("..") and "__pycache__" not in f.parts]
    info_dir = next(f.parts[0] for f in files if f.parts[0].endswith(".dist-info"))
    wheel_meta = dist.read_text("WHEEL") or "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    tag = re.search(r"^Tag: *(\S+)", wheel_meta, re.M).group(1)
    target = wheelhouse / f"{info_dir[:-len('.dist-info')]}-{tag}.whl"
    skip = {f"{info_dir}/{name}" for name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")}
    record = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as wheel:
        for f in files:
            name = f.as_posix()
            path = Path(dist.locate_file(f))
            if name in skip or not path.is_file():
                continue
            data = path.read_bytes()
            wheel.writestr(name, data)
            record.append(f"{name},{_record_hash(data)},{len(data)}")
        if f"{info_dir}/WHEEL" not in {r.split(",")[0] for r in record}:
            wheel.writestr(f"{info_dir}/WHEEL", wheel_meta)
            record.append(f"{info_dir}/WHEEL,{_record_hash(wheel_meta.encode())},{len(wheel_meta)}")
        record.append(f"{info_dir}/RECORD,,")
        wheel.writestr(f"{info_dir}/RECORD", "\n".join(record) + "\n")
    return target


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """(temporary directory, hook repository, its commit, environment) shared by the projects."""
    tmp = tmp_path_factory.mktemp("precommit")
    wheelhouse = tmp / "wheels"
    wheelhouse.mkdir()
    for dist in _closure(["libcst>=1.4", "click>=8.1", "pathspec>=0.12", "setuptools>=61",
                          "tomli>=1.1; python_version < '3.11'"]):
        repack(dist, wheelhouse)
    env = dict(os.environ)
    env.update({
        "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PRE_COMMIT_HOME": str(tmp / "cache"), "PRE_COMMIT_COLOR": "never",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
    })
    env.pop("VIRTUAL_ENV", None)
    # The hook repository: this working tree's state, committed in a throwaway clone.
    hooks = tmp / "hookrepo"
    hooks.mkdir()
    for name in HOOK_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, hooks / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, hooks / name)
    subprocess.run(["git", "init", "-q"], cwd=hooks, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=hooks, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "hooks"], cwd=hooks, check=True, env=env)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hooks, check=True, env=env, capture_output=True,
                         text=True).stdout.strip()
    return tmp, hooks, rev, env


@pytest.fixture(scope="module")
def hook_env(hook_repo):
    tmp, hooks, rev, env = hook_repo
    # The project that uses the hooks.
    project = tmp / "project"
    project.mkdir()
    (project / "train.py").write_text(
        'import torch\n\nmodel = torch.nn.Linear(4, 4)\nfast = torch.compile(model, mode="reduce-overhead")\n')
    (project / "clean.py").write_text("print('nothing to see')\n")
    shutil.copy2(FIXTURE_NB, project / "analysis.ipynb")
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n  - id: rocmport\n  - id: rocmport-fix\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=project, check=True, env=env)
    return project, env


def pre_commit(project: Path, env, *args):
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files", *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


def test_lint_hook_fails_and_lists_findings(hook_env):
    project, env = hook_env
    before = (project / "train.py").read_bytes()
    run = pre_commit(project, env, "rocmport")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "train.py:4:34: ROC101 [*]" in run.stdout
    assert "analysis.ipynb:cell 3:4:38: ROC101 [*]" in run.stdout
    assert "Found 2 findings" in run.stdout
    assert (project / "train.py").read_bytes() == before


def test_fix_hook_rewrites_then_passes(hook_env):
    project, env = hook_env
    first = pre_commit(project, env, "rocmport-fix")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout
    assert 'mode="default" if is_rocm else "reduce-overhead"' in (project / "train.py").read_text()
    assert '\\"default\\" if is_rocm else' in (project / "analysis.ipynb").read_text()
    second = pre_commit(project, env, "rocmport-fix")
    assert second.returncode == 0, second.stdout + second.stderr
    lint = pre_commit(project, env, "rocmport")
    assert lint.returncode == 0, lint.stdout + lint.stderr


DISPLAY_ONLY = ("from dataclasses import dataclass\n\n\n@dataclass\nclass PolicyConfig:\n"
                "    compile_mode: str = \"reduce-overhead\"\n")


def _project(hook_repo, name: str, files: dict, hooks_yaml: str):
    tmp, hooks, rev, env = hook_repo
    project = tmp / name
    project.mkdir()
    for file_name, text in files.items():
        (project / file_name).write_text(text)
    (project / ".pre-commit-config.yaml").write_text(hooks_yaml.format(hooks=hooks, rev=rev))
    subprocess.run(["git", "init", "-q"], cwd=project, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=project, check=True, env=env)
    return project, env


def test_fix_hook_passes_when_it_changes_nothing_and_lint_reports_what_is_left_once(hook_repo):
    # A display-only finding has no automatic fix: the fix hook has nothing to do and passes;
    # the lint hook fails and prints the finding once.
    project, env = _project(hook_repo, "display_only", {"config.py": DISPLAY_ONLY},
                            "repos:\n- repo: {hooks}\n  rev: {rev}\n  hooks:\n  - id: rocmport-fix\n"
                            "  - id: rocmport\n")
    run = pre_commit(project, env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"rocmport \(fix\)\.+Passed", run.stdout), run.stdout
    assert re.search(r"^rocmport\.+Failed", run.stdout, re.M), run.stdout
    assert run.stdout.count("config.py:6:25: ROC105") == 1, run.stdout
    assert (project / "config.py").read_text() == DISPLAY_ONLY


RUFF_HOOKS = """repos:
- repo: {{hooks}}
  rev: {{rev}}
  hooks:
  - id: rocmport-fix
- repo: local
  hooks:
  - id: ruff
    name: ruff
    entry: {ruff} check --fix --force-exclude
    language: system
    types_or: [python, pyi, jupyter]
    require_serial: true
  - id: ruff-format
    name: ruff-format
    entry: {ruff} format --force-exclude
    language: system
    types_or: [python, pyi, jupyter]
    require_serial: true
- repo: {{hooks}}
  rev: {{rev}}
  hooks:
  - id: rocmport
"""


@pytest.mark.skipif(not (Path(sys.executable).parent / "ruff").exists(), reason="ruff is not installed beside python")
def test_hooks_beside_ruff_and_ruff_format_pass_on_the_second_run(hook_repo):
    # ruff's own hook repository cannot be fetched here: the same commands as `repo: local`
    # hooks (ruff's classic default rules plus isort). rocmport adds one gate line and rewrites
    # the call; ruff-format may reformat both, and neither may undo the other on the second run.
    ruff = Path(sys.executable).parent / "ruff"
    files = {
        "train.py": ('import torch\n\nmodel = torch.nn.Linear(4, 4)\n'
                     'fast = torch.compile(model, mode="reduce-overhead")\n'),
        "pyproject.toml": '[tool.ruff]\nline-length = 100\n\n[tool.ruff.lint]\nselect = ["E4", "E7", "E9", "F", "I"]\n',
    }
    project, env = _project(hook_repo, "with_ruff", files, RUFF_HOOKS.format(ruff=ruff))
    first = pre_commit(project, env)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout
    assert "is_rocm" in (project / "train.py").read_text()
    # A fresh cache: the second run must pass on its merits, not because the lint hook's cached
    # answer for the formatted file keeps rocmport-fix from looking at it again.
    second = pre_commit(project, dict(env, ROCMPORT_CACHE_DIR=str(project.parent / "fresh_cache")))
    assert second.returncode == 0, first.stdout + "\n---\n" + second.stdout + second.stderr
    for hook in ("rocmport \\(fix\\)", "ruff", "ruff-format", "rocmport"):
        assert re.search(rf"^{hook}\.+Passed", second.stdout, re.M), (hook, second.stdout)
