"""A project's own ROCm test is reused across modules (issue 13): where a file imports a
project module that defines ``is_rocm()`` or ``IS_HIP``, fixes test it instead of adding a
gate line, written the way the file already imports that module; the repository's ruff and
isort leave the result alone, a second run changes nothing, and the fixed package runs the
same on the NVIDIA path (executed against real torch)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocmport.config import Settings
from rocmport.runner import check_files

from .exec_harness import run_module

BIN = os.path.dirname(sys.executable)
RUFF = shutil.which("ruff") or shutil.which("ruff", path=BIN)
ISORT = shutil.which("isort") or shutil.which("isort", path=BIN)

ENV = textwrap.dedent("""\
    import torch


    def is_rocm():
        \"\"\"True on a ROCm build of torch.\"\"\"
        return getattr(torch.version, "hip", None) is not None


    def helper(model):
        return model
    """)

HAZARD = 'torch.compile(model, mode="reduce-overhead")'


def _write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _fix(root: Path, only=None) -> dict:
    """``rocmport fix --write`` over the tree (or only the files ``only`` names): what changed."""
    files = sorted(str(p) for p in root.rglob("*.py")) if only is None else [str(root / n) for n in only]
    changed = {}
    for report in check_files(files, Settings(), jobs=1, fix=True):
        assert report.internal_error is None, report.internal_error
        if report.fixed is not None and report.fixed != report.original:
            Path(report.path).write_bytes(report.fixed)
            changed[Path(report.path).relative_to(root).as_posix()] = report.fixed.decode()
    return changed


def _package(tmp_path: Path, model: str, env: str = ENV) -> Path:
    return _write(tmp_path, {"app/__init__.py": "", "app/env.py": env, "app/model.py": model})


@pytest.mark.parametrize("imports, gate", [
    ("from app.env import is_rocm", "is_rocm()"),            # the test itself is imported
    ("from app.env import is_rocm as on_amd", "on_amd()"),
    ("from . import env", "env.is_rocm()"),                  # its module is imported
    ("from app import env", "env.is_rocm()"),
    ("import app.env as platform", "platform.is_rocm()"),
    ("import app.env", "app.env.is_rocm()"),
])
def test_a_test_the_file_already_imports_costs_no_line(tmp_path, imports, gate):
    root = _package(tmp_path, f"""\
        import torch

        {imports}


        def build(model):
            return {HAZARD}
        """)
    before = (root / "app/model.py").read_text()
    changed = _fix(root)
    assert list(changed) == ["app/model.py"]
    after = changed["app/model.py"]
    assert after == before.replace('mode="reduce-overhead"', f'mode="default" if {gate} else "reduce-overhead"')
    assert _fix(root) == {}  # a second run changes nothing


def test_a_re_exported_test_is_followed_to_its_definition(tmp_path):
    root = _write(tmp_path, {
        "app/__init__.py": "from .env import is_rocm\n",
        "app/env.py": ENV,
        "app/model.py": f"import torch\n\nfrom app import is_rocm\n\n\ndef build(model):\n    return {HAZARD}\n",
    })
    assert 'if is_rocm() else "reduce-overhead"' in _fix(root)["app/model.py"]


@pytest.mark.parametrize("line, added", [
    ("from app.env import helper", "from app.env import helper, is_rocm"),
    ("from .env import helper", "from .env import helper, is_rocm"),
    ("from .env import Helper, helper", "from .env import Helper, helper, is_rocm"),
])
def test_a_name_added_to_the_files_own_import_of_the_module(tmp_path, line, added):
    env = ENV + "\n\nclass Helper:\n    pass\n"
    root = _package(tmp_path, f"import torch\n\n{line}\n\n\ndef build(model):\n    return helper({HAZARD})\n", env)
    after = _fix(root)["app/model.py"]
    assert f"\n{added}\n" in after and 'if is_rocm() else "reduce-overhead"' in after
    assert "getattr(torch.version" not in after  # no second, generated test
    assert _fix(root) == {}


def test_constants_sort_first_as_isort_orders_them(tmp_path):
    env = "import torch\n\nIS_HIP = torch.version.hip is not None\n\n\ndef helper(m):\n    return m\n"
    root = _package(tmp_path, f"import torch\n\nfrom .env import helper\n\n\ndef build(model):\n    return helper({HAZARD})\n", env)
    after = _fix(root)["app/model.py"]
    assert "\nfrom .env import IS_HIP, helper\n" in after and 'if IS_HIP else "reduce-overhead"' in after


def test_a_parenthesised_import_gets_a_line_of_its_own(tmp_path):
    root = _package(tmp_path, f"""\
        import torch

        from app.env import (
            helper,
        )


        def build(model):
            return helper({HAZARD})
        """)
    after = _fix(root)["app/model.py"]
    assert "from app.env import (\n    helper,\n    is_rocm,\n)\n" in after


@pytest.mark.skipif(RUFF is None or ISORT is None, reason="ruff and isort are installed by the test extra")
def test_ruff_isort_and_black_style_leave_the_result_alone(tmp_path):
    root = _package(tmp_path, f"""\
        import os

        import torch

        from app.env import helper
        from app.other import thing


        def build(model):
            return helper({HAZARD}), os, thing
        """)
    _write(root, {"app/other.py": "thing = 1\n", "pyproject.toml": "[tool.isort]\nprofile = \"black\"\n"
                  "known_first_party = [\"app\"]\n\n[tool.ruff.lint]\nselect = [\"E\", \"F\", \"I\"]\n",
                  "app/sub/__init__.py": "",
                  "app/sub/user.py": f"import torch\n\nfrom app.other import thing\n\nfrom ..other import thing as t\n\n\n"
                                     f"def build(model):\n    return {HAZARD}, thing, t\n"})
    changed = _fix(root)
    assert "from app.env import helper, is_rocm\n" in changed["app/model.py"]
    assert "from app.env import is_rocm\nfrom app.other import thing\n" in changed["app/sub/user.py"]
    for cmd in ([RUFF, "check", "app"], [RUFF, "format", "--check", "app"], [ISORT, "--check-only", "--diff", "app"]):
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
        assert proc.returncode == 0, (cmd, proc.stdout, proc.stderr)


@pytest.mark.parametrize("path, imports, added", [
    ("app/model.py", "from app.aaa import thing\nfrom app.zzz import other", "from app.env import is_rocm\n"),
    ("app/model.py", "from .aaa import thing", "from .env import is_rocm\n"),
    ("app/sub/deep.py", "from ..aaa import thing", "from ..env import is_rocm\n"),
    ("app/sub/deep.py", "from app.aaa import thing", "from app.env import is_rocm\n"),
])
def test_a_test_in_another_module_of_the_package_is_imported_where_isort_puts_it(tmp_path, path, imports, added):
    _write(tmp_path, {"app/__init__.py": "", "app/env.py": ENV, "app/aaa.py": "thing = 1\n", "app/zzz.py": "other = 1\n",
                      "app/sub/__init__.py": "", path: f"import os\n\nimport torch\n\n{imports}\n\n\n"
                                                        f"def build(model):\n    return {HAZARD}, os, thing\n"})
    after = _fix(tmp_path)[path]
    first = imports.splitlines()[0]
    assert f"{first}\n{added}" in after and 'if is_rocm() else "reduce-overhead"' in after
    assert "getattr(torch.version" not in after
    assert _fix(tmp_path) == {}


def test_a_module_that_would_import_the_file_back_is_not_used(tmp_path):
    """``app.env`` imports ``app.model``: importing it from ``app.model`` would be a cycle."""
    _write(tmp_path, {"app/__init__.py": "", "app/env.py": ENV + "\nfrom app import model  # noqa: E402\n",
                      "app/aaa.py": "thing = 1\n",
                      "app/model.py": f"import torch\n\nfrom app.aaa import thing\n\n\ndef build(model):\n"
                                      f"    return {HAZARD}, thing\n"})
    after = _fix(tmp_path)["app/model.py"]
    assert "from app.env" not in after and GATE_LINE in after


def test_a_test_added_later_changes_the_cached_answer_too(tmp_path):
    """The files that looked for the package's tests depend on them: with the cache or
    without, a test added to a module of the package gives the same fix."""
    _write(tmp_path, {"app/__init__.py": "", "app/aaa.py": "thing = 1\n",
                      "app/model.py": f"import torch\n\nfrom app.aaa import thing\n\n\ndef build(model):\n"
                                      f"    return {HAZARD}, thing\n"})
    env = dict(os.environ, ROCMPORT_CACHE_DIR=str(tmp_path / "cache"))

    def fixes(*flags):
        proc = subprocess.run([sys.executable, "-m", "rocmport", "lint", *flags, "--output-format", "json", "app"],
                              cwd=tmp_path, capture_output=True, text=True, env=env)
        return [e["content"] for f in json.loads(proc.stdout) for e in f["fix"]["edits"]]

    assert any("getattr(torch.version" in c for c in fixes())
    _write(tmp_path, {"app/env.py": ENV})
    assert fixes() == fixes("--no-cache")
    assert "from app.env import is_rocm\n" in fixes()


# -- near misses: the file's own gate line -------------------------------------------------

GATE_LINE = 'is_rocm = getattr(torch.version, "hip", None) is not None'


@pytest.mark.parametrize("name, env, model", [
    ("a file that imports nothing of the project",
     ENV, f"import torch\n\n\ndef build(model):\n    return {HAZARD}\n"),
    ("a private test",
     ENV.replace("def is_rocm", "def _is_rocm"), f"import torch\n\nfrom app.env import helper\n\n\ndef build(model):\n    return helper({HAZARD})\n"),
    ("a test that takes arguments",
     ENV.replace("def is_rocm()", "def is_rocm(x=None)"), f"import torch\n\nfrom app import env\n\n\ndef build(model):\n    return {HAZARD}, env\n"),
    ("a CUDA test, not a ROCm one",
     ENV.replace('getattr(torch.version, "hip", None)', "torch.version.cuda"),
     f"import torch\n\nfrom app import env\n\n\ndef build(model):\n    return {HAZARD}, env\n"),
    ("an import list not in isort's order",
     ENV + "\n\ndef zeta(m):\n    return m\n", f"import torch\n\nfrom app.env import zeta, helper\n\n\ndef build(model):\n    return zeta(helper({HAZARD}))\n"),
    ("a fix above the import that binds the test",
     ENV, f"import torch\n\nMODEL = {HAZARD.replace('model', 'torch.nn.Linear(1, 1)')}\n\nfrom app import env  # noqa: E402\n"),
])
def test_near_misses_get_the_files_own_gate_line(tmp_path, name, env, model):
    root = _package(tmp_path, model, env)
    after = _fix(root)["app/model.py"]
    assert GATE_LINE in after, name
    assert _fix(root) == {}


def test_a_name_the_file_already_uses_is_not_imported_over_it(tmp_path):
    root = _package(tmp_path, f"import torch\n\nfrom app.env import helper\n\n\ndef build(model, is_rocm=False):\n"
                              f"    return helper({HAZARD}), is_rocm\n")
    after = _fix(root)["app/model.py"]
    assert "from app.env import helper\n" in after and "_rocmport_is_rocm = getattr" in after


def test_one_file_alone_has_no_project_to_look_in(tmp_path):
    """``rocmport fix app/model.py``: the index holds that file only; the gate line is the
    file's own (a later run over the whole project keeps it: a gate the file binds wins)."""
    root = _package(tmp_path, f"import torch\n\nfrom app.env import helper\n\n\ndef build(model):\n    return helper({HAZARD})\n")
    assert GATE_LINE in _fix(root, only=["app/model.py"])["app/model.py"]
    assert _fix(root) == {}


def test_the_json_fix_carries_the_import_edit(tmp_path):
    root = _package(tmp_path, f"import torch\n\nfrom app.env import helper\n\n\ndef build(model):\n    return helper({HAZARD})\n")
    proc = subprocess.run([sys.executable, "-m", "rocmport", "lint", "--no-cache", "--output-format", "json", "app"],
                          cwd=root, capture_output=True, text=True)
    findings = [f for f in json.loads(proc.stdout) if f["code"] == "ROC101"]
    assert len(findings) == 1
    contents = [e["content"] for e in findings[0]["fix"]["edits"]]
    assert ", is_rocm" in contents and '"default" if is_rocm() else "reduce-overhead"' in contents


# -- the fixed package runs the same on NVIDIA, without CUDA graphs on ROCm ----------------

@pytest.mark.slow
@pytest.mark.parametrize("imports", ["from app.env import helper", "from . import env", "import app.env as platform"])
def test_the_fixed_package_runs_the_same_on_the_nvidia_path(tmp_path, imports):
    root = _package(tmp_path, f"""\
        import torch

        {imports}


        def build(model):
            return torch.compile(model, mode="reduce-overhead")
        """)
    _fix(root)
    driver = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(root)!r})
        import torch
        seen = []
        torch.compile = lambda model=None, **kw: seen.append(kw)
        from app.model import build
        build(None)
        """)
    assert run_module(driver, rocm=False, probe="seen") == [{"mode": "reduce-overhead"}]
    assert run_module(driver, rocm=True, probe="seen") == [{"mode": "default"}]


@pytest.mark.parametrize("config", [
    "[tool.ruff.lint.isort]\nforce-single-line = true\n",
    "[tool.isort]\nforce_single_line = true\n",
    "",  # no configuration: the file's own two one-name imports of one module say it
])
def test_force_single_line_gets_a_line_of_its_own(tmp_path, config):
    root = _package(tmp_path, f"import torch\n\nfrom app.env import Helper\nfrom app.env import helper\n"
                              f"from app.other import thing\n\n\ndef build(model):\n    return helper({HAZARD}), Helper, thing\n",
                    ENV + "\n\nclass Helper:\n    pass\n")
    _write(root, {"app/other.py": "thing = 1\n", "pyproject.toml": config})
    after = _fix(root)["app/model.py"]
    assert ("from app.env import Helper\nfrom app.env import helper\nfrom app.env import is_rocm\n"
            "from app.other import thing\n") in after
    if RUFF is not None:
        (root / "pyproject.toml").write_text("[tool.ruff.lint]\nselect = [\"I\"]\n\n[tool.ruff.lint.isort]\n"
                                             "force-single-line = true\n")
        proc = subprocess.run([RUFF, "check", "app"], cwd=root, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


def test_only_files_shaped_like_a_test_are_summarised_for_the_inventory(tmp_path, monkeypatch):
    """A warm run asks for the package's tests again; files that only mention "hip" (hipify
    tables, docs) are read and dropped, not parsed (torch's warm lint took 5 s without this)."""
    import rocmport.analysis.index as module
    from rocmport.analysis.index import ProjectIndex

    _write(tmp_path, {"app/__init__.py": "", "app/env.py": ENV,
                      "app/hipify.py": 'TABLE = {"cuda": "hip"}\nNOTE = "torch.version.hip is not None"\n',
                      "app/model.py": "import torch\n"})
    parsed = []
    real = module._summarise
    monkeypatch.setattr(module, "_summarise", lambda i, s, t, **kw: (parsed.append(s.name), real(i, s, t, **kw)))
    index = ProjectIndex(sorted(str(p) for p in tmp_path.rglob("*.py")))
    assert index.rocm_tests_in("app") == [("app.env", "is_rocm", "function")]
    assert parsed == ["app.env"]


def test_import_cycles_are_found_through_everything_module_level_code_runs(tmp_path):
    """``reuse.reaches`` follows every import that importing a module runs: in branches and
    class bodies too, not in function bodies; a module-level call of the module's own code,
    ``importlib`` or ``exec`` counts as reaching anything; a package above the fixed file is
    followed only when its names are read (it may be half-imported then)."""
    from rocmport import reuse
    from rocmport.analysis.index import ProjectIndex

    _write(tmp_path, {
        "app/__init__.py": "from app.target import thing\n\nhelper = 1\n", "app/target.py": "thing = 1\n",
        "app/z.py": "", "app/head.py": "import app.target\n\n\ndef f():\n    pass\n",
        "app/a.py": "import app.b\n", "app/b.py": '"""Usage:\ndef not_code():\n"""\nimport app.c\n',
        "app/c.py": "def g():\n    import app.z\n\n\nimport app.target  # noqa: E402\n",
        "app/lonely.py": "def h():\n    import app.target\n",
        "app/klass.py": "class Registry:\n    from app import target\n",
        "app/called.py": "def _load():\n    import app.z\n\n\n_load()\n",
        "app/dynamic.py": "import importlib\n\nimportlib.import_module('app.z')\n",
        "app/named.py": "from app import helper\n", "app/sibling.py": "from app import z\n",
        "app/branch.py": "import sys\n\nif sys.platform == 'linux':\n    try:\n        import app.target\n"
                         "    except ImportError:\n        pass\n",
    })
    index = ProjectIndex(sorted(str(p) for p in tmp_path.rglob("*.py")))
    target = "app.target"
    assert reuse.reaches(index, ["app.head"], target) and reuse.reaches(index, ["app.a"], target)
    assert not reuse.reaches(index, ["app.lonely"], target) and not reuse.reaches(index, ["app.a"], "app.z")
    assert reuse.reaches(index, ["app.klass"], target) and reuse.reaches(index, ["app.branch"], target)
    assert reuse.reaches(index, ["app.called"], "app.lonely") and reuse.reaches(index, ["app.dynamic"], "app.lonely")
    # ``from app import helper`` reads the package, whose __init__ imports the target;
    # ``from app import z`` only imports a module beside it
    assert reuse.reaches(index, ["app.named"], target) and not reuse.reaches(index, ["app.sibling"], target)


# -- reuse only what is proved safe: fixed projects imported and run (issue 31) ------------

MODEL = f"import torch\n\n{{imports}}\n\n\ndef build(model{{params}}):\n    return {HAZARD}{{uses}}\n"
RUN_BUILD = "import app.model as m\nOUT = [m.build(None)]\n"

# name: (files, driver code that sets OUT, reused): each project imports and runs the same on
# NVIDIA before and after the fix, and with CUDA graphs off on ROCm after it.
ATTACKS = {
    "the parent package's __init__ imports the fixed file; the test's module reads the package": ({
        "app/__init__.py": "from app.model import build\n\nVERSION = 1\n",
        "app/env.py": "from app import VERSION\n\n" + ENV,
        "app/aaa.py": "thing = 1\n",
        "app/model.py": MODEL.format(imports="from app.aaa import thing", params="", uses=", thing"),
    }, "import app\nOUT = [app.build(None)[1]]\n", False),
    "a module-level call in the test's module imports the fixed file back": ({
        "app/__init__.py": "",
        "app/env.py": ENV + "\n\ndef _register():\n    from app.model import build\n    return build\n\n\n_register()\n",
        "app/aaa.py": "thing = 1\n",
        "app/model.py": MODEL.format(imports="from app.aaa import thing", params="", uses=", thing"),
    }, RUN_BUILD, False),
    "a class-body import in the test's module imports the fixed file back": ({
        "app/__init__.py": "",
        "app/env.py": ENV + "\n\nclass Registry:\n    from app.model import build\n",
        "app/aaa.py": "thing = 1\n",
        "app/model.py": MODEL.format(imports="from app.aaa import thing", params="", uses=", thing"),
    }, RUN_BUILD, False),
    "importlib in the test's module imports the fixed file back": ({
        "app/__init__.py": "",
        "app/env.py": "import importlib\n\nBUILD = importlib.import_module('app.model').build\n\n" + ENV,
        "app/aaa.py": "thing = 1\n",
        "app/model.py": MODEL.format(imports="from app.aaa import thing", params="", uses=", thing"),
    }, RUN_BUILD, False),
    "a project module named like the standard library's": ({
        "platform.py": ENV,
        "train.py": "import platform\n\nimport torch\n\n\ndef build(model):\n"
                    f"    return {HAZARD}, platform.system()\n",
    }, "import platform, train\nOUT = [train.build(None)[1] == platform.system()]\n", False),
    "the imported test shadowed by a parameter": ({
        "app/__init__.py": "", "app/env.py": ENV,
        "app/model.py": MODEL.format(imports="from app.env import is_rocm", params=", is_rocm=False",
                                     uses=", is_rocm"),
    }, RUN_BUILD, False),
    "the imported module shadowed by a loop variable": ({
        "app/__init__.py": "", "app/env.py": ENV,
        "app/model.py": "import torch\n\nfrom app import env\n\n\ndef build(model):\n    for env in [1]:\n"
                        f"        return {HAZARD}, env\n",
    }, RUN_BUILD, False),
    "a star import that rebinds the name": ({
        "app/__init__.py": "", "app/env.py": ENV, "app/other.py": "is_rocm = 'not a function'\n",
        "app/model.py": MODEL.format(imports="from app.env import is_rocm\nfrom app.other import *", params="",
                                     uses=", is_rocm"),
    }, RUN_BUILD, False),
    "the test rebound after its def": ({
        "app/__init__.py": "", "app/env.py": ENV + "\n\nis_rocm = is_rocm()\n",
        "app/model.py": MODEL.format(imports="from app import env", params="", uses=", env"),
    }, RUN_BUILD, False),
    "a test decorated as a pytest fixture": ({
        "app/__init__.py": "", "app/env.py": "import pytest\n\n" + ENV.replace("def is_rocm", "@pytest.fixture\ndef is_rocm"),
        "app/model.py": MODEL.format(imports="from app import env", params="", uses=", env"),
    }, RUN_BUILD, False),
    "a test decorated as deprecated": ({
        "app/__init__.py": "",
        "app/env.py": "import warnings\n\n\ndef deprecated(fn):\n    def wrapper():\n"
                      "        raise RuntimeError('is_rocm is deprecated')\n    return wrapper\n\n\n"
                      + ENV.replace("import torch\n", "import torch  # noqa: E402\n").replace("def is_rocm", "@deprecated\ndef is_rocm"),
        "app/model.py": MODEL.format(imports="from app.env import helper", params="", uses=", helper(1)"),
    }, RUN_BUILD, False),
    "a newly imported module with an import-time side effect": ({
        "app/__init__.py": "", "app/env.py": "import os\n\n" + ENV + "\n\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n",
        "app/aaa.py": "thing = 1\n",
        "app/model.py": MODEL.format(imports="from app.aaa import thing", params="", uses=", thing"),
    }, RUN_BUILD, False),
    # the same shapes, proved safe: the test is reused
    "a newly imported module of definitions and a cached test": ({
        "app/__init__.py": "",
        "app/env.py": "import functools\nimport os\n\nimport torch\n\nDEBUG = os.environ.get('APP_DEBUG')\n\n\n"
                      "@functools.lru_cache(maxsize=None)\ndef is_rocm():\n"
                      "    return getattr(torch.version, 'hip', None) is not None\n",
        "app/aaa.py": "thing = 1\n",
        "app/model.py": MODEL.format(imports="from app.aaa import thing", params="", uses=", thing"),
    }, RUN_BUILD, True),
    "a parent __init__ that imports the fixed file, the test's module reading nothing of it": ({
        "app/__init__.py": "from app.model import build\n", "app/env.py": ENV, "app/aaa.py": "thing = 1\n",
        "app/model.py": MODEL.format(imports="from app.aaa import thing", params="", uses=", thing"),
    }, "import app\nOUT = [app.build(None)[1]]\n", True),
}

PROBE = "{'seen': seen, 'out': repr(OUT), 'cvd': os.environ.get('CUDA_VISIBLE_DEVICES')}"


def _run_project(root: Path, driver: str, rocm: bool):
    code = (f"import os, sys\nsys.path.insert(0, {str(root)!r})\nos.environ.pop('CUDA_VISIBLE_DEVICES', None)\n"
            "import torch\nseen = []\ntorch.compile = lambda model=None, **kw: seen.append(kw) or model\n" + driver)
    return run_module(code, rocm=rocm, probe=PROBE)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_reused_test_is_proved_safe_by_running_the_fixed_project(tmp_path, name):
    files, driver, reused = ATTACKS[name]
    root = _write(tmp_path / "project", files)
    before = _run_project(root, driver, rocm=False)
    assert before["seen"] == [{"mode": "reduce-overhead"}]
    fixed_file = "train.py" if "train.py" in files else "app/model.py"
    changed = _fix(root)
    assert list(changed) == [fixed_file]
    assert (GATE_LINE not in changed[fixed_file]) == reused, changed[fixed_file]
    assert _run_project(root, driver, rocm=False) == before  # the NVIDIA path as before
    after = _run_project(root, driver, rocm=True)
    assert after["seen"] == [{"mode": "default"}] and after["cvd"] == before["cvd"]


def test_a_side_effect_added_later_changes_the_cached_answer_too(tmp_path):
    """The proof reads whole modules, not only their summaries: a line that sets the
    environment on import, added to the test's module, changes the cached fix as well."""
    _write(tmp_path, {"app/__init__.py": "", "app/aaa.py": "thing = 1\n", "app/env.py": ENV,
                      "app/model.py": f"import torch\n\nfrom app.aaa import thing\n\n\ndef build(model):\n"
                                      f"    return {HAZARD}, thing\n"})
    env = dict(os.environ, ROCMPORT_CACHE_DIR=str(tmp_path / "cache"))

    def fixes(*flags):
        proc = subprocess.run([sys.executable, "-m", "rocmport", "lint", *flags, "--output-format", "json", "app"],
                              cwd=tmp_path, capture_output=True, text=True, env=env)
        return [e["content"] for f in json.loads(proc.stdout) for e in f["fix"]["edits"]]

    assert "from app.env import is_rocm\n" in fixes()
    _write(tmp_path, {"app/env.py": ENV + "\n\ntorch.backends.cudnn.benchmark = True\n"})  # the same summary
    assert fixes() == fixes("--no-cache")
    assert any("getattr(torch.version" in c for c in fixes())
