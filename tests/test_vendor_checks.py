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
        (8, "ROC704", False), (9, "ROC704", False), (10, "ROC703", False), (11, "ROC703", False),
        (15, "ROC701", True), (17, "ROC701", False), (18, "ROC701", False), (19, "ROC701", True),
        (21, "ROC701", False), (22, "ROC701", False),
        (27, "ROC702", True), (29, "ROC702", True), (31, "ROC702", False), (33, "ROC702", False),
        (36, "ROC703", False), (37, "ROC703", False), (39, "ROC703", False),
        (41, "ROC706", False), (42, "ROC706", True), (42, "ROC705", False),
        (46, "ROC706", False), (46, "ROC705", False),
        # the capability queries at module level initialise the runtime at import
        (27, "ROC712", False), (29, "ROC712", False), (30, "ROC712", False), (33, "ROC712", False),
    }


def test_toolchain_guard_is_display_only_and_fa3_guard_is_no_finding():
    # `if torch.version.cuda:` around nvcc flags may mean "a CUDA build": not widened
    src = "import torch\nif torch.version.cuda:\n    FLAGS = ['-arch=sm_80']\n"
    (finding,) = lint(src, select=["ROC701"])
    assert not finding.fixable
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
    assert not finding.fixable and "AMD GPUs have this feature" in finding.fix.message


@pytest.mark.parametrize("code", get("ROC702").REJECTIONS)
def test_capability_rejections_are_never_gated(code):
    (finding,) = lint("import torch\n" + code, select=["ROC702"])
    assert not finding.fixable


def test_files_named_for_one_vendor_are_left_alone():
    src = "import torch\nif torch.cuda.get_device_capability() >= (9, 0):\n    import flash_attn_interface\n"
    assert codes(src, select=SELECT) == ["ROC702", "ROC712"]
    for path in ("kernels/gemm_sm90.py", "hardware/nvidia.py", "tests/test_rocm_support.py", "trt_export.py"):
        assert codes(src, select=SELECT, path=path) == [], path


def test_rule_docs_quote_the_facts_table():
    for code in ("ROC702", "ROC705"):
        doc = get(code).doc()
        assert rocm_facts.arch_table() in doc.replace("\n        ", "\n")
    assert "ComfyUI#14865" in get("ROC704").doc() and "flash_attn_interface" in get("ROC704").doc()
    assert "ROCm/pytorch#1535" in get("ROC703").doc()


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
    assert h100["quantize"] == [-448.0, -3.0, 0.5, 448.0]
    assert h100["quantize_int_max"] == [448.0] and h100["fixed_dtype"] == [448.0]


def test_rocm_path_takes_the_ported_branches(executed):
    original, fixed = executed[("original", "rocm")], executed[("fixed", "rocm")]
    # without the fix: crashes, the CPU branch, Hopper-only paths and fp8 overflow on MI300
    assert original["bf16_by_version"] == "raised TypeError"
    assert original["major_version"] == original["version_prefix"] == "raised AttributeError"
    assert original["device_kind"] == "cpu" and original["attention_impl"] == "fa3"
    assert original["tma"] is True and original["is_hopper"] is True and original["kernel_for_sm"] == "wgmma"
    assert original["quantize"][-1] != 240.0
    # with it
    assert fixed == {
        "attention_impl": "sdpa", "both_checks": "gpu", "bf16_by_version": False, "device_kind": "gpu",
        "fixed_dtype": [448.0], "gpu_flag": "gpu", "is_hopper": False, "kernel_for_sm": "mma",
        "major_version": False, "no_gpu_build": False, "quantize": [-240.0, -3.0, 0.5, 240.0],
        "quantize_int_max": [240.0], "tma": False, "version_prefix": "other",
    }
