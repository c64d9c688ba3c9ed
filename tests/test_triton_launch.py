"""ROC5xx fixtures: expected output, the fix properties, near-misses, and proof by execution
in Triton's interpreter (``TRITON_INTERPRET=1``, CPU) on the NVIDIA path and with ROCm values."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocmport.findings import Applicability
from rocmport.registry import get
from rocmport.source import LineIndex, SourceText

from .harness import FIXTURES, assert_fix_properties, expand_prelude, fix, fixture_pairs, lint

SELECT = ["ROC5"]
PAIRS = list(fixture_pairs("triton_launch"))
DIRECTORY = FIXTURES / "triton_launch"
ASCEND = DIRECTORY / "backends" / "_ascend" / "ascend_kernels.py"

# fixture -> (codes expected, applicability of the ROC501 fix when there is one)
EXPECTED = {
    "autotune_alias.py": (["ROC501"], Applicability.SAFE),
    "clean_nearmiss.py": ([], None),
    "constexpr_default.py": (["ROC501"], Applicability.UNSAFE),
    "half_accumulator.py": (["ROC504"], None),
    "masked_constant.py": (["ROC501"], Applicability.SAFE),
    "masked_literal.py": (["ROC501"], Applicability.SAFE),
    "num_warps.py": (["ROC503", "ROC503"], None),
    "positional_local.py": (["ROC501"], Applicability.SAFE),
    "reduction_row.py": (["ROC501"], Applicability.UNSAFE),
    "small_tile.py": (["ROC502"], None),
    "unclamped_tanh.py": (["ROC505"], None),  # the tanh; the SiLU cannot give NaN
    "unmasked.py": (["ROC501"], Applicability.UNSAFE),
}
SAFE_BLOCK_FIXTURES = sorted(name for name, (_, app) in EXPECTED.items() if app is Applicability.SAFE)


def _expected_bytes(path: Path) -> bytes:
    source = SourceText.from_bytes(path.read_bytes())
    return source.to_bytes(expand_prelude(source.text, LineIndex(source.text).newline()))


def test_every_fixture_is_listed():
    assert sorted(p.name for p, _ in PAIRS) == sorted(EXPECTED)


@pytest.mark.parametrize("path,expected", PAIRS, ids=[p.name for p, _ in PAIRS])
def test_fixture(path, expected):
    original = path.read_bytes()
    found = lint(original, select=SELECT, path=str(path))
    want_codes, applicability = EXPECTED[path.name]
    assert sorted(f.code for f in found) == sorted(want_codes)
    for f in found:
        if f.code == "ROC501":
            assert f.fix.applicability is applicability, f.message
        elif f.code == "ROC503":
            assert f.fix.applicability is Applicability.SAFE
        else:
            assert f.fix.applicability is Applicability.DISPLAY_ONLY
    report = assert_fix_properties(original, select=SELECT, path=str(path))
    assert_fix_properties(original, select=SELECT, unsafe=True, path=str(path))
    if expected is None:
        assert report.fixed is None
    else:
        assert report.fixed == _expected_bytes(expected)


def test_unsafe_fix_of_the_unmasked_kernel():
    path = DIRECTORY / "unmasked.py"
    report = fix(path.read_bytes(), select=SELECT, unsafe=True, path=str(path))
    assert report.fixed == _expected_bytes(DIRECTORY / "unmasked.unsafe.expected.py")


def test_ascend_backend_is_out_of_scope():
    assert not lint(ASCEND.read_bytes(), select=SELECT, path=str(ASCEND))
    # the same code elsewhere is a finding (ROC501 and ROC503)
    found = lint(ASCEND.read_bytes(), select=SELECT, path="ops/kernels.py")
    assert sorted(f.code for f in found) == ["ROC501", "ROC503"]


def test_unknown_config_wrapper_makes_the_fix_unsafe():
    src = ("import triton\nimport triton.language as tl\nfrom helpers import pick\n\n"
           "@triton.autotune(configs=pick([triton.Config({'BLOCK_N': 32}), triton.Config({'BLOCK_N': 128})]),"
           " key=['n'])\n@triton.jit\ndef k(x_ptr, n, BLOCK_N: tl.constexpr):\n"
           "    offs = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)\n"
           "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n")
    (finding,) = lint(src, select=SELECT)
    assert finding.code == "ROC501" and finding.fix.applicability is Applicability.UNSAFE
    plain = src.replace("pick(", "(")
    (finding,) = lint(plain, select=SELECT)
    assert finding.fix.applicability is Applicability.SAFE


def test_grid_that_does_not_follow_the_block_is_unsafe():
    src = ("import triton\nimport triton.language as tl\n\n@triton.jit\n"
           "def k(x_ptr, n, BLOCK: tl.constexpr):\n"
           "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
           "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)\n\n"
           "def f(x, n, programs):\n    k[(programs,)](x, n, BLOCK=32)\n")
    (finding,) = lint(src, select=SELECT)
    assert finding.fix.applicability is Applicability.UNSAFE


def test_multi_dim_tile_of_64_or_more_is_fine():
    src = ("import triton\nimport triton.language as tl\n\n@triton.autotune(configs=["
           "triton.Config({'BLOCK_M': 16, 'BLOCK_N': 4}), triton.Config({'BLOCK_M': 8, 'BLOCK_N': 4})], key=[])\n"
           "@triton.jit\ndef k(x, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):\n"
           "    t = tl.arange(0, BLOCK_M)[:, None] + tl.arange(0, BLOCK_N)[None, :]\n    tl.store(x + t, 0.0)\n")
    found = lint(src, select=SELECT)
    assert [f.code for f in found] == ["ROC502"]
    assert "8 x 4" in found[0].message


def test_docs():
    for code in ("ROC501", "ROC502", "ROC503", "ROC504", "ROC505"):
        rule = get(code)
        text = rule.doc()
        assert rule.SUMMARY and rule.WHAT and rule.WHY and rule.EXAMPLE and rule.FIX_APPLICABILITY
        assert "## Fix" in text
        # an imported kernel's launch need not say "triton": ROC503 also wakes on num_warps
        assert set(rule.TRIGGERS) == ({"triton", "num_warps"} if code == "ROC503" else {"triton"})
        if rule.FIX_APPLICABILITY is not Applicability.DISPLAY_ONLY:
            assert rule.FIXED_EXAMPLE
        # the documented example triggers the rule
        assert code in [f.code for f in lint(textwrap.dedent(rule.EXAMPLE).strip() + "\n", select=[code])]


# ------------------------------------------------------------------------------------------
# Proof by execution (Triton's interpreter on CPU)
# ------------------------------------------------------------------------------------------

HAVE_TRITON = importlib.util.find_spec("triton") is not None and importlib.util.find_spec("numpy") is not None
needs_triton = pytest.mark.skipif(not HAVE_TRITON, reason="triton (and numpy, for its interpreter) not installed")

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
    result[label] = {"gate": getattr(module, "is_rocm", None),
                     "outputs": [module.run(n).tolist() for n in sizes]}
print("RESULT" + json.dumps(result))
'''


def _execute(tmp_path: Path, name: str, sizes, unsafe: bool = False):
    path = DIRECTORY / name
    report = fix(path.read_bytes(), select=SELECT, unsafe=unsafe, path=str(path))
    assert report.fixed is not None
    original = tmp_path / f"original_{name}"
    fixed = tmp_path / f"fixed_{name}"
    original.write_bytes(path.read_bytes())
    fixed.write_bytes(report.fixed)
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", RUNNER, str(original), str(fixed), json.dumps(sizes)],
                          capture_output=True, text=True, env=env, timeout=240, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


@needs_triton
@pytest.mark.parametrize("name", SAFE_BLOCK_FIXTURES)
def test_safe_block_fix_keeps_results(tmp_path, name):
    """Original, fixed on NVIDIA and fixed with ROCm values give identical outputs on sizes
    that are not multiples of either block."""
    sizes = [1, 37, 100, 131]
    result = _execute(tmp_path, name, sizes)
    assert result["nvidia"]["gate"] is False and result["rocm"]["gate"] is True
    assert result["original"]["outputs"] == result["nvidia"]["outputs"] == result["rocm"]["outputs"]
    # the kernel really ran: every output element was written
    for n, out in zip(sizes, result["original"]["outputs"]):
        assert len(out) == n


@needs_triton
def test_unmasked_kernel_shows_why_the_fix_is_unsafe(tmp_path):
    """The unmasked kernel is correct for sizes that are multiples of 32 on NVIDIA; with the
    block grown to 64 on ROCm it writes past the n elements (into the guard region)."""
    sizes = [32, 96]
    result = _execute(tmp_path, "unmasked.py", sizes, unsafe=True)
    assert result["original"]["outputs"] == result["nvidia"]["outputs"]
    for n, before, after in zip(sizes, result["original"]["outputs"], result["rocm"]["outputs"]):
        assert before[:n] == [float(i) + 1.0 for i in range(n)]
        assert before[n:] == [-1.0] * 64  # the guard is intact
        assert after[:n] == before[:n]
        assert after[n:n + 32] != [-1.0] * 32  # the grown block wrote out of range


def test_launches_on_other_accelerators_branches_are_left_to_them():
    """A launch under a test for another accelerator (a device type, a flag, an availability
    call) runs only there: the one platform analysis says so for every Triton rule."""
    src = textwrap.dedent('''\
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs))


        def launch(x):
            if x.device.type == "npu":
                k[(1,)](x, BLOCK=32)
            elif torch.xpu.is_available():
                k[(1,)](x, BLOCK=32)
            else:
                k[(1,)](x, BLOCK=32)
        ''')
    assert [(f.code, f.start.row) for f in lint(src, select=["ROC501"])] == [("ROC501", 18)]
