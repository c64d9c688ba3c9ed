"""The flake8 plugin, through real flake8 in a subprocess: ``flake8 --select ROC``."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("flake8")

SOURCE = (
    "import torch\n"
    "\n"
    'a = torch.compile(f, mode="reduce-overhead")\n'
    'b = torch.compile(f, mode="max-autotune")  # noqa: ROC102\n'
    'c = torch.compile(f, mode="max-autotune")  # noqa: E501\n'
    'd = torch.compile(f, mode="max-autotune")  # noqa\n'
    'e = torch.compile(f, mode="max-autotune")  # NOQA:ROC1\n'
)


def flake8(*args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True)


def test_reports_findings_and_respects_noqa(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    run = flake8("--select", "ROC", "train.py", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert run.stdout.splitlines() == [
        'train.py:3:27: ROC101 mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; '
        'use "default" there',
        'train.py:5:27: ROC102 mode="max-autotune" turns on CUDA graphs, which hang or slow down on ROCm; '
        'use "max-autotune-no-cudagraphs" there',
    ]
    # no fixes: the file is as it was
    assert (tmp_path / "train.py").read_text() == SOURCE


def test_disable_noqa_shows_everything(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    run = flake8("--select", "ROC", "--disable-noqa", "train.py", cwd=tmp_path)
    assert [line.split(":")[1] for line in run.stdout.splitlines()] == ["3", "4", "5", "6", "7"]


def test_flake8_selection_and_stdin(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    run = flake8("--select", "ROC", "--extend-ignore", "ROC101", "train.py", cwd=tmp_path)
    assert [line.split(": ")[1][:6] for line in run.stdout.splitlines()] == ["ROC102"]
    run = flake8("--select", "ROC", "--stdin-display-name", "piped.py", "-", cwd=tmp_path, stdin=SOURCE)
    assert run.stdout.startswith("piped.py:3:27: ROC101 ")
    # # flake8: noqa skips the file; a clean file reports nothing
    (tmp_path / "clean.py").write_text("# flake8: noqa\n" + SOURCE)
    assert flake8("--select", "ROC", "clean.py", cwd=tmp_path).stdout == ""


def test_encoding_cookie_and_syntax_error(tmp_path):
    (tmp_path / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\nx = '\xe9'; m = torch.compile(f, mode='reduce-overhead')\n")
    run = flake8("--select", "ROC", "latin.py", cwd=tmp_path)
    assert run.stdout.startswith("latin.py:3:36: ROC101 "), run.stdout + run.stderr
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    # flake8 reports a file it cannot parse itself (E999) and runs no AST plugin on it
    run = flake8("--select", "ROC,E999", "broken.py", cwd=tmp_path)
    assert ": E999 SyntaxError" in run.stdout and "ROC" not in run.stdout
