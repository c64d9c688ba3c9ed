"""The repository's formatter is someone else's program (issue 31): its output replaces a
rewritten statement only when it holds the same syntax tree and comments as the statement
and nothing more; a formatter that hangs is stopped with its children, within one budget for
the file, and not called again; output that is not UTF-8 is refused, not an internal error.
Fake ``ruff`` executables on PATH and a fake ``black`` package play the formatter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rocmport import reformat
from rocmport.config import Settings
from rocmport.inputs import check_bytes

REAL_RUFF = shutil.which("ruff") or shutil.which("ruff", path=os.path.dirname(sys.executable))
SOURCE = ("import torch\n\n\ndef build(model):\n"
          "    # the model, compiled\n"
          "    compiled = torch.compile(model, mode=\"reduce-overhead\")  # noqa: E501\n"
          "    return compiled\n")
ONE_LINE = '    compiled = torch.compile(model, mode="default" if is_rocm else "reduce-overhead")  # noqa: E501\n'


def _project(tmp_path: Path, config: str = "[tool.ruff]\nline-length = 40\n") -> Path:
    (tmp_path / "pyproject.toml").write_text(config)
    (tmp_path / "mod.py").write_text(SOURCE)
    return tmp_path


def _fake(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\nimport os, subprocess, sys, time\n" + textwrap.dedent(body))
    path.chmod(0o755)


def _fix(root: Path) -> str:
    report = check_bytes((root / "mod.py").read_bytes(), str(root / "mod.py"), Settings(), fix=True)
    assert report.internal_error is None, report.internal_error
    assert report.fixed is not None
    return report.fixed.decode()


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(reformat, "_TIMED_OUT", set(), raising=False)


@pytest.mark.parametrize("name, body", [
    ("output that is not the statement", "sys.stdin.read(); sys.stdout.write('pass\\n')\n"),
    ("a statement more", "code = sys.stdin.read(); sys.stdout.write('import os\\n' + code)\n"),
    ("a changed value", "code = sys.stdin.read(); sys.stdout.write(code.replace('default', 'max-autotune'))\n"),
    ("a comment dropped", "code = sys.stdin.read(); sys.stdout.write(code.split('  #')[0] + '\\n')\n"),
    ("bytes that are not UTF-8", "sys.stdin.read(); sys.stdout.buffer.write(b'x = \\xff\\xfe\\n')\n"),
    ("a failure", "sys.stdin.read(); sys.exit(2)\n"),
])
def test_a_misbehaving_formatter_never_changes_the_statement(tmp_path, monkeypatch, fresh, name, body):
    root = _project(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    _fake(tmp_path / "bin", "ruff", "sys.exit(2)\n")
    unformatted = _fix(root)  # what the fix is without a formatter
    assert ONE_LINE in unformatted
    _fake(tmp_path / "bin", "ruff", body)
    assert _fix(root) == unformatted, name


@pytest.mark.skipif(REAL_RUFF is None, reason="ruff is installed by the test extra")
def test_a_formatter_that_keeps_the_statement_formats_it(tmp_path, monkeypatch, fresh):
    """The control: a fake that passes the statement to the real ruff is trusted."""
    root = _project(tmp_path)
    _fake(tmp_path / "bin", "ruff", f"sys.exit(subprocess.run([{REAL_RUFF!r}] + sys.argv[1:]).returncode)\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    fixed = _fix(root)
    assert ONE_LINE not in fixed
    assert "compiled = torch.compile(\n" in fixed and 'mode="default"\n        if is_rocm\n' in fixed
    assert "    # the model, compiled\n" in fixed and ")  # noqa: E501\n" in fixed


def _pids_alive(marks: Path):
    alive = []
    for mark in marks.glob("pid.*"):
        pid = int(mark.read_text())
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        with open(f"/proc/{pid}/stat") as handle:  # a zombie not yet reaped by init is gone too
            if handle.read().split()[2] != "Z":
                alive.append(pid)
    return alive


MANY = "import torch\n\n" + "".join(f"m{i} = torch.compile(abs, mode=\"reduce-overhead\")\n" for i in range(4))


def test_a_hanging_ruff_costs_one_call_and_leaves_no_child(tmp_path):
    """Four long statements, a ruff that never answers and starts a child: the run ends
    after one call's time, the child is gone, the statements stay on one line."""
    _project(tmp_path)
    (tmp_path / "mod.py").write_text(MANY)
    marks = tmp_path / "marks"
    marks.mkdir()
    _fake(tmp_path / "bin", "ruff", f"""\
        child = subprocess.Popen(["sleep", "300"])
        open(os.path.join({str(marks)!r}, "pid.%d" % child.pid), "w").write(str(child.pid))
        time.sleep(300)
        """)
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "rocmport", "fix", "--no-cache", "--write", "mod.py"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=90)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert elapsed < reformat.CALL_TIMEOUT_S + 15, elapsed
    assert len(list(marks.glob("pid.*"))) == 1  # called once, not once per statement
    assert _pids_alive(marks) == []
    fixed = (tmp_path / "mod.py").read_text()
    assert fixed.count('mode="default" if is_rocm else "reduce-overhead")\n') == 4


def test_a_hanging_black_is_stopped_and_the_run_goes_on(tmp_path):
    """black runs in a child interpreter with the same budget (in-process, a hang could not
    be stopped)."""
    _project(tmp_path, "[tool.black]\nline-length = 40\n")
    fake = tmp_path / "fake"
    (fake / "black").mkdir(parents=True)
    (fake / "black" / "__init__.py").write_text(
        "import time\n\n\nclass Mode:\n    def __init__(self, **kw):\n        pass\n\n\n"
        "def format_str(code, mode):\n    time.sleep(300)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "rocmport", "fix", "--no-cache", "--write", "mod.py"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < reformat.CALL_TIMEOUT_S + 15
    assert ONE_LINE in (tmp_path / "mod.py").read_text()


def test_a_black_that_rewrites_the_statement_is_not_trusted(tmp_path, monkeypatch, fresh):
    root = _project(tmp_path, "[tool.black]\nline-length = 40\n")
    fake = tmp_path / "fake"
    (fake / "black").mkdir(parents=True)
    (fake / "black" / "__init__.py").write_text(
        "class Mode:\n    def __init__(self, **kw):\n        pass\n\n\n"
        "def format_str(code, mode):\n    return 'pass\\n'\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]))
    assert ONE_LINE in _fix(root)
