"""Property 4: fixed code behaves on the NVIDIA path exactly as before, and takes the ROCm
forms on a simulated ROCm build (real torch 2.13, CPU; torch.compile replaced by a spy)."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest

from rocmport import prelude

from .harness import fix
from .torch_runner import run_file

# every test here runs real torch in subprocesses (seconds each): part of the full run, not of -m "not slow"
pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent / "fixtures" / "compile_modes" / "spellings.py"
POST = "from types import SimpleNamespace\nbuild(SimpleNamespace(compile_mode='max-autotune'))\n"
DEFAULTS = {"triton.cudagraphs": False, "max_autotune_gemm_backends": "ATEN,TRITON,CPP",
            "memory_planning": False, "recompile_limit": 8}


@pytest.fixture(scope="module")
def fixed_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("exec") / "spellings_fixed.py"
    path.write_bytes(fix(FIXTURE.read_bytes()).fixed)
    return path


@pytest.fixture(scope="module")
def original_nvidia():
    return run_file(FIXTURE, rocm=False, post=POST)


def test_nvidia_path_is_unchanged(fixed_file, original_nvidia):
    fixed = run_file(fixed_file, rocm=False, post=POST)
    assert fixed["calls"] == original_nvidia["calls"]
    assert fixed["config"] == original_nvidia["config"]
    assert fixed["env"] == original_nvidia["env"] == {}
    for key, value in DEFAULTS.items():
        assert fixed["config"][key] == value


def test_rocm_path_takes_the_rocm_forms(fixed_file, original_nvidia):
    rocm = run_file(fixed_file, rocm=True, post=POST)
    modes = [c.get("mode") for c in rocm["calls"]]
    assert "reduce-overhead" not in modes and "max-autotune" not in modes
    original_modes = [c.get("mode") for c in original_nvidia["calls"]]
    expected = [prelude_map(m) for m in original_modes]
    assert modes == expected
    options = [c["options"] for c in rocm["calls"] if c.get("options")]
    assert options == [{"triton.cudagraphs": False, "epilogue_fusion": True}]
    # a fixed module sets nothing process-wide on import: set-up is `rocmport setup`'s, in an
    # entry point (tests/test_mergeable_fixes.py), never a side effect of a fix
    assert rocm["env"] == {}
    assert rocm["config"]["recompile_limit"] == original_nvidia["config"]["recompile_limit"]
    assert rocm["warnings"] == []


def prelude_map(mode):
    return {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(mode, mode)


def test_original_still_uses_cuda_graph_modes_on_rocm():
    """Sanity check of the harness: without the fix, ROCm gets the hazardous modes."""
    original = run_file(FIXTURE, rocm=True, post=POST)
    assert "reduce-overhead" in [c.get("mode") for c in original["calls"]]


def _prelude_module(tmp_path, options=prelude.PreludeOptions(), body="") -> Path:
    path = tmp_path / "mod.py"
    path.write_text(prelude.render_inline("is_rocm", prelude.PARTS, options) + textwrap.dedent(body))
    return path


def test_prelude_changes_nothing_on_nvidia(tmp_path):
    path = _prelude_module(tmp_path, prelude.PreludeOptions(profile="tuned", compile_guard=True), """
        import sys
        import torch
        RESULT = {"inductor_imported": "torch._inductor.config" in sys.modules,
                  "compile_is_spy": torch.compile.__name__ == "spy",
                  "rng": torch.cuda.get_rng_state.__module__, "is_rocm": is_rocm,
                  "mapped": rocmport_compile_mode("reduce-overhead")}
    """)
    out = run_file(path, rocm=False)
    assert out["extra"] == {"inductor_imported": False, "compile_is_spy": True, "rng": "torch.cuda.random",
                            "is_rocm": False, "mapped": "reduce-overhead"}
    assert out["env"] == {}
    assert out["config"]["epilogue_fusion"] is True and out["config"]["recompile_limit"] == 8


def test_tuned_profile_on_rocm(tmp_path):
    path = _prelude_module(tmp_path, prelude.PreludeOptions(profile="tuned", inference_only=True))
    out = run_file(path, rocm=True)
    assert out["env"]["TORCHINDUCTOR_COORDINATE_DESCENT_TUNING"] == "1"
    assert out["env"]["TORCHINDUCTOR_FREEZING"] == "1"
    assert out["config"]["coordinate_descent_tuning"] is True and out["config"]["freezing"] is True
    assert out["config"]["epilogue_fusion"] is True


def test_user_environment_wins_over_the_prelude(tmp_path):
    path = _prelude_module(tmp_path)
    out = run_file(path, rocm=True, env={"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "ATEN,TRITON"})
    assert out["config"]["max_autotune_gemm_backends"] == "ATEN,TRITON"


def test_fallback_when_inductor_config_was_imported_first(tmp_path):
    path = tmp_path / "late.py"
    path.write_text("import torch._inductor.config\n" + prelude.render_inline("is_rocm", prelude.PARTS,
                                                                              prelude.PreludeOptions()))
    out = run_file(path, rocm=True)
    assert out["env"] == {}  # too late for the environment: assigned, guarded, and said so
    assert out["config"]["max_autotune_gemm_backends"] == "ATEN"
    assert out["config"]["recompile_limit"] == 128
    assert len(out["warnings"]) == 1 and "thread" in out["warnings"][0]


def test_setup_runs_once_per_process(tmp_path):
    block = prelude.render_inline("is_rocm", prelude.PARTS, prelude.PreludeOptions())
    (tmp_path / "other.py").write_text(block)
    path = tmp_path / "main.py"
    path.write_text(f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n{block}\n"
                    "import torch._dynamo.config as d\nd.recompile_limit = 64\nimport other\n"
                    "RESULT = d.recompile_limit\n")
    out = run_file(path, rocm=True)
    assert out["extra"] == 64  # the second module's prelude did not run the set-up again


RNG_POST = """
import torch, torch._dynamo.convert_frame as cf
first = (cf._compile, torch.cuda.get_rng_state, torch.cuda.set_rng_state)
again = _rocmport_rng_patch()
restore = getattr(torch, "_rocmport_rng_restore", None)
RESULT = {"wrapped": hasattr(cf._compile, "__wrapped__"), "again": again,
          "get_wraps": getattr(torch.cuda.get_rng_state, "__wrapped__", None) is not None}
if restore is not None:
    wrapped_compile = cf._compile
    restore()
    RESULT["restored"] = (cf._compile is wrapped_compile.__wrapped__
                          and not hasattr(torch.cuda.get_rng_state, "__wrapped__")
                          and torch._rocmport_rng_restore is None)
"""


def test_rng_patch_is_skipped_on_torch_2_13(tmp_path):
    # emitted (rng-patch = true), it still does nothing on torch >= 2.10
    out = run_file(_prelude_module(tmp_path, prelude.PreludeOptions(rng_patch=True)), rocm=True, post=RNG_POST)
    assert out["extra"] == {"wrapped": False, "again": False, "get_wraps": False}


def test_rng_patch_installs_once_and_restores_on_older_torch(tmp_path):
    path = tmp_path / "old.py"
    path.write_text('import torch\ntorch.__version__ = "2.8.0+rocm6.3"\n'
                    + prelude.render_inline("is_rocm", prelude.PARTS, prelude.PreludeOptions(rng_patch=True)))
    out = run_file(path, rocm=True, post=RNG_POST)
    assert out["extra"] == {"wrapped": True, "again": False, "get_wraps": True, "restored": True}


def test_compile_guard_maps_modes_and_keeps_the_signature(tmp_path):
    path = _prelude_module(tmp_path, prelude.PreludeOptions(compile_guard=True), """
        import inspect
        import torch
        @torch.compile(mode="reduce-overhead")
        def f(x):
            return x
        torch.compile(f, mode="max-autotune", fullgraph=True)
        torch.compile(f, options={"triton.cudagraphs": True})
        RESULT = str(inspect.signature(torch.compile))
    """)
    out = run_file(path, rocm=True)
    assert [c.get("mode") for c in out["calls"]] == ["default", "max-autotune-no-cudagraphs", None]
    assert out["calls"][2]["options"] == {"triton.cudagraphs": False}
    assert out["extra"] == "(model=None, **kwargs)"  # the spy's own signature, kept by the wrapper
