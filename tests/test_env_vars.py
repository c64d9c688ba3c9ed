"""ROC6xx: Python fixtures and execution with real torch; shell scripts, Dockerfiles, YAML
and .env files (display-only findings at the right line, comments ignored, never changed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmport.discovery import discover, file_kind
from rocmport.inputs import check_bytes, check_path
from rocmport.registry import all_rules
from rocmport.rules.env_vars.common import classify
from rocmport.rules.env_vars.scan_files import kind_for, scan

from .harness import FIXTURES, assert_fix_properties, check_fixture_pair, codes, fix, fixture_pairs, lint, settings

SELECT = ["ROC6"]
ENV = FIXTURES / "env_vars"
PAIRS = [(p, e) for p, e in fixture_pairs("env_vars") if p.name != "late.py"]
ALL = frozenset(all_rules())


@pytest.mark.parametrize("path,expected", PAIRS, ids=[p.name for p, _ in PAIRS])
def test_fixture(path, expected):
    check_fixture_pair(path, expected, select=SELECT)


def test_every_python_spelling_is_found():
    found = [(f.start.row, f.code) for f in lint((ENV / "spellings.py").read_bytes(), select=SELECT)]
    assert found == [(8, "ROC601"), (9, "ROC602"), (10, "ROC604"), (11, "ROC601"), (12, "ROC601"),
                     (13, "ROC602"), (14, "ROC601"), (16, "ROC601"), (21, "ROC602"), (23, "ROC601"),
                     (24, "ROC604"), (25, "ROC602")]


def test_late_setting_is_display_only():
    data = (ENV / "late.py").read_bytes()
    found = lint(data, select=SELECT)
    assert [(f.start.row, f.code) for f in found] == [(7, "ROC603"), (8, "ROC603"), (13, "ROC603"), (13, "ROC601")]
    late = [f for f in found if f.code == "ROC603"]
    assert all(f.fix is not None and not f.fixable for f in late)
    assert all("line 5" in f.message for f in late)
    report = assert_fix_properties(data, select=["ROC603"])
    assert report.fixed is None


def test_late_after_compile_call_and_function_local_import():
    src = ('import os\nimport torch\n\ndef main():\n    import torch._inductor.config\n'
           '    os.environ["TORCHINDUCTOR_CUDAGRAPHS"] = "0"\n')
    assert codes(src, select=["ROC603"]) == ["ROC603"]
    src = 'import os\nimport torch\nf = torch.compile(g)\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0"\n'
    assert codes(src, select=["ROC603"]) == ["ROC603"]
    src = 'import os\ndef f():\n    import torch._dynamo\ndef g():\n    os.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "0"\n'
    assert codes(src, select=["ROC603"]) == []


@pytest.mark.parametrize("var,value,code", [
    ("TORCHINDUCTOR_MAX_AUTOTUNE", "1", "ROC601"), ("TORCHINDUCTOR_MAX_AUTOTUNE", "0", None),
    ("TORCHINDUCTOR_MAX_AUTOTUNE", "", None), ("TORCHINDUCTOR_MAX_AUTOTUNE", "true", None),
    ("TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE", None, "ROC601"), ("TORCHINDUCTOR_CUDAGRAPHS", "1", "ROC602"),
    ("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS", "aten,triton", "ROC604"),
    ("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS", "ATEN", None), ("TORCHINDUCTOR_CACHE_DIR", "1", None),
])
def test_classify(var, value, code):
    assert classify(var, value) == code


# ------------------------------------------------------------------------------------------
# Execution with real torch
# ------------------------------------------------------------------------------------------

VARS = ["TORCHINDUCTOR_MAX_AUTOTUNE", "TORCHINDUCTOR_CUDAGRAPHS", "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS",
        "TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE", "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM"]
PROBE = ("{'environ': {k: os.environ.get(k) for k in %r}, 'child': launch(['true'])['TORCHINDUCTOR_CUDAGRAPHS'],"
         " 'max_autotune': __import__('torch._inductor.config').__dict__ and config.max_autotune}" % VARS)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    pytest.importorskip("torch")
    from .exec_harness import run_module

    directory = tmp_path_factory.mktemp("env_exec")
    original = (ENV / "spellings.py").read_bytes()
    (directory / "original.py").write_bytes(original)
    (directory / "fixed.py").write_bytes(fix(original, select=SELECT).fixed)
    return {(name, rocm): run_module(directory / f"{name}.py", rocm, PROBE)
            for name in ("original", "fixed") for rocm in (False, True)}


def test_env_nvidia_path_keeps_original_values(executed):
    assert executed[("fixed", False)] == executed[("original", False)]
    assert executed[("original", False)]["environ"]["TORCHINDUCTOR_MAX_AUTOTUNE"] == "1"
    assert executed[("original", False)]["max_autotune"] is True


def test_env_rocm_path_sets_no_hazardous_value(executed):
    result = executed[("fixed", True)]
    for var, value in result["environ"].items():
        assert classify(var, value) is None, (var, value)
    assert result["child"] == "0"
    assert result["max_autotune"] is False
    assert executed[("original", True)]["environ"]["TORCHINDUCTOR_MAX_AUTOTUNE"] == "1"


# ------------------------------------------------------------------------------------------
# Files that are not Python
# ------------------------------------------------------------------------------------------

FILES = ENV / "files"
EXPECTED = {
    "launch.sh": [(3, 8, "ROC601"), (4, 1, "ROC602"), (6, 5, "ROC601"), (8, 12, "ROC604"), (9, 10, "ROC601"),
                  (13, 15, "ROC602"), (13, 48, "ROC601"), (14, 15, "ROC602")],
    "Dockerfile": [(3, 5, "ROC601"), (4, 5, "ROC602"), (6, 5, "ROC601"), (10, 5, "ROC602"), (11, 12, "ROC604")],
    "workflow.yml": [(3, 3, "ROC601"), (9, 11, "ROC602"), (13, 11, "ROC602"), (14, 11, "ROC601"),
                     (17, 18, "ROC601"), (19, 14, "ROC602"), (27, 13, "ROC601"), (31, 13, "ROC604"),
                     (34, 9, "ROC602"), (36, 16, "ROC601")],
    "deploy.yaml": [(7, 13, "ROC601"), (19, 15, "ROC602")],
    ".env": [(2, 1, "ROC601"), (3, 8, "ROC602")],
    "run_train": [(4, 1, "ROC602")],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_file_findings_at_their_lines(name):
    path = FILES / name
    report = check_path(str(path), settings())
    assert report.internal_error is None
    assert [(f.start.row, f.start.column, f.code) for f in report.findings] == EXPECTED[name]
    assert all(f.fix is not None and f.fix.edits == () and not f.fixable for f in report.findings)
    fixed = check_path(str(path), settings(), fix=True)
    assert fixed.fixed is None and fixed.fixes_applied == 0


def test_k8s_item_spans_name_and_value_lines():
    found = scan("deploy.yaml", (FILES / "deploy.yaml").read_text(), ALL)
    assert (found[0].start.row, found[0].end.row) == (7, 8)


def test_file_kinds_and_directory_walk():
    assert kind_for("Dockerfile") == "dockerfile" and kind_for("gpu.Dockerfile") == "dockerfile"
    assert kind_for("Dockerfile.rocm") == "dockerfile" and kind_for("a/b/.env.local") == "dotenv"
    assert kind_for("x.bash") == "shell" and kind_for("ci.yaml") == "yaml"
    assert kind_for("run", b"#!/bin/sh\n") == "shell" and kind_for("run", b"#!/usr/bin/env python\n") is None
    assert kind_for("x.py", b"#!/bin/bash\n") is None and kind_for("notes.txt") is None
    assert file_kind(FILES / "run_train") == "shell" and file_kind(FILES / "README.txt") is None
    files, missing = discover([str(FILES)], settings(root=str(FILES)))
    assert sorted(Path(f).name for f in files) == sorted(EXPECTED) and not missing


def test_noqa_select_and_odd_bytes():
    data = b"export TORCHINDUCTOR_CUDAGRAPHS=1  # noqa: ROC602\nexport TORCHINDUCTOR_MAX_AUTOTUNE=1 # noqa\n"
    assert check_bytes(data, "a.sh", settings()).findings == []
    data = b"# rocmport: noqa\nexport TORCHINDUCTOR_CUDAGRAPHS=1\n"
    assert check_bytes(data, "a.sh", settings()).findings == []
    data = b"export TORCHINDUCTOR_CUDAGRAPHS=1\nexport TORCHINDUCTOR_MAX_AUTOTUNE=1\n"
    assert [f.code for f in check_bytes(data, "a.sh", settings(select=["ROC601"])).findings] == ["ROC601"]
    # invalid UTF-8, NUL bytes, CR line endings, an unterminated quote: no crash
    for data in (b"\xff\xfeexport TORCHINDUCTOR_CUDAGRAPHS=1\n", b"\x00\x01ENV X",
                 b"ENV TORCHINDUCTOR_CUDAGRAPHS=1\rENV B=2\r", b"export TORCHINDUCTOR_CUDAGRAPHS='1\n",
                 b"env:\n  - name: TORCHINDUCTOR_CUDAGRAPHS\n", b"env: {\n"):
        for name in ("a.sh", "Dockerfile", "c.yml", ".env"):
            report = check_bytes(data, name, settings())
            assert report.internal_error is None
    report = check_bytes(b"ENV TORCHINDUCTOR_CUDAGRAPHS=1\rENV B=2\r", "Dockerfile", settings())
    assert [(f.start.row, f.code) for f in report.findings] == [(1, "ROC602")]


def test_comments_in_files_are_not_findings():
    assert scan("a.sh", "# export TORCHINDUCTOR_CUDAGRAPHS=1\necho hi  # TORCHINDUCTOR_CUDAGRAPHS=1\n", ALL) == []
    assert scan("Dockerfile", "# ENV TORCHINDUCTOR_CUDAGRAPHS=1\n", ALL) == []
    assert scan("c.yml", "env:\n  # TORCHINDUCTOR_CUDAGRAPHS: 1\n  A: 1\n", ALL) == []
    assert scan(".env", "  # TORCHINDUCTOR_CUDAGRAPHS=1\n", ALL) == []


def test_lint_via_stdin_filename_uses_kind():
    report = check_bytes(b"ENV TORCHINDUCTOR_MAX_AUTOTUNE 1\n", "docker/Dockerfile.gpu", settings())
    assert [f.code for f in report.findings] == ["ROC601"]
