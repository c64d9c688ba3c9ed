"""Writes that cannot lose or half-write a file (issue 8): ``fix --write`` killed part-way,
two ``fix --write`` runs at once, and rocmport never importing or running what it reads.

Temporary files: the writer writes ``.rocmport-XXXXXXXX.tmp`` beside the target, then
renames it over the target. A SIGKILL between the two can leave such a file behind; it is
never mistaken for a source (not ``.py``: discovery never lists it, nothing rewrites it).
rocmport does not delete them on the next run: another rocmport process may be writing one
at that moment. ``test_stale_temporary_files_are_never_taken_for_sources`` pins this down.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmport.config import Settings
from rocmport.inputs import check_bytes
from rocmport.prelude import PreludeOptions

CONSOLE = str(Path(sys.executable).parent / "rocmport")
SLIM = "[tool.rocmport.prelude]\nrng-patch = false\ninductor-setup = false\n"  # fast fixes
SLIM_OPTIONS = PreludeOptions(rng_patch=False, inductor_setup=False)


def hazard(n: int) -> bytes:
    return (f'"""Module {n}."""\nimport torch\n\nSCALE = {n}\n'
            f'f = torch.compile(g, mode="reduce-overhead")\n'
            f'h = torch.compile(g, mode="max-autotune")\n' + "".join(
                f"def helper_{i}(x):\n    return x * {i} + SCALE\n" for i in range(20))).encode()


def make_tree(root: Path, count: int, packages: bool = False):
    """``count`` hazard files (some in a package when asked); returns {path: original}."""
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.rocmport]\n" + SLIM)
    files = {}
    for n in range(count):
        sub = root / f"dir{n % 5}"
        sub.mkdir(exist_ok=True)
        if packages and n % 5 == 0:
            (sub / "__init__.py").write_bytes(b"")
        path = sub / f"mod{n}.py"
        path.write_bytes(hazard(n))
        files[path] = path.read_bytes()
    return files


def expected_fixed(path: Path, original: bytes) -> bytes:
    report = check_bytes(original, str(path), Settings(prelude=SLIM_OPTIONS), fix=True)
    assert report.internal_error is None and report.fixed is not None
    return report.fixed


def tmp_leftovers(root: Path):
    return sorted(p for p in root.rglob(".rocmport-*"))


@pytest.mark.slow
def test_sigkill_mid_write_leaves_every_file_whole(tmp_path):
    files = make_tree(tmp_path, 24)
    fixed = {p: expected_fixed(p, data) for p, data in files.items()}
    proc = subprocess.Popen([CONSOLE, "fix", "--write", "."], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    killed_mid_run = False
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.read_bytes() != data for p, data in files.items()):  # the writes have begun
            proc.send_signal(signal.SIGKILL)
            killed_mid_run = True
            break
        time.sleep(0.002)
    proc.wait()
    states = {"original": 0, "fixed": 0}
    for path, original in files.items():
        data = path.read_bytes()
        if data == original:
            states["original"] += 1
        else:
            assert data == fixed[path], f"{path} is neither its original nor its fixed version"
            states["fixed"] += 1
    assert states["fixed"] >= 1 or not killed_mid_run
    # what a kill may leave: temporary files of ours, never half-written sources
    for leftover in tmp_leftovers(tmp_path):
        assert leftover.suffix == ".tmp"
    # the next run finishes the job and leaves every file fixed exactly once
    result = subprocess.run([CONSOLE, "fix", "--write", "."], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    for path in files:
        assert path.read_bytes() == fixed[path]


def test_stale_temporary_files_are_never_taken_for_sources(tmp_path):
    files = make_tree(tmp_path, 2)
    stale = tmp_path / "dir0" / ".rocmport-k1ll3d00.tmp"
    stale.write_bytes(hazard(99)[:40])  # a half-written temporary file
    result = subprocess.run([CONSOLE, "lint", "."], cwd=tmp_path, capture_output=True, text=True)
    assert ".rocmport-" not in result.stdout
    result = subprocess.run([CONSOLE, "fix", "--write", "."], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0 and ".rocmport-" not in result.stdout + result.stderr
    assert stale.read_bytes() == hazard(99)[:40]  # neither rewritten nor deleted
    assert tmp_leftovers(tmp_path) == [stale]  # and the run added none of its own
    for path, original in files.items():
        assert path.read_bytes() == expected_fixed(path, original)


@pytest.mark.slow
def test_two_concurrent_fix_write_runs_fix_every_file_exactly_once(tmp_path):
    files = make_tree(tmp_path, 20, packages=True)
    procs = [subprocess.Popen([CONSOLE, "fix", "--write", "."], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode in (0, 1), err  # never an internal error or a failed write
        assert "error:" not in err, err
    for path, original in files.items():
        data = path.read_bytes()
        assert data.count(b'is_rocm = getattr(torch.version, "hip", None) is not None') == 1, path
        assert data.count(b'"default" if is_rocm else "reduce-overhead"') == 1, path
        assert b"if is_rocm else \"default\" if is_rocm" not in data
        compile(data, str(path), "exec")
    assert tmp_leftovers(tmp_path) == []
    # the generated module, when a package asked for one, is whole
    for module in tmp_path.rglob("_rocmport.py"):
        compile(module.read_bytes(), str(module), "exec")
    # everything settled, and any cache agrees with a run without it
    again = subprocess.run([CONSOLE, "fix", "."], cwd=tmp_path, capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout == "", again.stdout + again.stderr
    lint_cached = subprocess.run([CONSOLE, "lint", "."], cwd=tmp_path, capture_output=True, text=True)
    shutil.rmtree(tmp_path / ".rocmport_cache", ignore_errors=True)
    lint_fresh = subprocess.run([CONSOLE, "lint", "."], cwd=tmp_path, capture_output=True, text=True)
    assert (lint_cached.returncode, lint_cached.stdout) == (lint_fresh.returncode, lint_fresh.stdout)


MARKER_CODE = (
    "import pathlib\n"
    "pathlib.Path(__file__).resolve().parent.joinpath('MARKER-{name}').write_text('imported')\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["console", "module"])
def test_rocmport_never_imports_or_runs_what_it_reads(tmp_path, entry):
    """Files whose import (or run as a script) would leave a marker on disk leave none."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    sources = {
        tmp_path / "evil.py": MARKER_CODE.format(name="evil") + 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
                                                                'if __name__ == "__main__":\n'
                              + "    " + MARKER_CODE.format(name="main").replace("\n", "\n    ").rstrip() + "\n",
        pkg / "__init__.py": MARKER_CODE.format(name="init"),
        pkg / "kernels.py": MARKER_CODE.format(name="kernels") + "import triton\n"
                            'cfg = triton.Config({"BLOCK": 4096}, num_warps=32)\n',
        tmp_path / "conftest.py": MARKER_CODE.format(name="conftest"),
        tmp_path / "sitecustomize.py": MARKER_CODE.format(name="sitecustomize"),
        tmp_path / "usercustomize.py": MARKER_CODE.format(name="usercustomize"),
        tmp_path / "setup.py": MARKER_CODE.format(name="setup"),
    }
    if entry == "console":
        # modules named like rocmport's own dependencies: the console script must not pick them up
        for name in ("click", "libcst", "pathspec", "tomli", "rules", "analysis"):
            sources[tmp_path / f"{name}.py"] = MARKER_CODE.format(name=name)
    for path, text in sources.items():
        path.write_text(text)
    cmd = [CONSOLE] if entry == "console" else [sys.executable, "-m", "rocmport"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for args in (["lint", "."], ["fix", "."], ["fix", "--write", "."], ["lint", "evil.py", "pkg/kernels.py"]):
        proc = subprocess.run(cmd + args, cwd=tmp_path, capture_output=True, text=True, env=env)
        assert proc.returncode in (0, 1), proc.stderr
        assert not list(tmp_path.rglob("MARKER-*")), f"{args}: {sorted(tmp_path.rglob('MARKER-*'))}"
    assert '"default" if is_rocm else "reduce-overhead"' in (tmp_path / "evil.py").read_text()
