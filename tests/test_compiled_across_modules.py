"""Issue 27 section 5 across modules: code compiled by a project decorator or helper declared in
another module (found through the project index), calls that Dynamo cannot trace reached from
it (ROC405), device queries that run at import (ROC712), the cache key that follows the
helpers, and the Dynamo behaviour ROC405's documentation states, run on torch."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocmport.analysis.effects import ModuleFacts
from rocmport.analysis.index import ProjectIndex
from rocmport.cache import Cache
from rocmport.config import Settings
from rocmport.runner import check_files

from .harness import lint

PROJECT = Path(__file__).parent / "fixtures" / "project" / "accel"
EXPECTED = [
    ("accel/config.py", 3, "ROC712"),  # MAJOR, _ = get_device_capability(): platform.py's wrapper queries
    ("accel/launcher.py", 16, "ROC712"),  # device_count() before CUDA_VISIBLE_DEVICES is set
    ("accel/models.py", 10, "ROC405"),  # @support_compile forward -> gpu_arch() -> subprocess
    ("accel/models.py", 18, "ROC402"),  # @compile_forward(...) forward: print
    ("accel/models.py", 24, "ROC401"),  # maybe_compile(Head()): .item()
]


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(PROJECT, tmp_path / "accel")
    return tmp_path


def _files(root: Path):
    return sorted(str(p) for p in root.rglob("*.py"))


def _found(root: Path, cache=None):
    reports = check_files(_files(root), Settings(), jobs=1, cache=cache)
    return sorted((Path(r.path).relative_to(root).as_posix(), f.start.row, f.code) for r in reports for f in r.findings)


def _write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _facts(path: Path, name: str) -> ModuleFacts:
    return ModuleFacts(name, ast.parse(path.read_text()), lambda module, level: None)


# -- what the index learns from one module ------------------------------------------------

def test_each_shape_of_a_compiler_is_known():
    facts = _facts(PROJECT / "compiling.py", "accel.compiling")
    assert facts.compilers() == {
        "support_compile": "call",  # cls.forward = torch.compile(cls.forward)
        "compile_forward": "factory",  # returns a decorator that installs a compiling __init__
        "maybe_compile": "call",  # model.forward = torch.compile(model.forward), under a flag
        "CompiledWrapper": "call",  # a wrapper module whose __init__ compiles its argument
        "fullgraph_compile": "call",  # functools.partial(torch.compile, ...)
    }  # and not `register`, a decorator that compiles nothing


def test_effects_of_each_helper():
    facts = _facts(PROJECT / "platform.py", "accel.platform")
    arch = facts.effects("gpu_arch")
    assert (arch.untraceable.what, arch.untraceable.kind, arch.untraceable.line, arch.cached) == (
        "subprocess.check_output", "subprocess", 9, True)
    props = facts.effects("arch_from_props")  # get_device_properties: Dynamo folds it, but it initialises
    assert props.untraceable is None and props.query.what == "torch.cuda.get_device_properties"
    assert facts.effects("get_device_capability").query.what == "torch.cuda.get_device_capability"
    assert not facts.effects("lazy_major")  # asks only a runtime already up


# -- findings across modules ----------------------------------------------------------------

def test_findings_one_module_away(tmp_path):
    assert _found(_copy(tmp_path)) == EXPECTED


def test_messages_name_the_helper_its_module_and_line(tmp_path):
    root = _copy(tmp_path)
    reports = {Path(r.path).name: r for r in check_files(_files(root), Settings(), jobs=1)}
    [roc405] = [f for f in reports["models.py"].findings if f.code == "ROC405"]
    assert roc405.message.startswith("`gpu_arch()` calls `subprocess.check_output()` at line 9 of `accel.platform`,"
                                     " a process call, which Dynamo cannot trace (its `functools` cache does not"
                                     " help: Dynamo traces the cached function's body): the graph breaks inside"
                                     " `Attention.forward`, compiled at line 7")
    [roc712] = reports["config.py"].findings
    assert roc712.message.startswith("`get_device_capability()` runs when this module is imported and calls"
                                     " `torch.cuda.get_device_capability()` (line 20 of `accel.platform`)")


def test_a_file_linted_alone_knows_no_other_module(tmp_path):
    root = _copy(tmp_path)
    models = root / "accel" / "models.py"
    assert [f.code for f in lint(models.read_bytes(), path=str(models))] == []
    config = root / "accel" / "config.py"
    assert [f.code for f in lint(config.read_bytes(), path=str(config))] == []


def test_re_exports_and_delegating_helpers(tmp_path):
    root = _write(tmp_path, {
        "pkg/__init__.py": "from .compiling import compiled_forward\nfrom .arch import current_arch\n",
        "pkg/compiling.py": """\
            import torch

            def _compile(fn):
                return torch.compile(fn, fullgraph=True)

            def compiled_forward(cls):
                cls.forward = _compile(cls.forward)
                return cls
            """,
        "pkg/arch.py": """\
            import ctypes

            _hip = ctypes.CDLL("libamdhip64.so")

            def current_arch():
                return _hip.hipGetDevice()
            """,
        "pkg/model.py": """\
            import torch
            from pkg import current_arch, compiled_forward

            @compiled_forward
            class Net(torch.nn.Module):
                def forward(self, x):
                    return x * current_arch()
            """,
    })
    assert _found(root) == [("pkg/model.py", 7, "ROC405")]


def test_near_misses_across_modules(tmp_path):
    root = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/util.py": """\
            import ctypes
            import functools
            import subprocess

            import torch

            def not_a_compiler(fn):
                fn.tagged = True
                return fn

            @torch.compiler.disable
            def eager_probe():
                return subprocess.run(["rocminfo"])

            @functools.cache
            def arch():
                return torch.cuda.get_device_properties(0).gcnArchName

            def lazy_capability():
                return torch.cuda.get_device_capability()

            def nvml_count():
                if torch.version.hip is None:  # NVML only where there is NVIDIA's driver
                    return ctypes.CDLL("libnvidia-ml.so.1").nvmlDeviceGetCount_v2(None)
                return 0
            """,
        "pkg/model.py": """\
            import subprocess
            import torch
            from pkg.util import arch, eager_probe, lazy_capability, not_a_compiler, nvml_count

            @not_a_compiler
            def plain(x):
                return subprocess.run(["rocminfo"])

            @torch.compile
            def step(x):
                eager_probe()  # an eager island: no untraceable call inside the compiled code
                x = x / max(nvml_count(), 1)  # NVML: only on the CUDA path
                return x * 2 if arch() == "gfx950" else x

            def tiles():
                return 128 if lazy_capability() >= (9, 0) else 64  # lazy: not at import
            """,
    })
    assert _found(root) == []


def test_accelerator_queries_one_module_away(tmp_path):
    """A helper of another module that asks the object of the project's accelerator factory
    (DeepSpeed's ``get_accelerator()``, here the project's own ``accelerator`` package) for a
    device query: the index reads that module for the factory's name alone (``limits.py``
    spells no torch query), and a method that queries nothing is no query."""
    root = _write(tmp_path, {
        "proj/__init__.py": "",
        "proj/accelerator/__init__.py": "from .real_accelerator import get_accelerator\n",
        "proj/accelerator/real_accelerator.py": """\
            _accelerator = None

            def get_accelerator():
                return _accelerator
            """,
        "proj/limits.py": """\
            from proj.accelerator import get_accelerator

            def budget():
                return get_accelerator().total_memory() // 2

            def backend():
                return get_accelerator().communication_backend_name()
            """,
        "proj/devices.py": """\
            def current_device():
                return "cuda"
            """,
        "proj/config.py": """\
            from proj.devices import current_device
            from proj.limits import backend, budget

            DEVICE = current_device()
            BACKEND = backend()
            LIMIT = budget()
            """,
    })
    reports = {Path(r.path).name: r for r in check_files(_files(root), Settings(), jobs=1)}
    assert _found(root) == [("proj/config.py", 6, "ROC712")]
    [roc712] = reports["config.py"].findings
    assert roc712.message.startswith("`budget()` runs when this module is imported and calls"
                                     " `get_accelerator().total_memory()` (line 4 of `proj.limits`)")


def test_a_helper_of_another_module_is_followed_where_the_code_spells_its_kind(tmp_path):
    """Another module's helper is looked for where a name of the file spells ``compile`` (the
    graph-break rules) or a query's name (ROC712), as ``NEEDS`` declares: a comment or a
    string that does is not enough, so a differently named helper is not followed there."""
    util = """\
        import subprocess
        import torch

        def jit(fn):
            return torch.compile(fn)

        def compile_it(fn):
            return torch.compile(fn)

        def probe():
            return subprocess.run(["rocminfo"])

        def setup():
            return torch.cuda.get_device_capability()
        """
    quiet = _write(tmp_path / "a", {
        "pkg/__init__.py": "",
        "pkg/util.py": util,
        "pkg/model.py": """\
            import torch
            from pkg.util import jit, probe

            @jit  # compiles (a comment does not count)
            def step(x):
                probe()
                return x
            """,
        "pkg/config.py": """\
            from pkg.util import setup

            CAP = setup()  # get_device_capability, through a helper
            """,
    })
    assert _found(quiet) == []
    spelled = _write(tmp_path / "b", {
        "pkg/__init__.py": "",
        "pkg/util.py": util,
        "pkg/model.py": """\
            import torch
            from pkg.util import compile_it, probe

            @compile_it
            def step(x):
                probe()
                return x
            """,
    })
    assert _found(spelled) == [("pkg/model.py", 6, "ROC405")]


# -- the cache key follows the helpers -------------------------------------------------------

def test_changing_a_helper_re_lints_its_callers(tmp_path):
    root = _copy(tmp_path)
    cache = Cache(tmp_path / "cache", Settings())
    assert _found(root, cache) == EXPECTED
    assert _found(root, cache) == EXPECTED  # warm
    platform = root / "accel" / "platform.py"
    text = platform.read_text()
    platform.write_text(text.replace('out = subprocess.check_output(["rocm_agent_enumerator"])',
                                     'out = b"gfx942"'))
    assert ("accel/models.py", 10, "ROC405") not in _found(root, cache)
    platform.write_text(platform.read_text().replace("return torch.cuda.get_device_capability()\n\n\ndef lazy",
                                                     "return (9, 4)\n\n\ndef lazy"))
    assert ("accel/config.py", 3, "ROC712") not in _found(root, cache)


def test_a_count_after_an_import_that_brought_hip_up_follows_that_module(tmp_path):
    """`from .cext import lib` whose import queries the capability (bitsandbytes'
    `functional.py`): a later `device_count()` at import adds nothing (reported at the query).
    When the imported module stops querying at its import, a cached run reports the count."""
    root = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/specs.py": """\
            import torch


            def get_device_capability():
                return torch.cuda.get_device_capability()
            """,
        "pkg/cext.py": """\
            from .specs import get_device_capability

            lib = get_device_capability()
            """,
        "pkg/functional.py": """\
            import torch

            from .cext import lib

            N_GPUS = torch.cuda.device_count()
            """,
    })
    cache = Cache(tmp_path / "cache", Settings())
    assert _found(root, cache) == [("pkg/cext.py", 3, "ROC712")]
    assert _found(root, cache) == [("pkg/cext.py", 3, "ROC712")]  # warm
    index = ProjectIndex(_files(root))
    index.start_recording()
    assert index.effects("pkg.cext.<import>").query.what == "torch.cuda.get_device_capability"
    assert "<calls>:pkg.cext|<import>" in index.stop_recording()
    cext = root / "pkg" / "cext.py"
    cext.write_text(cext.read_text().replace("lib = get_device_capability()", "lib = None"))
    assert _found(root, cache) == [("pkg/functional.py", 5, "ROC712")]


def test_the_index_records_the_modules_it_read(tmp_path):
    root = _copy(tmp_path)
    index = ProjectIndex(_files(root))
    index.start_recording()
    assert index.effects("accel.platform.gpu_arch").untraceable is not None
    recorded = index.stop_recording()
    assert "<calls>:accel.platform|gpu_arch" in recorded


# -- what Dynamo does with each call ROC405 names (torch 2.13, CPU) ---------------------------

_DYNAMO = r"""
import ctypes, functools, subprocess, warnings
import torch, torch._dynamo
warnings.filterwarnings("ignore")
libc = ctypes.CDLL(None)
getpid = libc.getpid

@functools.lru_cache
def count():
    return torch.cuda.device_count()

count()  # the cache is warm: Dynamo traces the body anyway

def helper(n):
    return n + 1

CASES = {
    "subprocess": lambda x: (subprocess.run(["true"]), x + 1)[1],
    "ctypes": lambda x: (getpid(), x + 1)[1],
    "device_count": lambda x: x / max(torch.cuda.device_count(), 1),
    "cached device_count": lambda x: x / max(count(), 1),
    "plain helper": lambda x: x * helper(1),
    "is_available": lambda x: x * 2 if torch.cuda.is_available() else x,
}
for name, fn in CASES.items():
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(torch.ones(2))
        print(name, "traced")
    except torch._dynamo.exc.Unsupported:
        print(name, "Unsupported")
"""


@pytest.mark.slow
def test_dynamo_cannot_trace_what_roc405_reports():
    out = subprocess.run([sys.executable, "-c", _DYNAMO], capture_output=True, text=True, timeout=600)
    assert dict(line.rsplit(" ", 1) for line in out.stdout.splitlines()) == {
        "subprocess": "Unsupported", "ctypes": "Unsupported", "device_count": "Unsupported",
        "cached device_count": "Unsupported", "plain helper": "traced", "is_available": "traced",
    }, out.stderr[-2000:]
