"""benchmarks/mergeable.py: the instrument for issue 13 (is what `rocmport fix` writes mergeable?).

The helpers are tested on their own; the whole script runs on a tiny git repository made here,
against two stand-in rocmports whose behaviour is known (one writes a clean one-line fix, one
does what issue 13 describes), so each measurement is shown to tell good from bad, and once
against this checkout's real rocmport (slow).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("mergeable", ROOT / "benchmarks" / "mergeable.py")
mergeable = importlib.util.module_from_spec(spec)
sys.modules["mergeable"] = mergeable
spec.loader.exec_module(mergeable)

needs_ruff = pytest.mark.skipif(mergeable.tool("ruff") is None, reason="ruff is not installed")


# --------------------------------------------------------------------------------------------
# Helpers


def test_diff_file_headers_pairs_each_section():
    diff = textwrap.dedent("""\
        --- /dev/null
        +++ /abs/pkg/_gen.py
        @@ -0,0 +1 @@
        +x = 1
        --- a/pkg/m.py\t2024-01-01
        +++ b/pkg/m.py
        @@ -1 +1 @@
        --- old comment line
        +++ new comment line
        """)
    # A removed line that starts with "--" inside a hunk is read as a header only when a "+++"
    # follows it directly; the last two lines are such a pair, which a real diff never has
    # (hunk bodies are counted), so only the structure is checked here.
    assert mergeable.diff_file_headers(diff)[:2] == [("/dev/null", "/abs/pkg/_gen.py"), ("a/pkg/m.py", "b/pkg/m.py")]


def test_added_lines_numbers_rows_in_the_new_file():
    diff = textwrap.dedent("""\
        diff --git a/m.py b/m.py
        --- a/m.py
        +++ b/m.py
        @@ -2,0 +3,2 @@
        +import torch
        +x = 1
        @@ -10 +12 @@
        -y = 2
        +y = 3
        diff --git a/new.py b/new.py
        --- /dev/null
        +++ b/new.py
        @@ -0,0 +1 @@
        +z = 1
        """)
    assert mergeable.added_lines(diff) == {"m.py": {3, 4, 12}, "new.py": {1}}


def test_new_violations_counts_only_increases_per_file_and_code():
    before = [{"filename": "a.py", "code": "E501"}, {"filename": "a.py", "code": "E501"},
              {"filename": "b.py", "code": "F401"}]
    after = [{"filename": "a.py", "code": "E501"}, {"filename": "a.py", "code": "I001"},
             {"filename": "b.py", "code": "E501"}, {"filename": "b.py", "code": "F401"},
             {"filename": "c.py", "code": "E402"}]
    # a.py lost one E501 (not negative), gained I001; b.py gained E501; c.py is new.
    assert mergeable.new_violations(before, after) == {"E402": 1, "E501": 1, "I001": 1}


def test_lost_imports_sees_deleted_and_moved_imports():
    before = "import os\nimport sys\nfrom a import (b,\n   c as d)\n\ndef f():\n    import json\n"
    moved = "import sys\nfrom a import c as d, b\nimport os\n\ndef f():\n    import json\n"
    assert mergeable.lost_imports(before, moved) == []
    assert mergeable.lost_imports(before, "import sys\nfrom a import b\n") == [
        "from a import c as d", "import json", "import os"]
    # A file that no longer parses has lost every import.
    assert len(mergeable.lost_imports(before, "import os\n(")) == 5
    # One of two identical imports deleted is a loss too.
    assert mergeable.lost_imports("import os\nif x:\n    import os\n", "import os\n") == ["import os"]
    # Given the file as it was before rocmport wrote to it, only the user's own imports count.
    written = "import os\nimport torch as _rocmport_torch\nfrom pkg._rocm import is_rocm\n"
    assert mergeable.lost_imports(written, "", original="import os\n") == ["import os"]


def test_numstat_skips_binary_files():
    assert mergeable.numstat("3\t1\tpkg/m.py\n-\t-\timg.png\n0\t5\tx.py\n") == {"pkg/m.py": (3, 1), "x.py": (0, 5)}


@pytest.mark.parametrize("files, expected", [
    ({"pyproject.toml": '[tool.ruff]\nline-length = 100\n[tool.ruff.lint]\nselect = ["E", "I"]\n'
                        "[tool.ruff.format]\nquote-style = 'double'\n"}, "ruff + ruff-format"),
    ({"pyproject.toml": "[tool.ruff]\nline-length = 119\n",
      ".pre-commit-config.yaml": "repos:\n- repo: https://github.com/psf/black\n  hooks:\n  - id: black\n"},
     "ruff + black"),
    ({"pyproject.toml": "[tool.usort]\nfirst_party_detection = false\n[tool.black]\nline-length = 88\n"},
     "isort (black profile, for usort) + black"),
    ({"pyproject.toml": "[tool.isort]\nprofile = 'black'\n",
      ".pre-commit-config.yaml": "repos:\n# - id: ruff-format\n- repo: x\n  hooks:\n  - id: black\n"},
     "isort + black"),
    ({"ruff.toml": "line-length = 99\n",
      ".pre-commit-config.yaml": "  hooks:\n  - id: ruff\n  - id: ruff-format\n"}, "ruff + ruff-format"),
    ({}, "none"),
])
def test_detect_checks_reads_the_repository_configuration(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert mergeable.detect_checks(tmp_path).describe() == expected


# --------------------------------------------------------------------------------------------
# The whole script, against stand-in rocmports

PYPROJECT = textwrap.dedent("""\
    [tool.ruff]
    line-length = 88

    [tool.ruff.lint]
    select = ["E", "F", "I"]

    [tool.ruff.format]
    quote-style = "double"
    """)

MODEL = textwrap.dedent("""\
    import os

    import torch

    DEBUG = os.environ.get("DEBUG")


    def build(model):
        return torch.compile(model, mode="reduce-overhead")
    """)

# A stand-in for `python -m rocmport`: lint, fix and fix --write on pkg/model.py. With
# FAKE_ROCMPORT=good it writes the minimal fix; with =bad it does what issue 13 reports: an
# unprefixed diff with an absolute path, a silently created module, a line past the limit,
# single quotes, and, when asked for more (--prelude-profile tuned), a deleted user import.
FAKE_MAIN = r'''
import difflib, json, os, sys
from pathlib import Path

args = sys.argv[1:]
command, target = args[0], args[-1]
bad = os.environ["FAKE_ROCMPORT"] == "bad"
named = [Path(a) for a in args[1:] if a.endswith("model.py")]  # later runs name the changed files
path = named[0] if named else next(Path(target).rglob("model.py"))
text = path.read_text()
hazard = 'mode="reduce-overhead"' in text
if bad:
    gate = "from pkg._gen import is_rocm, is_rocm as IS_ROCM, is_rocm as IS_HIP, is_rocm as HIP_BUILD\n"
    fixed = text.replace("import torch\n", "import torch\n" + gate)
    fixed = fixed.replace('mode="reduce-overhead"', "mode='default' if is_rocm else 'reduce-overhead'")
else:
    fixed = text.replace('mode="reduce-overhead"', 'mode="default"')
if command == "lint":
    found = [{"code": "ROC101", "filename": str(path)}] if hazard else []
    print(json.dumps(found))
    sys.exit(1 if found else 0)
if "--write" in args:
    if "--prelude-profile" in args and bad:
        path.write_text(text.replace("import os\n", ""))
    elif hazard:
        path.write_text(fixed)
        if bad:
            (path.parent / "_gen.py").write_text("is_rocm = False\n")
    print("Fixed.", file=sys.stderr)
    sys.exit(0)
if hazard:
    a, b = ("pkg/model.py", "pkg/model.py") if bad else ("a/pkg/model.py", "b/pkg/model.py")
    if bad:
        new_module = str(Path.cwd() / "pkg/_gen.py")
        sys.stdout.write("".join(difflib.unified_diff([], ["is_rocm = False\n"], "/dev/null", new_module)))
    sys.stdout.write("".join(difflib.unified_diff(text.splitlines(True), fixed.splitlines(True), a, b)))
    sys.exit(1)
sys.exit(0)
'''


def make_repo(where: Path) -> Path:
    repo = where / "project"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "model.py").write_text(MODEL)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", *mergeable.GIT_ID, "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", *mergeable.GIT_ID, "commit", "-qm", "init"], cwd=repo, check=True)
    return repo


def run_script(tmp_path, monkeypatch, repo, rocmport_root, *extra):
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    monkeypatch.setattr(mergeable.tempfile, "tempdir", str(scratch))
    out = tmp_path / "out.json"
    code = mergeable.main([str(repo), "--rocmport-root", str(rocmport_root), "--json", str(out), *extra])
    assert list(scratch.iterdir()) == []  # the scratch copy is gone
    return code, json.loads(out.read_text())[0]


@pytest.fixture
def fake_rocmport(tmp_path):
    root = tmp_path / "fake"
    (root / "rocmport").mkdir(parents=True)
    (root / "rocmport" / "__init__.py").write_text("")
    (root / "rocmport" / "__main__.py").write_text(FAKE_MAIN)
    return root


@needs_ruff
def test_a_clean_minimal_fix_measures_clean(tmp_path, monkeypatch, fake_rocmport, capsys):
    monkeypatch.setenv("FAKE_ROCMPORT", "good")
    repo = make_repo(tmp_path)
    code, r = run_script(tmp_path, monkeypatch, repo, fake_rocmport)
    assert code == 0 and r["error"] is None
    assert r["checks"] == "ruff + ruff-format"
    assert r["findings_before"] == 1 and r["findings_after"] == 0
    assert r["diff_files"] == ["b/pkg/model.py"] and r["diff_absolute_paths"] == []
    assert r["git_apply_check"] is True
    assert r["files_changed"] == ["pkg/model.py"] and r["files_created"] == []
    assert r["net_lines"] == {"pkg/model.py": 0} and r["net_lines_max"] == 0
    assert r["new_ruff_violations"] == {} and r["format_clean_broken"] == []
    assert r["own_fixers"] == ["ruff check --fix", "ruff format"]
    assert r["refix_after_write_clean"] is True and r["refix_after_fixers_clean"] is True
    assert r["lost_imports"] == []
    assert "| project (.) | ruff + ruff-format | 1 | 0 | 0 / 0.0 | yes / NO | 0 | 0 | yes / yes | 0 | 1 → 0 |" \
        in capsys.readouterr().out
    # The repository itself was never touched.
    assert (repo / "pkg" / "model.py").read_text() == MODEL
    assert subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout == ""


@needs_ruff
def test_the_issue_13_failures_are_each_reported(tmp_path, monkeypatch, fake_rocmport):
    monkeypatch.setenv("FAKE_ROCMPORT", "bad")
    repo = make_repo(tmp_path)
    code, r = run_script(tmp_path, monkeypatch, repo, fake_rocmport)
    assert code == 0 and r["error"] is None
    assert r["git_apply_check"] is False and r["git_apply_check_p0"] is False
    assert len(r["diff_absolute_paths"]) == 1 and r["diff_absolute_paths"][0].endswith("/pkg/_gen.py")
    assert r["files_created"] == ["pkg/_gen.py"] and r["created_named_in_summary"] == {"pkg/_gen.py": False}
    assert r["net_lines"] == {"pkg/model.py": 1}
    # The gate line is too long (E501), unsorted (I001: first-party import in the third-party
    # group) and binds three unused names (F401).
    assert r["new_ruff_violations"] == {"E501": 1, "F401": 3, "I001": 1}
    assert "pkg/model.py:4: E501 Line too long (89 > 88)" in r["new_ruff_violations_on_added_lines"]
    assert r["format_clean_broken"] == ["pkg/model.py"]
    assert "'default'" in r["format_diff"]["pkg/model.py"]
    assert r["lost_imports"] == ["pkg/model.py: import os"]


@needs_ruff
def test_a_directory_outside_git_is_copied_and_measured(tmp_path, monkeypatch, fake_rocmport):
    monkeypatch.setenv("FAKE_ROCMPORT", "good")
    repo = make_repo(tmp_path)
    shutil.rmtree(repo / ".git")
    code, r = run_script(tmp_path, monkeypatch, repo, fake_rocmport)
    assert code == 0 and r["files_changed"] == ["pkg/model.py"] and r["git_apply_check"] is True
    assert not (repo / ".git").exists() and (repo / "pkg" / "model.py").read_text() == MODEL


@needs_ruff
def test_a_subdirectory_is_measured_from_the_repository_root(tmp_path, monkeypatch, fake_rocmport):
    monkeypatch.setenv("FAKE_ROCMPORT", "good")
    repo = make_repo(tmp_path)
    code, r = run_script(tmp_path, monkeypatch, repo / "pkg", fake_rocmport)
    assert code == 0 and r["target"] == "pkg" and r["files_changed"] == ["pkg/model.py"]
    assert r["checks"] == "ruff + ruff-format" and r["git_apply_check"] is True


@needs_ruff
def test_a_rocmport_that_crashes_is_an_error_not_zero_findings(tmp_path, monkeypatch, fake_rocmport):
    monkeypatch.setenv("FAKE_ROCMPORT", "good")
    (fake_rocmport / "rocmport" / "__main__.py").write_text("raise SystemExit(1)\n")
    code, r = run_script(tmp_path, monkeypatch, make_repo(tmp_path), fake_rocmport)
    assert code == 1 and r["error"].startswith("lint exit 1")


def test_a_missing_path_is_an_error_not_a_traceback(tmp_path, capsys):
    code = mergeable.main([str(tmp_path / "nope"), "--rocmport-root", str(ROOT)])
    assert code == 1
    assert "no such file or directory" in capsys.readouterr().out


@needs_ruff
@pytest.mark.slow
def test_this_checkouts_rocmport_on_a_tiny_repository(tmp_path, monkeypatch):
    repo = make_repo(tmp_path)
    code, r = run_script(tmp_path, monkeypatch, repo, ROOT)
    assert r["error"] is None
    assert r["findings_before"] >= 1 and r["findings_after"] < r["findings_before"]
    assert "pkg/model.py" in r["files_changed"]
    assert isinstance(r["git_apply_check"], bool) and isinstance(r["refix_after_fixers_clean"], bool)


@needs_ruff
def test_a_ruff_pin_to_another_version_does_not_stop_the_checks(tmp_path, monkeypatch, fake_rocmport):
    monkeypatch.setenv("FAKE_ROCMPORT", "bad")
    repo = make_repo(tmp_path)
    text = (repo / "pyproject.toml").read_text().replace("[tool.ruff]\n", '[tool.ruff]\nrequired-version = "==0.0.1"\n')
    (repo / "pyproject.toml").write_text(text)
    subprocess.run(["git", *mergeable.GIT_ID, "commit", "-qam", "pin ruff"], cwd=repo, check=True)
    code, r = run_script(tmp_path, monkeypatch, repo, fake_rocmport)
    assert r["notes"] == ["ruff's required-version commented out in pyproject.toml"]
    assert r["ruff_error"] is None and r["format_error"] is None
    assert r["new_ruff_violations"] == {"E501": 1, "F401": 3, "I001": 1}
    assert r["files_changed"] == ["pkg/model.py"]  # the scratch commit is not counted as a change
    assert "required-version" in (repo / "pyproject.toml").read_text().splitlines()[1]  # PATH untouched


# --------------------------------------------------------------------------------------------
# Issue 29: pre-commit hooks, imports that moved, gate lines per package


def test_precommit_hooks_are_read_with_their_args_and_pins():
    text = textwrap.dedent("""\
        repos:
          - repo: https://github.com/omnilib/ufmt
            rev: v2.8.0
            hooks:
              - id: ufmt
                additional_dependencies: [black == 22.12.0, usort == 1.0.5]
          - repo: https://github.com/astral-sh/ruff-pre-commit
            rev: v0.14.11
            hooks:
              - id: ruff-check
                args: [--fix]
              - id: ruff-format
          - repo: local
            hooks:
              - id: pydoclint
        """)
    hooks = mergeable.precommit_hooks(text)
    assert [(h.id, h.rev) for h in hooks] == [("ufmt", "v2.8.0"), ("ruff-check", "v0.14.11"),
                                              ("ruff-format", "v0.14.11"), ("pydoclint", "")]
    assert hooks[0].additional_dependencies == ["black == 22.12.0", "usort == 1.0.5"]
    assert hooks[1].args == ["--fix"]
    assert mergeable.hook_tool(hooks[3]) == (None, "not a formatter or linter this script runs")
    assert mergeable.precommit_hooks("repos: [") == []


def test_moved_imports_sees_an_import_above_a_late_import_section_or_a_skip():
    late = textwrap.dedent("""\
        import os

        launcher.start()  # torch must be imported after the launcher starts

        import torch
        """)
    # the same import, moved above the launcher call
    moved = "import os\nimport torch\n\nlauncher.start()  # torch must be imported after the launcher starts\n"
    assert mergeable.moved_imports(late, moved) == ["import torch"]
    skip = 'import pytest\n\npytest.importorskip("triton")\n\nimport triton\n\nx = 1\n'
    added_above = 'import pytest\nimport torch\n\npytest.importorskip("triton")\n\nimport triton\n\nx = 1\n'
    assert mergeable.moved_imports(skip, added_above) == ["import torch"]
    # an import the fix adds in the late section, or after the code, moved nothing
    added_below = 'import pytest\n\npytest.importorskip("triton")\n\nimport torch\nimport triton\n\nx = 1\n'
    assert mergeable.moved_imports(skip, added_below) == []
    gate = skip + "is_rocm = getattr(torch.version, 'hip', None) is not None\n"
    assert mergeable.moved_imports(skip, gate) == []
    # no late-import section: an import added at the top moved nothing
    assert mergeable.moved_imports("import os\n\nx = 1\n", "import os\nimport torch\n\nx = 1\n") == []


def test_gate_lines_are_counted_per_package(tmp_path):
    for folder in ("pkg", "pkg/sub"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    diff = textwrap.dedent("""\
        --- a/pkg/a.py
        +++ b/pkg/a.py
        @@ -1,0 +2,2 @@
        +
        +is_rocm = getattr(torch.version, "hip", None) is not None
        --- a/pkg/sub/b.py
        +++ b/pkg/sub/b.py
        @@ -1,0 +2 @@
        +_rocmport_is_rocm = getattr(getattr(torch, "version", None), "hip", None) is not None
        --- a/scripts/c.py
        +++ b/scripts/c.py
        @@ -1,0 +2,2 @@
        +IS_HIP = torch.version.hip is not None
        +f = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")
        """)
    assert mergeable.gate_lines(diff, tmp_path) == {"pkg": 2, "scripts": 1}


def test_gated_expressions_count_the_places_a_fix_gated():
    diff = textwrap.dedent("""\
        --- a/pkg/a.py
        +++ b/pkg/a.py
        @@ -1,0 +2,9 @@
        +is_rocm = getattr(torch.version, "hip", None) is not None
        +from pkg.utils import is_hip
        +f = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")
        +    mode={
        +        "reduce-overhead": "default",
        +    }.get(m, m)
        +    if is_rocm
        +opts = {"triton.cudagraphs": torch.version.hip is None}  # is_rocm in a comment
        +x = compile_mode  # no gate
        """)
    assert mergeable.gated_expressions(diff) == 3
