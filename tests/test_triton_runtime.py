"""ROC513-ROC515 (Triton shapes and integers decided at run time): fixtures, a multi-module
project whose kernels are launched from other modules, the cache keys that follow those
launches, the value provenance of ``rocmport.analysis.triton_values``, and the facts the
rules' docs state, checked with Triton 3.9's compiler (no GPU needed): ``tl.arange`` rejects a
non-power-of-two extent for gfx942 and sm_90 alike, a run-time shift compiles to NVIDIA's
``shl.b32`` and AMD's ``v_lshlrev_b32`` with no range check, and a dot whose operand dtype
differs on one branch fails on both."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocmport.analysis.prescan import PREFILTER
from rocmport.analysis.triton_values import POW2, RUNTIME, UNKNOWN, ModuleValues, pow2_checks
from rocmport.cache import Cache
from rocmport.config import Settings
from rocmport.findings import Applicability
from rocmport.registry import get
from rocmport.runner import check_files

from .harness import FIXTURES, assert_fix_properties, fix, fixture_pairs, lint
from .test_triton_launch import needs_triton

CODES = ["ROC513", "ROC514", "ROC515"]
DIRECTORY = FIXTURES / "triton_launch" / "runtime"
PROJECT = FIXTURES / "triton_launch" / "runtime_project"
# fixture -> (line, code) of every finding with the three rules selected (all display-only)
EXPECTED = {
    "moe_router.py": [(20, "ROC513")],
    "expert_bitmask.py": [(18, "ROC514")],
    "dot_precision.py": [(25, "ROC515")],
}


# -- fixtures ---------------------------------------------------------------------------------

def test_every_fixture_is_listed():
    assert sorted(p.name for p, _ in fixture_pairs("triton_launch/runtime")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture(name):
    path = DIRECTORY / name
    data = path.read_bytes()
    found = lint(data, select=CODES, path=str(path))
    assert [(f.start.row, f.code) for f in found] == EXPECTED[name]
    assert all(f.fix.applicability is Applicability.DISPLAY_ONLY for f in found)
    report = assert_fix_properties(data, select=CODES, path=str(path))
    assert report.fixed is None


def test_rule_515_is_off_by_default_and_the_others_on():
    assert not get("ROC515").DEFAULT_ENABLED
    assert get("ROC513").DEFAULT_ENABLED and get("ROC514").DEFAULT_ENABLED
    path = DIRECTORY / "dot_precision.py"
    assert not [f for f in lint(path.read_bytes(), path=str(path)) if f.code == "ROC515"]


def _sources():
    for code in CODES:
        rule = get(code)
        for i, case in enumerate(rule.INVALID + rule.VALID):
            yield pytest.param(case.code, id=f"{code}-{i}")
    for path, _ in fixture_pairs("triton_launch/runtime"):
        yield pytest.param(path.read_text(), id=path.name)


@pytest.mark.parametrize("source", list(_sources()))
def test_prefilter_changes_no_finding(source):
    def findings():
        return [(f.code, f.start.row, f.start.column, f.message) for f in lint(source, select=CODES)]

    with_filter = findings()
    PREFILTER["enabled"] = False
    try:
        without = findings()
    finally:
        PREFILTER["enabled"] = True
    assert with_filter == without


# -- across modules ---------------------------------------------------------------------------

def _files(root: Path):
    return sorted(str(p) for p in root.rglob("*.py"))


def _lint(root: Path, cache=None):
    reports = check_files(_files(root), Settings(select=("ROC513",)), jobs=1, cache=cache)
    return sorted((Path(r.path).relative_to(root).as_posix(), f.start.row, f.message) for r in reports
                  for f in r.findings)


def test_kernels_launched_from_other_modules():
    found = _lint(PROJECT)
    assert [(path, row) for path, row, _ in found] == [("serving/moe/kernels.py", 11), ("serving/moe/kernels.py", 21)]
    # the router's block is the expert count, through a package re-export and wrap_triton(...)
    assert "launched with `BLOCK_SIZE` in `serving.moe.api` line 16, a tensor's shape (`logits.shape`)" in found[0][2]
    # HEAD comes from a config dict that a helper of another module returns
    assert "in `serving.moe.api` line 22, a tensor's shape (`x.shape[-1]`)" in found[1][2]
    # K_ALIGNED is rounded; HEAD_DIM is asserted to be one of (64, 128, 256); the KV-cache
    # block size is validated by serving/engine_config.py: none of them is a finding


def test_the_kernel_file_alone_shows_nothing():
    path = PROJECT / "serving" / "moe" / "kernels.py"
    assert lint(path.read_bytes(), select=["ROC513"], path=str(path)) == []


def test_a_kv_cache_block_size_is_a_finding_unless_the_project_checks_it(tmp_path):
    root = tmp_path / "p"
    shutil.copytree(PROJECT, root)
    (root / "serving" / "engine_config.py").unlink()
    found = _lint(root)
    kv = [message for path, row, message in found if path == "serving/attention/kernels.py"]
    assert len(kv) == 1 and "a KV-cache block size" in kv[0] and "544" in kv[0]


def test_cached_kernel_files_follow_their_launchers(tmp_path):
    root = tmp_path / "p"
    shutil.copytree(PROJECT, root)
    cache = Cache(tmp_path / "cache", Settings(select=("ROC513",)))
    assert len(_lint(root, cache)) == 2
    api = root / "serving" / "moe" / "api.py"
    api.write_text(api.read_text().replace("BLOCK_SIZE = num_experts", "BLOCK_SIZE = triton.next_power_of_2(num_experts)"))
    assert [(p, r) for p, r, _ in _lint(root, cache)] == [("serving/moe/kernels.py", 21)]
    # a new launcher anywhere in the project reaches the cached kernel file
    (root / "serving" / "moe" / "extra.py").write_text(
        "import torch\nfrom serving.moe.kernels import fused_router_kernel\n\n"
        "def route(logits, out, e):\n    fused_router_kernel[(1,)](logits, out, e, 2, e, 2)\n")
    rows = [(p, r) for p, r, _ in _lint(root, cache)]
    assert ("serving/moe/kernels.py", 11) in rows
    # the project's check of its block size goes: the cached attention kernel file is re-linted
    (root / "serving" / "engine_config.py").write_text("BLOCK_SIZE = 16\n")
    assert ("serving/attention/kernels.py", 11) in [(p, r) for p, r, _ in _lint(root, cache)]


# -- value provenance -------------------------------------------------------------------------

def _launch_values(source: str):
    tree = ast.parse(source)
    values = ModuleValues(tree, "m")
    (launch,) = values.launches()
    return {k: v for k, (v, _) in launch.keywords.items()}, [v for v, _ in launch.positional]


@pytest.mark.parametrize("expr,kind", [
    ("64", POW2), ("48", "const"), ("triton.next_power_of_2(n)", POW2), ("max(triton.next_power_of_2(n), 16)", POW2),
    ("1 << k", POW2), ("2 ** k", POW2), ("16 * 4", POW2), ("x.itemsize", POW2), ("x.shape[1]", RUNTIME),
    ("x.size(0)", RUNTIME), ("x.numel()", RUNTIME), ("len(x)", RUNTIME), ("n", RUNTIME), ("n // 2", RUNTIME),
    ("min(n, 64)", RUNTIME), ("cfg.num_experts", RUNTIME), ("cfg.BLOCK_M", UNKNOWN), ("BLOCK_N", UNKNOWN),
    ("int(x.shape[0])", RUNTIME), ("64 if big else 32", POW2), ("n if big else 32", RUNTIME),
])
def test_a_launch_value(expr, kind):
    keywords, _ = _launch_values(f"import triton\nfrom kernels import kern\ndef go(x, n, k, cfg, big, BLOCK_N):\n    kern[(1,)](x, B={expr})\n")
    assert keywords["B"].kind == kind, keywords["B"]


def test_values_follow_assignments_callers_and_checks():
    source = """\
import triton
from kernels import kern

def launch(x, n, BLOCK_SIZE=128):
    a = n
    a = triton.next_power_of_2(a)
    b = x.shape[0]
    if b > 4:
        b = 4
    assert n & (n - 1) == 0, "n must be a power of 2"
    kern[(1,)](x, A=a, B=b, C=n, D=BLOCK_SIZE)

def caller(x):
    helper(x, 32)

def helper(x, m):
    kern[(1,)](x, M=m)

class Fn:
    @staticmethod
    def forward(ctx, idx):
        ctx.topk = idx.shape[1]

    @staticmethod
    def backward(ctx, grad):
        kern[(1,)](grad, T=ctx.topk)
"""
    values = ModuleValues(ast.parse(source), "m")
    first, second, third = values.launches()
    kinds = {k: v.kind for k, (v, _) in first.keywords.items()}
    # the last assignment wins; a branch may reach; an assert checks n; a tile-like knob is unknown
    assert kinds == {"A": POW2, "B": RUNTIME, "C": POW2, "D": UNKNOWN}
    assert second.keywords["M"][0].kind == POW2  # the only caller passes 32
    topk = third.keywords["T"][0]
    assert topk.kind == RUNTIME and topk.subject == "topk" and "idx.shape[1]" in topk.why


def test_project_checks_of_a_power_of_two():
    tree = ast.parse("def f(c):\n    assert c.kernel_block_size & (c.kernel_block_size - 1) == 0\n"
                     "    if c.page_size not in (16, 32, 64):\n        raise ValueError('page size')\n"
                     "    assert c.block_size % 16 == 0\n")
    assert pow2_checks(tree, "block_size") == [2]
    assert pow2_checks(tree, "page_size") == [3]


# -- the facts the docs state, with Triton's compiler ---------------------------------------------

COMPILER = r'''
import json, sys, importlib.util
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TARGETS = {"gfx942": GPUTarget("hip", "gfx942", 64), "sm_90": GPUTarget("cuda", 90, 32)}

@triton.jit
def rows(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, offs)

@triton.jit
def shift(x_ptr, s_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs) << tl.load(s_ptr + offs))

spec = importlib.util.spec_from_file_location("dot_precision", sys.argv[1])
dot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dot)

def build(fn, signature, constexprs, target):
    try:
        return triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs), target=TARGETS[target])
    except Exception as exc:
        return "error: " + str(exc).replace("\n", " ")[-200:]

out = {}
for target in TARGETS:
    for n in (48, 64):
        found = build(rows, {"x_ptr": "*i32", "N": "constexpr"}, {"N": n}, target)
        out[f"arange{n}_{target}"] = found if isinstance(found, str) else "ok"
    compiled = build(shift, {"x_ptr": "*i32", "s_ptr": "*i32", "o_ptr": "*i32", "BLOCK": "constexpr"},
                     {"BLOCK": 64}, target)
    asm = compiled.asm.get("amdgcn") or compiled.asm.get("ptx")
    out[f"shift_{target}"] = [line.split()[0] for line in asm.splitlines() if "shl" in line and "%" in line
                              or "v_lshlrev_b32" in line]
    for flag in (True, False):
        found = build(dot._gemm, {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32", "A_BF16": "constexpr",
                                  "ACC_FP16": "constexpr", "BLOCK": "constexpr"},
                      {"A_BF16": flag, "ACC_FP16": False, "BLOCK": 16}, target)
        out[f"dot_{flag}_{target}"] = found if isinstance(found, str) else "ok"
print("RESULT" + json.dumps(out))
'''


@needs_triton
@pytest.mark.slow
def test_the_docs_facts_with_tritons_compiler(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(PYTHONWARNINGS="ignore", TRITON_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "compile_kernels.py"  # @triton.jit reads its source from a file
    script.write_text(COMPILER)
    done = subprocess.run([sys.executable, str(script), str(DIRECTORY / "dot_precision.py")], capture_output=True,
                          text=True, env=env, timeout=600, cwd=str(tmp_path))
    if done.returncode != 0 and "backend" in done.stderr.lower():
        pytest.skip("this Triton cannot compile for both backends here")
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    result = json.loads([l for l in done.stdout.splitlines() if l.startswith("RESULT")][-1][len("RESULT"):])
    for target in ("gfx942", "sm_90"):
        # ROC513: a non-power-of-two extent fails on AMD and NVIDIA alike
        assert "arange's range must be a power of 2" in result[f"arange48_{target}"]
        assert result[f"arange64_{target}"] == "ok"
        # ROC515: the configuration whose A operand is bf16 fails, the other compiles
        assert "Both operands must be same dtype" in result[f"dot_True_{target}"]
        assert result[f"dot_False_{target}"] == "ok"
    # ROC514: a shift by a loaded amount, with no range check, on either backend
    assert "v_lshlrev_b32_e64" in result["shift_gfx942"] or "v_lshlrev_b32_e32" in result["shift_gfx942"]
    assert "shl.b32" in result["shift_sm_90"]


def test_display_only_fixes_change_nothing():
    for name in EXPECTED:
        path = DIRECTORY / name
        assert fix(path.read_bytes(), select=CODES, path=str(path)).fixed is None
