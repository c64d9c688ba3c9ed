"""One gate line for a package (issue 29): where ``fix`` would give several modules of one
package a gate line each and the package has a utilities module that imports torch, the
line goes there once as ``_is_rocm`` and the modules import it, each only where
``rocmport.reuse`` proves the import safe; the repository's ruff leaves the result alone, a
second run changes nothing, and the fixed package runs the same on the NVIDIA path and
without CUDA graphs on a simulated ROCm build (real torch)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport.cli import main
from rocmport.config import Settings
from rocmport.runner import check_files

from .exec_harness import run_module

BIN = os.path.dirname(sys.executable)
RUFF = shutil.which("ruff") or shutil.which("ruff", path=BIN)

UTILS = """\
    import torch


    def device_name():
        return torch.cuda.get_device_name()
    """

MODEL = """\
    import torch

    {imports}


    def build(model):
        device_name
        return torch.compile(model, mode="reduce-overhead")
    """

OWN_LINE = 'is_rocm = getattr(torch.version, "hip", None) is not None'
PACKAGE_LINE = '_is_rocm = getattr(torch.version, "hip", None) is not None'


def _write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    (root / "pyproject.toml").touch()
    return root


def _fix(root: Path, only=None, jobs: int = 1) -> dict:
    """``rocmport fix --write`` over the tree (or the files ``only`` names): what changed."""
    files = sorted(str(p) for p in root.rglob("*.py")) if only is None else [str(root / n) for n in only]
    changed = {}
    for report in check_files(files, Settings(), jobs=jobs, fix=True):
        assert report.internal_error is None, report.internal_error
        if report.fixed is not None and report.fixed != report.original:
            Path(report.path).write_bytes(report.fixed)
            changed[Path(report.path).relative_to(root).as_posix()] = report.fixed.decode()
    return changed


def _package(root: Path, models=("a", "b", "c"), imports="from app.utils import device_name", utils=UTILS,
             extra=None) -> Path:
    files = {"app/__init__.py": ""}
    if utils is not None:
        files["app/utils.py"] = utils
    for name in models:
        files[f"app/model_{name}.py"] = MODEL.format(imports=imports)
    files.update(extra or {})
    return _write(root, files)


@pytest.mark.parametrize("jobs", [1, 2])
def test_three_modules_share_one_line_in_the_utilities_module(tmp_path, jobs):
    root = _package(tmp_path)
    changed = _fix(root, jobs=jobs)
    assert sorted(changed) == ["app/model_a.py", "app/model_b.py", "app/model_c.py", "app/utils.py"]
    assert changed["app/utils.py"] == textwrap.dedent(UTILS).replace(
        "import torch\n", f"import torch\n\n{PACKAGE_LINE}\n", 1)
    for name in "abc":
        text = changed[f"app/model_{name}.py"]
        assert "from app.utils import _is_rocm, device_name\n" in text
        assert 'mode="default" if _is_rocm else "reduce-overhead"' in text
        assert OWN_LINE not in text
    assert _fix(root) == {}  # a second run changes nothing


def test_what_is_left_in_the_utilities_module_is_reported_where_it_is_written(tmp_path):
    """The utilities module's own findings (a display-only one here) are placed in the text
    with the gate line, not in the text before it."""
    utils = textwrap.dedent(UTILS) + "\n\ndef fast():\n    major, _ = torch.cuda.get_device_capability()\n    return major >= 9\n"
    root = _package(tmp_path, utils=utils)
    reports = check_files(sorted(str(p) for p in root.rglob("*.py")), Settings(), jobs=1, fix=True)
    report = next(r for r in reports if r.path.endswith("utils.py"))
    assert report.fixed is not None and PACKAGE_LINE.encode() in report.fixed
    lines = report.fixed.decode().splitlines()
    assert report.findings
    for finding in report.findings:
        assert "major >= 9" in lines[finding.start.row - 1], finding


def test_relative_imports_of_a_subpackage_import_the_gate_relatively(tmp_path):
    root = _write(tmp_path, {
        "app/__init__.py": "", "app/utils.py": UTILS, "app/models/__init__.py": "",
        "app/models/a.py": MODEL.format(imports="from ..utils import device_name"),
        "app/models/b.py": MODEL.format(imports="from ..utils import device_name"),
    })
    changed = _fix(root)
    assert PACKAGE_LINE in changed["app/utils.py"]
    for name in ("a", "b"):
        assert "from ..utils import _is_rocm, device_name\n" in changed[f"app/models/{name}.py"]


def test_a_utilities_module_that_needs_the_gate_itself_is_the_gate(tmp_path):
    utils = textwrap.dedent(UTILS) + '\n\ndef compiled(model):\n    return torch.compile(model, mode="reduce-overhead")\n'
    root = _package(tmp_path, models=("a",), utils=utils)
    changed = _fix(root)
    assert OWN_LINE in changed["app/utils.py"] and PACKAGE_LINE not in changed["app/utils.py"]
    assert "from app.utils import device_name, is_rocm\n" in changed["app/model_a.py"]
    assert OWN_LINE not in changed["app/model_a.py"]


def test_each_module_shares_the_nearest_utilities_module(tmp_path):
    """Subpackages with utilities of their own: kernels' utils needs a gate itself and is the
    gate of its package; models' _utils takes the private line for two modules."""
    kernels_utils = textwrap.dedent(UTILS) + '\n\ndef compiled(model):\n    return torch.compile(model, mode="reduce-overhead")\n'
    root = _write(tmp_path, {
        "app/__init__.py": "", "app/utils.py": UTILS,
        "app/kernels/__init__.py": "", "app/kernels/utils.py": kernels_utils,
        "app/kernels/a.py": MODEL.format(imports="from .utils import device_name"),
        "app/models/__init__.py": "", "app/models/_utils.py": UTILS,
        "app/models/b.py": MODEL.format(imports="from ._utils import device_name"),
        "app/models/c.py": MODEL.format(imports="from ._utils import device_name"),
    })
    changed = _fix(root)
    assert "app/utils.py" not in changed
    assert OWN_LINE in changed["app/kernels/utils.py"]
    assert "from .utils import device_name, is_rocm\n" in changed["app/kernels/a.py"]
    assert PACKAGE_LINE in changed["app/models/_utils.py"]
    for name in "bc":
        assert "from ._utils import _is_rocm, device_name\n" in changed[f"app/models/{name}.py"]
    assert _fix(root) == {}


# -- near misses: each module keeps its own line ------------------------------------------

@pytest.mark.parametrize("case", ["one module", "utils without torch", "utils not fixed", "no utilities module",
                                  "utils uses the name", "utils with optional torch", "not a package"])
def test_near_misses_keep_a_line_in_each_module(tmp_path, case):
    only = None
    if case == "one module":
        root = _package(tmp_path, models=("a",))
    elif case == "utils without torch":
        root = _package(tmp_path, utils="def device_name():\n    return 'gpu'\n")
    elif case == "utils not fixed":  # a run over some files never edits another
        root = _package(tmp_path)
        only = ["app/model_a.py", "app/model_b.py"]
    elif case == "no utilities module":
        root = _package(tmp_path, imports="from app.helpers import device_name", utils=None,
                        extra={"app/helpers.py": UTILS})
    elif case == "utils uses the name":
        root = _package(tmp_path, utils=textwrap.dedent(UTILS) + "\n\n_is_rocm = None\n")
    elif case == "utils with optional torch":
        root = _package(tmp_path, utils="try:\n    import torch\nexcept ImportError:\n    torch = None\n\n\n"
                                        "def device_name():\n    return torch.cuda.get_device_name()\n")
    else:  # top-level modules of a folder without __init__.py
        root = _write(tmp_path, {"utils.py": UTILS, "a.py": MODEL.format(imports="from utils import device_name"),
                                 "b.py": MODEL.format(imports="from utils import device_name")})
    changed = _fix(root, only)
    models = [name for name in changed if "utils" not in name]
    assert len(models) >= 1
    for name in models:
        assert OWN_LINE in changed[name], name
    assert not any(PACKAGE_LINE in text for text in changed.values())


def test_a_module_the_utilities_module_imports_back_keeps_its_own_line(tmp_path):
    """An import cycle (``reuse.reaches``): model_a is imported by utils at module level, so
    it cannot import utils' gate; model_b and model_c still share it."""
    utils = "import torch\n\nfrom app import model_a\n\n\ndef device_name():\n    return model_a\n"
    root = _package(tmp_path, utils=utils)
    changed = _fix(root)
    assert OWN_LINE in changed["app/model_a.py"]
    for name in "bc":
        assert "_is_rocm" in changed[f"app/model_{name}.py"]
        assert OWN_LINE not in changed[f"app/model_{name}.py"]


def test_a_single_module_that_may_import_it_is_not_worth_the_line(tmp_path):
    """Only model_a may import the gate (the others are imported back by utils): one line
    moved for one line added saves nothing, so nothing changes."""
    utils = "import torch\n\nfrom app import model_b, model_c\n\n\ndef device_name():\n    return model_b, model_c\n"
    root = _package(tmp_path, utils=utils)
    changed = _fix(root)
    assert "app/utils.py" not in changed
    assert all(OWN_LINE in changed[f"app/model_{name}.py"] for name in "abc")


def test_a_private_test_function_of_the_project_is_not_taken_for_the_package_gate(tmp_path):
    """The private name is imported only as the constant rocmport writes: a project's own
    ``_is_rocm()`` function stays private (and the utilities module, which uses the name,
    gets no line)."""
    utils = textwrap.dedent(UTILS) + '\n\ndef _is_rocm():\n    return getattr(torch.version, "hip", None) is not None\n'
    root = _package(tmp_path, utils=utils)
    changed = _fix(root)
    assert "app/utils.py" not in changed
    assert all(OWN_LINE in changed[f"app/model_{name}.py"] for name in "abc")


@pytest.mark.skipif(RUFF is None, reason="ruff is a test dependency")
def test_ruff_leaves_the_result_alone(tmp_path):
    root = _package(tmp_path)
    _fix(root)
    files = [str(p) for p in root.rglob("*.py")]
    lint = subprocess.run([RUFF, "check", "--isolated", "--select", "E,F,I,W", *files], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    fmt = subprocess.run([RUFF, "format", "--isolated", "--check", *files], capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout


# -- the command line: written in order, described, never half-written ---------------------

def test_fix_write_says_so_in_the_pull_request_body(tmp_path, monkeypatch):
    root = _package(tmp_path)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["fix", "--write", "--pr-body", "body.md", "app"])
    assert result.exit_code == 0, result.output
    body = (root / "body.md").read_text()
    assert "defined once for its package, in `app/utils.py`" in body
    assert "imported by the 3 modules" in body


def test_when_the_utilities_module_cannot_be_written_its_importers_are_not_either(tmp_path, monkeypatch):
    import rocmport.writer as writer

    root = _package(tmp_path)
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    real = writer.write_atomic

    def failing(path, data, **kw):
        if str(path).endswith("utils.py"):
            raise OSError(28, "No space left on device")
        return real(path, data, **kw)

    monkeypatch.setattr(writer, "write_atomic", failing)
    monkeypatch.chdir(root)
    result = CliRunner().invoke(main, ["fix", "--write", "app"])
    assert result.exit_code == 2, result.output
    assert "which could not be written" in result.output
    assert {p: p.read_bytes() for p in root.rglob("*.py")} == before  # no module imports a missing name


# -- it runs: the NVIDIA path as before, no CUDA graphs on ROCm -----------------------------

@pytest.mark.slow
def test_the_fixed_package_runs_the_same_on_the_nvidia_path(tmp_path):
    root = _package(tmp_path)
    driver = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(root)!r})
        import torch
        seen = []
        torch.compile = lambda model=None, **kw: seen.append(kw)
        from app import model_a, model_b, model_c
        for module in (model_a, model_b, model_c):
            module.build(None)
        """)
    before = run_module(driver, rocm=False, probe="seen")
    assert before == [{"mode": "reduce-overhead"}] * 3
    assert len(_fix(root)) == 4
    assert run_module(driver, rocm=False, probe="seen") == before
    assert run_module(driver, rocm=True, probe="seen") == [{"mode": "default"}] * 3
