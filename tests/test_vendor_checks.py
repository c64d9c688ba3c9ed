"""ROC7xx: fixtures (expected output, fix properties, near misses), spellings, and execution
with real torch: every safe fix keeps the NVIDIA path exactly and takes the ROCm path on a
simulated MI300 (``torch.version.cuda`` None, ``torch.version.hip`` set, capability (9, 4))."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from rocmport import rocm_facts
from rocmport.registry import get

from .harness import FIXTURES, check_fixture_pair, codes, fix, fixed_text, fixture_pairs, lint

SELECT = ["ROC7"]
PAIRS = list(fixture_pairs("vendor_checks"))
DIR = FIXTURES / "vendor_checks"


@pytest.mark.parametrize("path,expected", PAIRS, ids=[p.name for p, _ in PAIRS])
def test_fixture(path, expected):
    check_fixture_pair(path, expected, select=SELECT)


def test_every_spelling_is_found():
    found = {(f.start.row, f.code, f.fixable) for f in lint((DIR / "spellings.py").read_bytes(), select=SELECT)}
    assert found == {
        (7, "ROC704", False), (8, "ROC704", False), (9, "ROC703", False), (10, "ROC703", False),
        (13, "ROC701", True), (15, "ROC701", False), (16, "ROC701", False), (17, "ROC701", True),
        (19, "ROC701", False),  # 20: NVCC flags under `if torch.version.cuda:` mean a CUDA build (issue 28)
        (25, "ROC703", False), (26, "ROC703", False), (28, "ROC703", False),
    }


def test_every_architecture_spelling_is_found():
    """In a module that loads on ROCm: the capability read as Hopper picking FA3 (fixed), read
    as an NVIDIA generation for something else (a suggestion), bf16 on `major >= 8` (right on
    AMD: nothing), 448 beside e4m3fn (fixed where the dtype is known), and the e4m3fn choices of
    the module once, at the first, with the count of the places that follow."""
    found = {(f.start.row, f.code, f.fixable) for f in lint((DIR / "arch_spellings.py").read_bytes(), select=SELECT)}
    assert found == {
        (12, "ROC702", True), (14, "ROC702", True), (18, "ROC702", False),
        (22, "ROC706", False), (23, "ROC706", True), (27, "ROC706", False), (23, "ROC705", False),
        # the capability queries at module level initialise the runtime at import: one decision,
        # at the first (making them lazy is one change)
        (12, "ROC712", False),
    }
    (fp8,) = [f for f in lint((DIR / "arch_spellings.py").read_bytes(), select=["ROC705"])]
    assert "1 more place in this file follows from this decision: line 27" in fp8.message
    (query,) = [f for f in lint((DIR / "arch_spellings.py").read_bytes(), select=["ROC712"])]
    assert "3 more places in this file follow from this decision: lines 14, 15, 18" in query.message
    assert [r.start.row for r in query.related] == [14, 15, 18]


def test_toolchain_guard_and_fa3_guard_are_no_finding():
    # `if torch.version.cuda:` around nvcc flags means "a CUDA build", which is right on ROCm:
    # no finding (issue 28: a guard that keeps a CUDA-only thing off ROCm is not a finding)
    src = "import torch\nif torch.version.cuda:\n    FLAGS = ['-arch=sm_80']\n"
    assert lint(src, select=["ROC701"]) == []
    # around an NVIDIA-only feature it is exactly right: no finding
    assert codes("import torch\nif torch.version.cuda:\n    import flash_attn_interface\n", select=SELECT) == []


def test_elif_after_a_version_test_is_guarded_too():
    src = ("import torch\nif torch.version.cuda.startswith('12'):\n    x = 12\n"
           "elif torch.version.cuda.startswith('11'):\n    x = 11\n")
    out = fixed_text(src, select=SELECT)
    assert out.count("torch.version.cuda is not None and") == 2


def test_negated_version_test_is_display_only():
    src = "import torch\nif not float(torch.version.cuda) >= 11:\n    OLD = True\n"
    (finding,) = lint(src, select=SELECT)
    assert finding.code == "ROC701" and not finding.fixable


def test_never_generates_torch_version_rocm():
    for path, expected in PAIRS:
        if expected is not None:
            assert "version.rocm" not in expected.read_text(encoding="latin-1")
    assert "version.rocm" not in fixed_text((DIR / "spellings.py").read_bytes(), select=SELECT).decode()


def test_gate_name_taken_uses_free_name():
    src = "import torch\nis_rocm = 3\nif torch.cuda.get_device_capability() >= (9, 0):\n    USE_FA3 = True\n"
    out = fix(src, select=SELECT).fixed.decode()
    assert "if not _rocmport_is_rocm and torch.cuda.get_device_capability() >= (9, 0):" in out


def test_fp8_max_without_a_known_dtype_is_a_suggestion():
    src = "import torch\nFP8_MAX = 448.0\ndef q(x, fp8_dtype):\n    return x.clamp(max=448.0).to(fp8_dtype)\n"
    found = lint(src, select=["ROC706"])
    assert [f.start.row for f in found] == [2, 4] and not any(f.fixable for f in found)


def test_fp8_max_with_a_dtype_that_is_not_e4m3fn_on_nvidia_is_a_suggestion():
    src = ("import torch\nFP8 = torch.float8_e5m2\ny = torch.ones(1).clamp(max=448.0).to(FP8)\n"
           "FP8_G = torch.float8_e4m3fn if torch.version.hip else torch.float8_e5m2\n"
           "z = torch.ones(1).clamp(max=448.0).to(FP8_G)\n")
    found = lint(src, select=["ROC706"])
    assert [f.start.row for f in found] == [3, 5] and not any(f.fixable for f in found)


def test_capability_guarding_fp8_is_a_suggestion():
    src = ("import torch\nif torch.cuda.get_device_capability() >= (8, 9):\n"
           "    x = x.to(torch.float8_e4m3fn)\n")
    (finding,) = lint(src, select=["ROC702"])
    assert not finding.fixable and "Some AMD GPUs have this feature" in finding.fix.message
    assert "fp8 on MI200 (9, 0), which has none" in finding.message


@pytest.mark.parametrize("code", [case.code for case in get("ROC702").INVALID if case.expected is None])
def test_capability_rejections_are_never_gated(code):
    """ROC702's INVALID cases without a fixed text: comparisons that reject GPUs, a branch
    that also turns on bf16: reported, never gated."""
    (finding,) = lint(code, select=["ROC702"])
    assert not finding.fixable


def test_file_names_do_not_decide_the_architecture_rules():
    """A file named for ROCm is where architecture and fp8 bugs live (issue 27), and one named for
    NVIDIA may run on AMD GPUs all the same: what the module imports decides."""
    src = "import torch\nif torch.cuda.get_device_capability() >= (9, 0):\n    import flash_attn_interface\n"
    for path in ("m.py", "kernels/gemm_sm90.py", "hardware/nvidia.py", "rocm_attention.py", "ops_hip.py",
                 "tests/test_rocm_support.py", "layers_amd.py"):
        assert [c for c in codes(src, select=SELECT, path=path) if c != "ROC712"] == ["ROC702"], path
    # the query at import is ROC712's, which leaves alone files named for NVIDIA and tests
    for path in ("m.py", "rocm_attention.py", "ops_hip.py", "layers_amd.py"):
        assert codes(src, select=SELECT, path=path) == ["ROC702", "ROC712"], path
    for path in ("kernels/gemm_sm90.py", "hardware/nvidia.py", "tests/test_rocm_support.py", "trt_export.py"):
        assert codes(src, select=["ROC712"], path=path) == [], path
    fp8 = "import torch\nFP8 = torch.float8_e4m3fnuz if torch.version.hip else torch.float8_e4m3fn\n"
    assert codes(fp8, select=SELECT, path="rocm_fp8.py") == ["ROC711"]
    nvidia = "import cutlass\nimport torch\n" + src.split("\n", 1)[1]
    assert codes(nvidia, select=["ROC702"], path="m.py") == []  # a module that cannot load on ROCm
    # another accelerator's backend tree
    assert codes(src, select=SELECT, path="ops/backend/_kunlunxin/mm.py") == []


def test_fp8_max_already_chosen_per_format_is_neither_reported_nor_rewritten():
    """FBGEMM's HSTU: `448.0 if fp8_type == torch.float8_e4m3fn else 57344.0` is exactly right on
    every GPU; rewriting 448.0 to finfo(e4m3fn).max there changed nothing and made three new
    ROC705 findings (false-alarms.md)."""
    src = ("import torch\n\ndef fp8_max(fp8_type):\n"
           "    return 448.0 if fp8_type == torch.float8_e4m3fn else 57344.0\n\n"
           "def limit(dtype):\n    if dtype is torch.float8_e4m3fn:\n        m = 448.0\n    else:\n"
           "        m = torch.finfo(dtype).max\n    return m\n")
    assert codes(src, select=SELECT) == []
    assert fix(src, select=SELECT).fixed is None


def test_a_vendor_choice_in_the_else_arm_is_reported_at_the_test_through_the_arm():
    """The finding sits at the vendor test that stands in for an architecture test, and its
    range runs on to the fnuz choice it makes in the `else` arm (one finding per test)."""
    src = ("import torch\n\ndef check(a):\n    if torch.version.cuda:\n"
           "        assert a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)\n    else:\n"
           "        assert a.dtype in (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)\n")
    (finding,) = lint(src, select=["ROC711"])
    assert (finding.start.row, finding.end.row) == (4, 7)
    assert "`torch.version.cuda` is false on every AMD GPU, so this code runs on all of them" in finding.message
    body = "import torch\nif torch.version.hip:\n    A = torch.float8_e4m3fnuz\n    B = torch.float8_e5m2fnuz\nX = 1\n"
    (finding,) = lint(body, select=["ROC711"])
    assert (finding.start.row, finding.end.row) == (2, 2)


def test_an_aiter_probe_is_judged_with_the_module():
    probe = "try:\n    import aiter\n    HAS_AITER = True\nexcept ImportError:\n    HAS_AITER = False\n"
    assert codes(probe, select=["ROC711"]) == ["ROC711"]
    knows = "import torch\nMI3XX = 'gfx94' in torch.cuda.get_device_properties(0).gcnArchName\n" + probe
    assert codes(knows, select=["ROC711"]) == []
    used = "import aiter\n\ndef attention(q, k, v):\n    return aiter.flash_attn_func(q, k, v)\n"
    assert codes(used, select=["ROC711"]) == []  # an import that uses it, not a probe


def test_rule_docs_quote_the_facts_table():
    for code in ("ROC702", "ROC705"):
        doc = get(code).doc()
        assert rocm_facts.arch_table() in doc.replace("\n        ", "\n")
    # the threads that show the failure (issue 28), not the fixes
    assert "theroyallab/tabbyAPI#5" in get("ROC704").doc() and "flash_attn_interface" in get("ROC704").doc()
    assert "bytedance/xpu-perf#194" in get("ROC703").doc() and "ROCm/pytorch#1535" not in get("ROC703").doc()
    assert "bitsandbytes#1513" in get("ROC701").doc() and "vllm#" not in get("ROC701").doc()


# ------------------------------------------------------------------------------------------
# Execution with real torch 2.13 (CPU): NVIDIA path identical, ROCm path the intended port
# ------------------------------------------------------------------------------------------

RUNNER = textwrap.dedent(r'''
    import json, runpy, sys
    from types import SimpleNamespace
    import torch
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "rocm":
        torch.version.cuda, torch.version.hip = None, "6.2.41133-dd7f95766"
        cap, arch = (9, 4), "gfx942:sramecc+:xnack-"
    else:
        torch.version.cuda, torch.version.hip = "12.4", None
        cap, arch = {"h100": (9, 0), "a100": (8, 0)}[kind], ""
    torch.cuda.is_available = lambda: True
    torch.cuda.get_device_capability = lambda device=None: cap
    torch.cuda.get_device_properties = lambda device=None: SimpleNamespace(
        major=cap[0], minor=cap[1], gcnArchName=arch, name="fake")
    namespace = runpy.run_path(path, run_name="fixture")
    out = {}
    for name, value in sorted(namespace.items()):
        if callable(value) and getattr(value, "__module__", None) == "fixture" and not name.startswith("_"):
            try:
                out[name] = value()
            except Exception as exc:
                out[name] = f"raised {type(exc).__name__}"
    print("@@RESULT@@" + json.dumps(out, default=repr))
''')
KINDS = ("h100", "a100", "rocm")


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    pytest.importorskip("torch")
    directory = tmp_path_factory.mktemp("vendor_exec")
    original = (DIR / "exec_cases.py").read_bytes()
    fixed = fix(original, select=SELECT).fixed
    assert fixed is not None
    (directory / "original.py").write_bytes(original)
    (directory / "fixed.py").write_bytes(fixed)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHINDUCTOR_")}
    procs = {(name, kind): subprocess.Popen([sys.executable, "-c", RUNNER, kind, str(directory / f"{name}.py")],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for name in ("original", "fixed") for kind in KINDS}
    results = {}
    for key, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-3000:]
        line = [l for l in stdout.splitlines() if l.startswith("@@RESULT@@")][-1]
        results[key] = json.loads(line[len("@@RESULT@@"):])
    return results


@pytest.mark.parametrize("kind", ["h100", "a100"])
def test_nvidia_path_is_unchanged(executed, kind):
    assert executed[("fixed", kind)] == executed[("original", kind)]
    assert not any(str(v).startswith("raised") for v in executed[("original", kind)].values())


def test_nvidia_values_are_the_expected_ones(executed):
    h100, a100 = executed[("fixed", "h100")], executed[("fixed", "a100")]
    assert h100["attention_impl"] == "fa3" and a100["attention_impl"] == "sdpa"
    assert h100["tma"] is True and a100["tma"] is False
    assert h100["kernel_for_sm"] == "wgmma" and h100["is_hopper"] is True
    assert h100["attention_by_platform"] == "fa3" and a100["attention_by_platform"] == "sdpa"
    assert h100["quantize"] == [-448.0, -3.0, 0.5, 448.0]
    assert h100["quantize_int_max"] == [448.0] and h100["fixed_dtype"] == [448.0]


def test_rocm_path_takes_the_ported_branches(executed):
    original, fixed = executed[("original", "rocm")], executed[("fixed", "rocm")]
    # without the fix: crashes, the CPU branch, Hopper-only paths and fp8 overflow on MI300
    assert original["bf16_by_version"] == "raised TypeError"
    assert original["major_version"] == original["version_prefix"] == "raised AttributeError"
    assert original["device_kind"] == "cpu" and original["attention_impl"] == "fa3"
    assert original["tma"] is True and original["is_hopper"] is True and original["kernel_for_sm"] == "wgmma"
    assert original["attention_by_platform"] == "fa3"
    assert original["quantize"][-1] != 240.0
    # with it
    assert fixed == {
        "attention_impl": "sdpa", "both_checks": "gpu", "bf16_by_version": False, "device_kind": "gpu",
        "attention_by_platform": "sdpa",
        "fixed_dtype": [448.0], "gpu_flag": "gpu", "is_hopper": False, "kernel_for_sm": "mma",
        "major_version": False, "no_gpu_build": False, "quantize": [-240.0, -3.0, 0.5, 240.0],
        "quantize_int_max": [240.0], "tma": False, "version_prefix": "other",
    }


def test_roc707s_cuda_only_packages_hold_roc704s_and_leave_out_those_with_rocm_builds():
    from rocmport.analysis.cuda_only import PACKAGES, package_of
    from rocmport.rules.vendor_checks.cuda_only_package_import import CUDA_ONLY_PACKAGES

    assert set(CUDA_ONLY_PACKAGES) <= set(PACKAGES)
    for name in ("flash_attn", "flash_attn.flash_attn_interface", "triton", "flashinfer", "xformers", "apex",
                 "transformer_engine", "bitsandbytes", "cupy", "sgl_kernel", "numba", "cudaq_like"):
        assert package_of(name) is None, name
    for name in ("cuda.bindings.driver", "cutlass.cute", "flash_attn.cute.interface", "numba.cuda", "cuda"):
        assert package_of(name) is not None, name


# Display-only findings of whole-module fixtures (no fixed output to compare): (line, code)
DISPLAY_ONLY = {
    "platform_hazards.py": {(20, "ROC708"), (29, "ROC708"), (38, "ROC709"), (45, "ROC710"), (50, "ROC710")},
}


@pytest.mark.parametrize("name", sorted(DISPLAY_ONLY))
def test_display_only_fixture(name):
    path = DIR / "display_only" / name
    found = lint(path.read_bytes(), select=SELECT, path=str(path))
    assert {(f.start.row, f.code) for f in found} == DISPLAY_ONLY[name]
    assert not any(f.fixable for f in found)


def test_every_display_only_fixture_is_listed():
    assert {p.name for p in (DIR / "display_only").glob("*.py")} == set(DISPLAY_ONLY)
