"""The project index (rocmport.analysis.index) and the ROC1xx rules that consult it: hazards one
call or one module away, multi-module fixtures with near misses, execution proofs of the
fixed packages on both paths, and the cache key that follows the summaries of imports."""

from __future__ import annotations

import ast
import shutil
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from rocmport.analysis.index import ProjectIndex, means_rocm_build
from rocmport.analysis.resolve import means_rocm_build as cst_means_rocm_build
from rocmport.cache import Cache
from rocmport.config import Settings
from rocmport.runner import check_files

from .harness import codes
from .torch_runner import run_file

PROJECT = Path(__file__).parent / "fixtures" / "project"


def _files(root: Path):
    return sorted(str(p) for p in root.rglob("*.py"))


def _lint(root: Path, fix: bool = False):
    return {Path(r.path).relative_to(root).as_posix(): r for r in check_files(_files(root), Settings(), jobs=1, fix=fix)}


def _found(root: Path):
    return sorted((name, f.start.row, f.code) for name, r in _lint(root).items() for f in r.findings)


def _apply_fix(root: Path) -> None:
    """``rocmport fix --write`` on the tree: the fixed files and the generated prelude module."""
    for path, report in _lint(root, fix=True).items():
        if report.fixed is not None:
            (root / path).write_bytes(report.fixed)
        for extra, data in report.extra_files.items():
            Path(extra).write_bytes(data)


def _write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


# -- the index ------------------------------------------------------------------------------

def test_module_names_packages_and_namespace_packages(tmp_path):
    _write(tmp_path, {"src/pkg/__init__.py": "", "src/pkg/a.py": "", "src/pkg/sub/__init__.py": "",
                      "src/pkg/sub/b.py": "", "src/ns/inner/__init__.py": "", "src/ns/inner/c.py": "",
                      "src/script.py": ""})
    index = ProjectIndex(_files(tmp_path))
    assert index.module_name(str(tmp_path / "src/pkg/a.py")) == "pkg.a"
    assert index.module_name(str(tmp_path / "src/pkg/sub/__init__.py")) == "pkg.sub"
    assert index.module_name(str(tmp_path / "src/pkg/sub/b.py")) == "pkg.sub.b"
    assert index.module_name(str(tmp_path / "src/script.py")) == "script"
    # ns/ has no __init__.py: a namespace package, found by its longer name too
    assert index.path_of("ns.inner.c") == str(tmp_path / "src/ns/inner/c.py")
    assert index.path_of("inner.c") == str(tmp_path / "src/ns/inner/c.py")
    assert index.module_name(str(tmp_path / "elsewhere.py")) is None
    # relative imports, seen from a module and from a package
    assert index.absolute("pkg.sub.b", "x", 1) == "pkg.sub.x"
    assert index.absolute("pkg.sub.b", None, 2) == "pkg"
    assert index.absolute("pkg.sub", "b", 1) == "pkg.sub.b"


def test_summaries_follow_wrappers_partials_and_re_exports():
    index = ProjectIndex(_files(PROJECT / "zoo"))
    wrap = index.function("zoo.compile_model")  # re-exported by the package
    assert wrap is not None and wrap.module == "zoo.compiling"
    assert wrap.flows == {"mode": "mode"} and wrap.kw_flows["options"] == "options"
    assert wrap.defaults["mode"] == "default"
    assert index.function("zoo.compiling.compile_with_kwargs").kw_flows == {"mode": "mode", "options": "options"}
    assert index.function("zoo.compiled").flows == {"mode": "mode"}  # through compile_model
    assert index.function("zoo.compiling.build_inductor_options").flows == {"use_cudagraphs": "cudagraphs"}
    assert index.function("zoo.compiling.compile_from_table").flows == {"table_mode": "mode"}
    assert index.function("zoo.fast_compile").kind == "partial"
    assert index.function("zoo.compiling.functools") is None


def test_summary_is_computed_once_and_unrelated_modules_are_not_parsed(tmp_path, monkeypatch):
    _write(tmp_path, {"p/__init__.py": "", "p/w.py": "import torch\ndef w(m, mode):\n    return torch.compile(m, mode=mode)\n",
                      "p/plain.py": "def helper(x):\n    return x\n"})
    index = ProjectIndex(_files(tmp_path))
    parsed = []
    import rocmport.analysis.index as module

    real = module._summarise
    monkeypatch.setattr(module, "_summarise", lambda i, s, t, **kw: (parsed.append(s.name), real(i, s, t, **kw)))
    assert index.function("p.w.w") is not None
    assert index.function("p.w.w") is not None
    assert index.lookup("p.plain", "helper") is None
    assert parsed == ["p.w"]  # once; p.plain holds none of the words a summary needs


def test_rocm_tests_of_the_project(tmp_path):
    _write(tmp_path, {"app/__init__.py": "", "app/env.py": """
        import torch
        IS_HIP = torch.version.hip is not None
        ON_AMD = bool(torch.version.hip)
        NOT_IT = torch.version.cuda is not None
        def is_rocm():
            \"\"\"ROCm build?\"\"\"
            return getattr(torch.version, "hip", None) is not None
        def uses_hip():
            return IS_HIP
        def takes_args(x):
            return torch.version.hip is not None
        """})
    index = ProjectIndex(_files(tmp_path))
    path = str(tmp_path / "app/env.py")
    assert sorted(index.rocm_tests()) == sorted([("app.env", "IS_HIP", "constant", path),
                                                 ("app.env", "ON_AMD", "constant", path),
                                                 ("app.env", "is_rocm", "function", path),
                                                 ("app.env", "uses_hip", "function", path)])


@pytest.mark.parametrize("expr", [
    "torch.version.hip is not None", "torch.version.hip != None", "bool(torch.version.hip)",
    'getattr(torch.version, "hip", None) is not None', "bool(getattr(torch.version, 'hip', None))",
    "torch.version.hip is None", "torch.version.hip", "torch.version.cuda is not None", "tv.hip is not None",
    'getattr(torch.version, "hip") is not None', "th.version.hip is not None", "bool(x)",
])
def test_rocm_build_test_means_what_the_engine_means(expr):
    names = {"torch"}
    assert means_rocm_build(ast.parse(expr, mode="eval").body, names) == cst_means_rocm_build(
        cst.parse_expression(expr), names)


# -- rules across modules -------------------------------------------------------------------

ZOO_FINDINGS = [
    # issue 29: the project's own wrapper maps the mode once, inside, for every caller that hands
    # it a CUDA-graph mode (models.py:15, :16 positional, :22 module.attribute, and `compiled`'s
    # closure with its "reduce-overhead" default and models.py:27's decorator factory)
    ("compiling.py", 10, "ROC104"),
    ("compiling.py", 29, "ROC104"),  # list_mode_options(table_mode): models.py:23
    ("models.py", 17, "ROC101"),  # through **kwargs: no parameter to map inside
    ("models.py", 18, "ROC101"),  # a partial of torch.compile bound to a name
    ("models.py", 19, "ROC103"),  # options built by a helper
    ("models.py", 20, "ROC101"),  # kw = {"mode": ...}; torch.compile(**kw)
    ("models.py", 24, "ROC103"),  # a cudagraphs parameter of a wrapper
]


def test_hazards_one_module_away_are_found_at_the_value():
    assert _found(PROJECT / "zoo") == sorted(ZOO_FINDINGS)


def test_near_misses_across_modules_are_clean():
    assert _found(PROJECT / "clean_zoo") == []


def test_without_the_index_the_callers_are_clean_and_the_wrappers_unchanged():
    """A file linted alone (stdin, flake8) knows only its own functions."""
    assert codes((PROJECT / "zoo" / "models.py").read_bytes()) == ["ROC101"]  # only the **kw dict of its own


def test_a_wrapper_of_the_same_file():
    """Its callers hand it a CUDA-graph mode and a value decided at run time: the mode is mapped
    once, inside the wrapper (issue 29), not at each caller."""
    src = ('import torch\ndef wrap(m, mode="default"):\n    return torch.compile(m, mode=mode)\n'
           'a = wrap(f, mode="reduce-overhead")\nb = wrap(f)\nc = wrap(f, mode=cfg.mode)\n')
    assert codes(src) == ["ROC104"]
    clean = ('import torch\ndef wrap(m, mode="default"):\n    return torch.compile(m, mode=mode)\n'
             'a = wrap(f, mode="max-autotune-no-cudagraphs")\nb = wrap(f)\n')
    assert codes(clean) == []


def test_parameter_defaults():
    hazard = 'import torch\ndef build(m, compile_mode="max-autotune"):\n    return torch.compile(m, mode=compile_mode)\n'
    assert codes(hazard) == ["ROC102"]
    clean = 'import torch\ndef build(m, compile_mode="default"):\n    return torch.compile(m, mode=compile_mode)\n'
    assert codes(clean) == []
    none = 'import torch\ndef build(m, compile_mode=None):\n    return torch.compile(m, mode=compile_mode)\n'
    assert codes(none) == []
    unknown = 'import torch\ndef build(m, compile_mode):\n    return torch.compile(m, mode=compile_mode)\n'
    assert codes(unknown) == ["ROC104"]
    rebound = ('import torch\ndef build(m, compile_mode="default"):\n    compile_mode = pick(compile_mode)\n'
               '    return torch.compile(m, mode=compile_mode)\n')
    assert codes(rebound) == ["ROC104"]


def test_cpu_only_modes_are_clean():
    assert codes('import torch\nif device == "cpu":\n    f = torch.compile(g, mode="max-autotune")\n') == []
    assert codes('import torch\nf = torch.compile(g, mode="max-autotune" if dev.type == "cpu" else "default")\n') == []
    assert codes('import torch\nif device != "cpu":\n    f = torch.compile(g, mode="max-autotune")\n') == ["ROC102"]
    assert codes('import torch\nif device == "cuda":\n    f = torch.compile(g, mode="max-autotune")\n') == ["ROC102"]


def _copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / "src"
    shutil.copytree(PROJECT / name, root / name)
    return root


def test_fixed_package_is_stable_and_keeps_every_other_byte(tmp_path):
    root = _copy(tmp_path, "zoo")
    _apply_fix(root)
    assert _found(root) == []
    assert all(r.fixed is None for r in _lint(root, fix=True).values())
    mapped = ("mode=mode, **kwargs)", "list_mode_options(table_mode)")  # the wrappers, mapped inside
    for name in ("compiling.py", "models.py"):
        original = (PROJECT / "zoo" / name).read_text().splitlines()
        fixed = (root / "zoo" / name).read_text()
        for line in original:
            if "reduce-overhead" not in line and "max-autotune" not in line and "use_cudagraphs=True" not in line \
                    and not any(m in line for m in mapped):
                assert line in fixed
    models = (root / "zoo" / "models.py").read_text()
    assert 'a = compile_model(step, mode="reduce-overhead")' in models  # left: the wrapper maps it


DRIVER = "import zoo.models as m\nRESULT = None\n"


def test_fixed_package_runs_the_same_on_nvidia_and_maps_the_modes_on_rocm(tmp_path):
    root = _copy(tmp_path, "zoo")
    original = {rocm: run_file(_driver(root), rocm, env={"PYTHONPATH": str(root)}) for rocm in (False, True)}
    fixed_root = _copy(tmp_path / "fixed", "zoo")
    _apply_fix(fixed_root)
    fixed = {rocm: run_file(_driver(fixed_root), rocm, env={"PYTHONPATH": str(fixed_root)}) for rocm in (False, True)}
    assert fixed[False]["calls"] == original[False]["calls"]
    # on ROCm: no CUDA-graph mode and no cudagraphs option reaches torch.compile
    for call in fixed[True]["calls"]:
        assert call.get("mode") not in ("reduce-overhead", "max-autotune")
        assert not (call.get("options") or {}).get("triton.cudagraphs")
    assert any((c.get("options") or {}).get("triton.cudagraphs") for c in original[True]["calls"])
    assert len(fixed[True]["calls"]) == len(original[True]["calls"])


def _driver(root: Path) -> Path:
    path = root / "driver.py"
    path.write_text(DRIVER)
    return path


# -- the cache key --------------------------------------------------------------------------

def test_changing_a_wrapper_re_lints_its_callers_only(tmp_path, monkeypatch):
    import rocmport.runner as runner

    root = _copy(tmp_path, "zoo")
    _write(root, {"zoo/unrelated.py": "import torch\nx = torch.compile(f)\n"})
    cache = Cache(tmp_path / "cache", Settings())
    linted = []
    work = runner._work
    monkeypatch.setattr(runner, "_work", lambda item: (linted.append(Path(item[0]).name), work(item))[1])

    def run():
        linted.clear()
        check_files(_files(root), Settings(), jobs=1, cache=cache)
        return sorted(linted)

    assert run() == ["__init__.py", "compiling.py", "models.py", "unrelated.py"]
    assert run() == []  # warm
    unrelated = root / "zoo" / "unrelated.py"
    unrelated.write_text(unrelated.read_text() + "\n# a comment: no part of any summary\n")
    assert run() == ["unrelated.py"]
    # the callers' findings depend on the wrapper's body (where it hands the mode to torch.compile,
    # which is mapped there once for all of them): any change to it re-lints them
    wrapper = root / "zoo" / "compiling.py"
    wrapper.write_text(wrapper.read_text() + "\n# a comment\n")
    assert run() == ["compiling.py", "models.py"]
    # the wrapper stops forwarding mode: the callers that consulted it are linted again
    wrapper.write_text(wrapper.read_text().replace("return torch.compile(model, mode=mode, **kwargs)",
                                                   "return torch.compile(model, **kwargs)"))
    assert run() == ["compiling.py", "models.py"]
    assert run() == []


def test_what_other_modules_told_a_file_is_recorded_only_for_a_cache(tmp_path):
    """A file's dependencies (digests of the answers it read from other modules) exist for
    its cache entry: a run without a cache (``--no-cache``, ``fix``) computes none, and
    finds the same."""
    root = _copy(tmp_path, "zoo")
    cached = check_files(_files(root), Settings(), jobs=1, cache=Cache(tmp_path / "cache", Settings()))
    uncached = check_files(_files(root), Settings(), jobs=1)
    fixed = check_files(_files(root), Settings(), jobs=1, fix=True)
    assert any(getattr(r, "dependencies", None) for r in cached)
    assert not any(getattr(r, "dependencies", None) for r in uncached + fixed)
    assert [f.sort_key() for r in cached for f in r.findings] == [f.sort_key() for r in uncached for f in r.findings]


def test_cached_callers_are_re_linted_when_the_wrapper_changes(tmp_path):
    root = _copy(tmp_path, "zoo")
    cache = Cache(tmp_path / "cache", Settings())
    first = check_files(_files(root), Settings(), jobs=1, cache=cache)
    assert sum(len(r.findings) for r in first) == len(ZOO_FINDINGS)
    wrapper = root / "zoo" / "compiling.py"
    wrapper.write_text(wrapper.read_text().replace('def compile_model(model, mode="default", **kwargs):\n'
                                                   '    return torch.compile(model, mode=mode, **kwargs)',
                                                   'def compile_model(model, mode="default", **kwargs):\n'
                                                   '    return model'))
    second = {Path(r.path).name: r for r in check_files(_files(root), Settings(), jobs=1, cache=cache)}
    rows = sorted(f.start.row for f in second["models.py"].findings)
    assert 15 not in rows and 16 not in rows and 22 not in rows  # compile_model no longer compiles
    assert 17 in rows  # compile_with_kwargs still does


def test_a_cudagraph_keyword_is_followed_only_into_a_callee_the_index_may_know(tmp_path, monkeypatch):
    """A keyword about CUDA graphs sends a file to ROC10x's visit only where its call's
    callee may be a project function (imported, or a module-level name of the file): a
    method of ``self`` given ``skip_cudagraphs=`` is passed by before LibCST, and the rules,
    run anyway, find nothing there."""
    from rocmport import parsing
    from rocmport.analysis.prescan import PREFILTER

    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": """\
            import torch

            def make(m, use_cudagraphs=False):
                return torch.compile(m, options={"triton.cudagraphs": use_cudagraphs})
            """,
        "pkg/imported.py": """\
            from pkg.helpers import make

            def go(m):
                return make(m, use_cudagraphs=True)
            """,
        "pkg/local.py": """\
            from pkg import helpers

            def build(m, **kwargs):
                return helpers.make(m, **kwargs)

            def go(m):
                return build(m, use_cudagraphs=True)
            """,
        "pkg/method.py": """\
            class Scheduler:
                def plan(self, parts, flags):
                    return self.split(parts, skip_cudagraphs=flags)  # a method: no project function
            """,
    })
    parsed = []
    real = parsing.parse
    monkeypatch.setattr(parsing, "parse", lambda text, *a, **k: parsed.append(text) or real(text, *a, **k))
    found = _found(tmp_path)
    assert ("pkg/imported.py", 4, "ROC103") in found
    assert ("pkg/local.py", 7, "ROC103") in found
    assert not [f for f in found if f[0] == "pkg/method.py"]
    method = (tmp_path / "pkg/method.py").read_text()
    assert method not in parsed  # ruled out before LibCST
    PREFILTER["enabled"] = False
    try:
        assert not [f for f in _found(tmp_path) if f[0] == "pkg/method.py"]
    finally:
        PREFILTER["enabled"] = True


# -- CUDA-only code run at import (ROC707, ROC708) --------------------------------------------

CUDA_REACH_FINDINGS = [
    ("layers.py", 4, "ROC707"),  # enters kernels/cute_gemm (import cutlass)
    ("ring/__init__.py", 2, "ROC707"),  # enters ring/flash_ring (_get_cuda_arch_flags() at import)
    ("utils.py", 11, "ROC708"),  # torch.cuda.is_available() around NVML
]


def test_cuda_only_code_is_reported_where_neutral_code_enters_it_once():
    """One finding per entry: not at the package __init__ that imports the entering module,
    not in the CUDA-only modules themselves, not at the imports under try, under a test that
    excludes ROCm or inside a function; a package named cuda_* is the project's, not NVIDIA's."""
    found = [row for row in _found(PROJECT / "cuda_reach") if row[2] in ("ROC707", "ROC708", "ROC703", "ROC704")]
    assert found == sorted(CUDA_REACH_FINDINGS)


def test_cuda_facts_read_only_modules_that_can_hold_them(tmp_path, monkeypatch):
    _write(tmp_path, {"p/__init__.py": "from .a import f\nfrom .cutlass_ops import g\n",
                      "p/a.py": "import torch\ndef f():\n    return torch.cuda.is_available()\n",
                      "p/cutlass_ops.py": "from .b import g\n",
                      "p/b.py": "import cuda.bindings.driver as driver\ndef g():\n    return driver\n"})
    index = ProjectIndex(_files(tmp_path))
    parsed = []
    import rocmport.analysis.index as module

    real = module.module_facts
    monkeypatch.setattr(module, "module_facts", lambda body, absolute, name: (parsed.append(name),
                                                                             real(body, absolute, name))[1])
    assert index.cuda_chain("p.a") is None
    chain = index.cuda_chain("p.cutlass_ops")
    assert [step[:3] for step in chain] == [("p.cutlass_ops", 1, "import p.b"), ("p.b", 1, "import cuda.bindings.driver")]
    assert index.cuda_chain("p.cutlass_ops") == chain
    assert sorted(parsed) == ["p.b", "p.cutlass_ops"]  # p.a holds no such word; each parsed once
    index.start_recording()
    index.cuda_chain("p.cutlass_ops")
    record = index.stop_recording()
    assert set(record) == {"<cuda-only>:p.cutlass_ops", "<cuda-only>:p.b"}
    digest = index.dependency_digest(record)
    (tmp_path / "p" / "b.py").write_text("import torch\ndef g():\n    return torch\n")
    assert ProjectIndex(_files(tmp_path)).dependency_digest(record) != digest
    (tmp_path / "p" / "b.py").write_text("import cuda.bindings.driver as driver\ndef g():\n    return driver\n# c\n")
    assert ProjectIndex(_files(tmp_path)).dependency_digest(record) == digest  # a comment changes no fact


def test_a_change_in_the_imported_module_reaches_the_importers_findings_through_the_cache(tmp_path, monkeypatch):
    import rocmport.runner as runner

    root = _copy(tmp_path, "cuda_reach")
    cache = Cache(tmp_path / "cache", Settings())
    linted = []
    work = runner._work
    monkeypatch.setattr(runner, "_work", lambda item: (linted.append(Path(item[0]).name), work(item))[1])

    def run():
        linted.clear()
        reports = check_files(_files(root), Settings(), jobs=1, cache=cache)
        return sorted((Path(r.path).relative_to(root / "cuda_reach").as_posix(), f.start.row, f.code)
                      for r in reports for f in r.findings if f.code in ("ROC707", "ROC708"))

    assert run() == sorted(CUDA_REACH_FINDINGS)
    assert run() == sorted(CUDA_REACH_FINDINGS) and linted == []  # warm
    kernel = root / "cuda_reach" / "kernels" / "cute_gemm.py"
    kernel.write_text(kernel.read_text().replace("import cutlass\nimport cutlass.cute as cute\n", "import torch\n")
                      .replace("@cute.jit\n", ""))
    assert run() == sorted(set(CUDA_REACH_FINDINGS) - {("layers.py", 4, "ROC707")})
    assert "layers.py" in linted and "utils.py" not in linted


# -- a compiled extension of the project, built for an NVIDIA architecture --------------------

def test_a_module_that_imports_an_nvidia_architecture_extension_of_the_project_is_nvidia_only(tmp_path):
    """`import attn._qattn_sm89`: a module of the project's package that no file is (a
    compiled extension) named for sm89: the importing benchmark does not load on ROCm, so its
    fp8 choice is not a ROCm finding. Near misses: an extension not named for an architecture,
    a Python module of the package named for one (its content decides), `from attn import
    _qattn_sm89` (which may name anything the package binds), a package that is not linted."""
    fp8 = 'v = torch.randn(4, device="cuda").to(torch.float8_e4m3fn)\n'
    _write(tmp_path, {
        "attn/__init__.py": "",
        "attn/quant_sm90.py": "import torch\n",
        "bench/sm89.py": "import torch\nimport attn._qattn_sm89 as qattn\n" + fp8,
        "bench/sm90a.py": "import torch\nimport attn.kernels.hopper_fwd\n" + fp8,
        "bench/fused.py": "import torch\nimport attn._fused as fused\n" + fp8,
        "bench/python_sm90.py": "import torch\nimport attn.quant_sm90\n" + fp8,
        "bench/from_import.py": "import torch\nfrom attn import _qattn_sm89\n" + fp8,
        "bench/other_package.py": "import torch\nimport vendorlib._ops_sm89\n" + fp8,
    })
    found = {name for name, _row, code in _found(tmp_path) if code == "ROC705"}
    assert found == {"bench/fused.py", "bench/python_sm90.py", "bench/from_import.py", "bench/other_package.py"}


# -- where the project imports a module ------------------------------------------------------

IMPORTED_ON = {
    "srv/__init__.py": "",
    "srv/utils.py": """\
        import torch

        SYSTEM = None
        if torch.version.hip is not None:
            SYSTEM = "rocm"
        elif torch.version.cuda is not None:
            SYSTEM = "cuda"
        """,
    "srv/attention/__init__.py": """\
        from srv.utils import SYSTEM

        if SYSTEM == "cuda":
            from .cuda import attention
        elif SYSTEM == "rocm":
            from .rocm import attention
        else:
            raise ImportError(SYSTEM)
        """,
    "srv/attention/cuda.py": "import torch\n\nCAP = torch.cuda.get_device_capability()\n",
    "srv/attention/rocm.py": """\
        import torch


        def attention(q, engine):
            if engine == "triton":
                from .flash_triton import triton_attention

                return triton_attention(q)
            return q
        """,
    "srv/attention/flash_triton.py": """\
        import triton

        CONFIGS = [triton.Config({"BLOCK": 64, "waves_per_eu": 2})]


        def triton_attention(q):
            return q
        """,
    "srv/attention/common.py": "from .cuda import CAP\nfrom .rocm import attention\n",
}


def test_where_the_project_imports_a_module(tmp_path):
    """TGI's shape: `if SYSTEM == "cuda": from .cuda import ...` / `elif SYSTEM == "rocm":
    from .rocm import ...` (a project flag), a module only the ROCm one imports, in a function;
    a module imported unconditionally somewhere else too; one nothing imports."""
    root = _write(tmp_path, {name: textwrap.dedent(text) for name, text in IMPORTED_ON.items()})
    files = {name: text for name, text in IMPORTED_ON.items() if name != "srv/attention/common.py"}
    alone = _write(tmp_path / "alone", {name: textwrap.dedent(text) for name, text in files.items()})
    index = ProjectIndex(_files(alone))
    assert index.imported_on("srv.attention.cuda") == {"cuda"}
    assert index.imported_on("srv.attention.rocm") == {"rocm"}
    assert index.imported_on("srv.attention.flash_triton") == {"rocm"}
    assert index.imported_on("srv.utils") == {"cuda", "rocm", "cpu", "other"}  # unconditionally
    assert index.imported_on("srv") == {"cuda", "rocm", "cpu", "other"}  # nothing imports it
    both = ProjectIndex(_files(root / "srv") + [])  # common.py imports both at its top
    assert both.imported_on("srv.attention.cuda") == {"cuda", "rocm", "cpu", "other"}
    found = sorted((Path(r.path).relative_to(alone).as_posix(), f.start.row, f.code)
                   for r in check_files(_files(alone), Settings(), jobs=1) for f in r.findings)
    assert found == []  # ROC712 at cuda.py, ROC511 at flash_triton.py: not where they run


def test_a_changed_importer_re_lints_the_module_it_imports(tmp_path):
    files = {name: text for name, text in IMPORTED_ON.items() if name != "srv/attention/common.py"}
    root = _write(tmp_path, {name: textwrap.dedent(text) for name, text in files.items()})
    cache = Cache(tmp_path / "cache", Settings())

    def found():
        return sorted((Path(r.path).relative_to(root).as_posix(), f.start.row, f.code)
                      for r in check_files(_files(root), Settings(), jobs=1, cache=cache) for f in r.findings)

    assert found() == [] and found() == []
    init = root / "srv" / "attention" / "__init__.py"
    init.write_text(init.read_text().replace('if SYSTEM == "cuda":\n    from .cuda import attention\nel', ""))
    init.write_text(init.read_text() + "\nfrom .cuda import CAP\n")
    assert found() == [("srv/attention/cuda.py", 3, "ROC712")]


def test_where_the_project_imports_a_module_of_a_vendored_copy(tmp_path):
    """Two copies of one package in a repository (TGI's `server/` and
    `backends/gaudi/server/`): each module's importers are those of its own tree, relative
    imports read from each copy's own file."""
    tree = {name: textwrap.dedent(text) for name, text in IMPORTED_ON.items() if name != "srv/attention/common.py"}
    _write(tmp_path / "server", tree)
    copy = dict(tree)
    copy["srv/attention/__init__.py"] = "from .cuda import attention\nfrom .rocm import attention\n"  # no test
    _write(tmp_path / "backends" / "server", copy)
    index = ProjectIndex(_files(tmp_path))
    ours = str(tmp_path / "server" / "srv" / "attention" / "cuda.py")
    theirs = str(tmp_path / "backends" / "server" / "srv" / "attention" / "cuda.py")
    assert index.imported_on("srv.attention.cuda", path=ours) == {"cuda"}
    assert index.imported_on("srv.attention.cuda", path=theirs) == {"cuda", "rocm", "cpu", "other"}
    assert index.imported_on("srv.attention.flash_triton",
                             path=str(tmp_path / "server" / "srv" / "attention" / "flash_triton.py")) == {"rocm"}
