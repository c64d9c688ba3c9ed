"""ROC506-ROC512 (Triton on AMD, more): fixtures, near misses, and proof by execution.

Safe fixes are executed in Triton's interpreter (``TRITON_INTERPRET=1``, CPU): the original,
the fixed file on the NVIDIA path and the fixed file with ``torch.version.hip`` set give the
same outputs, and the values the fix chose are read back. The tf32 fix is also compiled with
``triton.compile`` (no GPU needed) for sm_90 and gfx90a: the original does not compile for
gfx90a, the fixed file on the ROCm path does, and on the NVIDIA path its Triton IR is the
original's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocmport.analysis.triton import LIBDEVICE_WITHOUT_HIP
from rocmport.findings import Applicability
from rocmport.registry import get

from .harness import FIXTURES, check_fixture_pair, fix, fixture_pairs, lint

NEW = ["ROC506", "ROC507", "ROC508", "ROC509", "ROC510", "ROC511", "ROC512"]
SELECT = ["ROC5"]
DIRECTORY = FIXTURES / "triton_launch" / "more"
EXPECTED = {
    "tuned_configs.py": ["ROC506", "ROC506", "ROC506", "ROC511", "ROC511", "ROC511", "ROC511"],
    "tf32_dot.py": ["ROC510", "ROC510", "ROC510"],
    "nvidia_only.py": ["ROC507", "ROC508", "ROC509", "ROC512", "ROC512"],
    "near_misses.py": [],
}


def test_every_fixture_is_listed():
    assert sorted(p.name for p, _ in fixture_pairs("triton_launch/more")) == sorted(EXPECTED)


@pytest.mark.parametrize("path,expected", list(fixture_pairs("triton_launch/more")),
                         ids=[p.name for p, _ in fixture_pairs("triton_launch/more")])
def test_fixture(path, expected):
    found = lint(path.read_bytes(), select=SELECT, path=str(path))
    assert sorted(f.code for f in found) == EXPECTED[path.name]
    for f in found:
        rule = get(f.code)
        assert f.fix is not None and f.fix.applicability is rule.FIX_APPLICABILITY, f.message
    if expected is not None or not found:
        check_fixture_pair(path, expected, select=SELECT)
    else:  # display-only findings: nothing changes
        assert fix(path.read_bytes(), select=SELECT, path=str(path)).fixed is None


def test_nvidia_only_rows():
    path = DIRECTORY / "nvidia_only.py"
    found = lint(path.read_bytes(), select=SELECT, path=str(path))
    assert [(f.start.row, f.code) for f in found] == [(4, "ROC507"), (6, "ROC512"), (14, "ROC508"), (15, "ROC509"),
                                                      (20, "ROC512")]
    assert "rsqrt_rn" in found[2].message


def test_docs():
    for code in NEW:
        rule = get(code)
        assert rule.SUMMARY and rule.WHAT and rule.WHY and rule.FIX and rule.FIX_APPLICABILITY
        if rule.FIX_APPLICABILITY is not Applicability.DISPLAY_ONLY:
            assert rule.FIXED_EXAMPLE
        assert code in [f.code for f in lint(textwrap.dedent(rule.EXAMPLE).strip() + "\n", select=[code])]


def test_amd_options_before_a_star_argument_get_no_fix():
    src = ("import triton\nimport triton.language as tl\n@triton.jit\ndef k(x, B: tl.constexpr):\n    pass\n"
           "def f(x, rest):\n    k[(1,)](x, B=64, waves_per_eu=2, *rest)\n")
    (finding,) = lint(src, select=["ROC511"])
    assert finding.fix.applicability is Applicability.DISPLAY_ONLY


def test_amd_only_files_may_pass_amd_options():
    src = 'import triton\ncfg = triton.Config({"BLOCK": 64, "waves_per_eu": 2}, num_stages=0)\n'
    for path in ("ops/rocm/gemm.py", "kernels/hip_gemm.py", "aiter/ops/triton/gemm.py"):
        assert [f.code for f in lint(src, select=SELECT, path=path)] == ["ROC506"], path
    for path in ("ops/gemm.py", "chip/gemm.py", "hipster.py"):
        assert sorted(f.code for f in lint(src, select=SELECT, path=path)) == ["ROC506", "ROC511"], path


def test_tf32_constant_is_reused():
    path = DIRECTORY / "tf32_dot.expected.py"
    text = path.read_text()
    assert text.count("_ROCMPORT_DOT_TF32 = ") == 1 and text.count("_ROCMPORT_DOT_TF32X3 = ") == 1


def test_tf32_constant_goes_above_the_kernels_comments():
    src = ("import triton\nimport triton.language as tl\n\n\n# A GEMM tile.\n@triton.jit\ndef mm(a, N: tl.constexpr):\n"
           "    o = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]\n"
           "    tl.store(a + o, tl.dot(tl.load(a + o), tl.load(a + o), input_precision='tf32'))\n")
    out = fix(src, select=["ROC510"]).fixed.decode()
    assert "_ROCMPORT_DOT_TF32 = tl.constexpr(\"ieee\" if is_rocm else 'tf32')\n\n\n# A GEMM tile.\n@triton.jit\n" in out


def test_tf32_fix_needs_a_module_level_kernel():
    src = ("import triton\nimport triton.language as tl\ndef make():\n    @triton.jit\n"
           "    def mm(a, N: tl.constexpr):\n        o = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]\n"
           "        tl.store(a + o, tl.dot(tl.load(a + o), tl.load(a + o), input_precision='tf32'))\n    return mm\n")
    (finding,) = lint(src, select=["ROC510"])
    assert finding.fix is None


def test_libdevice_list_matches_installed_triton():
    spec = importlib.util.find_spec("triton")
    if spec is None:
        pytest.skip("triton not installed")
    import triton

    if not triton.__version__.startswith("3.9"):
        pytest.skip(f"the list is Triton 3.9's, this is {triton.__version__}")
    extra = Path(spec.origin).parent / "language" / "extra"

    def functions(path: Path):
        return set(re.findall(r"^def (\w+)\(", path.read_text(), re.M))

    cuda, hip = functions(extra / "cuda" / "libdevice.py"), functions(extra / "hip" / "libdevice.py")
    assert (len(cuda), len(hip)) == (197, 59)
    assert LIBDEVICE_WITHOUT_HIP == cuda - hip


# ------------------------------------------------------------------------------------------
# Proof by execution (Triton's interpreter on CPU)
# ------------------------------------------------------------------------------------------

from .test_triton_launch import needs_triton  # noqa: E402 (one definition of the interpreter check)

RUNNER = r'''
import importlib.util, json, sys
import torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

original, fixed, sizes = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
result = {}
for label, path in (("original", original), ("nvidia", fixed), ("rocm", fixed)):
    if label == "rocm":
        torch.version.hip = "6.2.0"  # a ROCm build, as the gate sees it
    module = load(path, "fixture_" + label)
    result[label] = {"gate": getattr(module, "is_rocm", None), "probe": module.probe(),
                     "outputs": [module.run(n).tolist() for n in sizes]}
print("RESULT" + json.dumps(result))
'''


def _files(tmp_path: Path, name: str):
    path = DIRECTORY / name
    report = fix(path.read_bytes(), select=SELECT, path=str(path))
    assert report.fixed is not None
    original, fixed = tmp_path / f"original_{name}", tmp_path / f"fixed_{name}"
    original.write_bytes(path.read_bytes())
    fixed.write_bytes(report.fixed)
    return original, fixed


def _execute(tmp_path: Path, name: str, sizes):
    original, fixed = _files(tmp_path, name)
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", RUNNER, str(original), str(fixed), json.dumps(sizes)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("RESULT")][-1]
    result = json.loads(line[len("RESULT"):])
    assert result["nvidia"]["gate"] is False and result["rocm"]["gate"] is True
    assert result["original"]["outputs"] == result["nvidia"]["outputs"] == result["rocm"]["outputs"]
    return result


@needs_triton
def test_amd_options_and_stages_fix_keeps_results(tmp_path):
    sizes = [1, 37, 100, 131]
    result = _execute(tmp_path, "tuned_configs.py", sizes)
    for n, out in zip(sizes, result["original"]["outputs"]):
        assert out == [6.0 * i + 1.0 for i in range(n)]
    original = [{"BLOCK": 64, "waves_per_eu": 2, "num_stages": 0},
                {"BLOCK": 128, "matrix_instr_nonkdim": 16, "kpack": 2, "num_stages": 0}]
    assert result["original"]["probe"]["configs"] == original
    # NVIDIA: exactly the original configs less the AMD-only options
    assert result["nvidia"]["probe"]["configs"] == [{"BLOCK": 64, "num_stages": 0}, {"BLOCK": 128, "num_stages": 0}]
    # ROCm: the original options, two pipeline stages
    assert result["rocm"]["probe"]["configs"] == [dict(c, num_stages=2) for c in original]


@needs_triton
def test_tf32_fix_keeps_results(tmp_path):
    result = _execute(tmp_path, "tf32_dot.py", [0, 1])
    assert result["original"]["probe"] == {}
    assert result["nvidia"]["probe"] == {"_ROCMPORT_DOT_TF32": "tf32", "_ROCMPORT_DOT_TF32X3": "tf32x3"}
    assert result["rocm"]["probe"] == {"_ROCMPORT_DOT_TF32": "ieee", "_ROCMPORT_DOT_TF32X3": "ieee"}


COMPILER = r'''
import importlib.util, json, re, sys, warnings
warnings.simplefilter("ignore")
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def compile(module, target):
    out = {}
    for kernel in ("mm_kernel", "mm_acc_kernel"):
        fn = getattr(module, kernel)
        src = ASTSource(fn, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "N": "constexpr"},
                        constexprs={"N": 64})
        try:
            ttir = triton.compile(src, target=target).asm["ttir"]
        except Exception as exc:
            out[kernel] = "error: " + type(exc).__name__
            continue
        # locations name the file; everything else must be the same
        out[kernel] = "\n".join(l for l in re.sub(r" loc\([^)]*\)", "", ttir).splitlines()
                                if not l.startswith("#loc"))
    return out

original, fixed = sys.argv[1], sys.argv[2]
cuda, gfx90a = GPUTarget("cuda", 90, 32), GPUTarget("hip", "gfx90a", 64)
result = {"original_cuda": compile(load(original, "o"), cuda), "original_gfx90a": compile(load(original, "o2"), gfx90a),
          "nvidia_cuda": compile(load(fixed, "n"), cuda)}
torch.version.hip = "6.2.0"
result["rocm_gfx90a"] = compile(load(fixed, "r"), gfx90a)
print("RESULT" + json.dumps(result))
'''


@needs_triton
@pytest.mark.slow
def test_tf32_fix_compiles_for_gfx90a_and_keeps_the_nvidia_ir(tmp_path):
    original, fixed = _files(tmp_path, "tf32_dot.py")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONWARNINGS="ignore", TRITON_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", COMPILER, str(original), str(fixed)], capture_output=True,
                          text=True, env=env, timeout=600, cwd=str(tmp_path))
    if done.returncode != 0 and "backend" in done.stderr.lower():
        pytest.skip("this Triton cannot compile for both backends here")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads([l for l in done.stdout.splitlines() if l.startswith("RESULT")][-1][len("RESULT"):])
    for kernel in ("mm_kernel", "mm_acc_kernel"):
        assert result["original_gfx90a"][kernel].startswith("error")
        assert not result["rocm_gfx90a"][kernel].startswith("error")
        assert not result["original_cuda"][kernel].startswith("error")
        assert result["nvidia_cuda"][kernel] == result["original_cuda"][kernel]
        assert "tf32" in result["nvidia_cuda"][kernel]


# ------------------------------------------------------------------------------------------
# The prefilters (TRIGGERS, may_match, name gates) skip nothing these rules would report
# ------------------------------------------------------------------------------------------

def _prefilter_sources():
    from rocmport.registry import all_rules

    for code in NEW + ["ROC605", "ROC606"]:
        rule = all_rules()[code]
        for i, case in enumerate(rule.INVALID + rule.VALID):
            yield pytest.param(case.code, id=f"{code}-{i}")
    for path, _ in fixture_pairs("triton_launch/more"):
        yield pytest.param(path.read_text(), id=path.name)
    yield pytest.param("import triton\nimport triton.language as tl\nfrom triton.language.extra import libdevice as ld\n"
                       "@triton.jit\ndef k(p):\n    tl.store(p, ld.cbrt(tl.dot(p, p, input_precision='TF32')))\n"
                       "WarpSize = 32\n", id="spellings")


@pytest.mark.parametrize("source", list(_prefilter_sources()))
def test_prefilter_changes_no_finding(source):
    from rocmport.analysis.prescan import PREFILTER

    def findings():
        return [(f.code, f.start.row, f.start.column, f.message) for f in lint(source)]

    with_filter = findings()
    PREFILTER["enabled"] = False
    try:
        without = findings()
    finally:
        PREFILTER["enabled"] = True
    assert with_filter == without


# ------------------------------------------------------------------------------------------
# The fix properties in odd surroundings: blocks, tabs, CRLF and CR line endings, a BOM
# ------------------------------------------------------------------------------------------

def _odd_inputs():
    from .fuzzing import WRAPPERS

    sources = [(DIRECTORY / name).read_text() for name in ("tuned_configs.py", "tf32_dot.py")]
    for code in ("ROC506", "ROC510", "ROC511"):
        sources += [case.code for case in get(code).INVALID]
    for i, source in enumerate(sources):
        for name, wrap in WRAPPERS.items():
            for newline, bom in (("\n", False), ("\r\n", True), ("\r", False)):
                indent = "\t" if name == "if" else "    "
                text = wrap(source, indent).replace("\n", newline)
                yield pytest.param((b"\xef\xbb\xbf" if bom else b"") + text.encode(), id=f"{i}-{name}-{newline!r}")


@pytest.mark.slow
@pytest.mark.parametrize("data", list(_odd_inputs()))
def test_fix_properties_in_odd_surroundings(data):
    from .fuzzing import check

    failure = check(data, prelude="slim")
    assert failure is None, f"{failure.category}: {failure.detail}"
