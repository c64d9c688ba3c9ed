"""ROC2xx: fixtures (expected output, fix properties, near-misses) and execution with real
torch: the fixed module keeps the original values on NVIDIA and the ROCm ones on ROCm."""

from __future__ import annotations

import pytest

from .harness import FIXTURES, check_fixture_pair, codes, fix, fixture_pairs, lint

SELECT = ["ROC2"]
PAIRS = list(fixture_pairs("inductor_config"))


@pytest.mark.parametrize("path,expected", PAIRS, ids=[p.name for p, _ in PAIRS])
def test_fixture(path, expected):
    check_fixture_pair(path, expected, select=SELECT)


def test_every_spelling_is_found():
    found = codes((FIXTURES / "inductor_config" / "spellings.py").read_bytes(), select=SELECT)
    assert sorted(found) == sorted(["ROC201"] * 5 + ["ROC202"] + ["ROC203"] * 8 + ["ROC204"] * 2 + ["ROC205"] * 3)


def test_rows_of_spellings():
    rows = {(f.start.row, f.code) for f in lint((FIXTURES / "inductor_config" / "spellings.py").read_bytes(), select=SELECT)}
    assert {(8, "ROC201"), (9, "ROC203"), (10, "ROC202"), (11, "ROC205"), (12, "ROC204"), (13, "ROC203"),
            (14, "ROC201"), (16, "ROC203"), (22, "ROC203"), (25, "ROC203"), (31, "ROC201"), (31, "ROC204"),
            (33, "ROC201"), (35, "ROC205"), (39, "ROC203"), (40, "ROC205"), (48, "ROC203"), (48, "ROC201"),
            (51, "ROC203")} == rows


def test_options_key_of_roc103_is_not_reported_twice():
    src = 'import torch\nf = torch.compile(g, options={"triton.cudagraphs": True, "max_autotune": True})\n'
    assert sorted(codes(src)) == ["ROC103", "ROC203"]
    out = fix(src).fixed.decode()
    assert out.endswith('options={"triton.cudagraphs": not is_rocm, '
                        '"max_autotune": not is_rocm})\n')


def test_cudagraph_trees_false_is_neither_finding_nor_mitigation():
    src = ('import torch\ntorch._inductor.config.triton.cudagraph_trees = False\n'
           'f = torch.compile(g, mode="reduce-overhead")\n')
    assert codes(src) == ["ROC101"]


def test_names_torch_lacks_are_recognised():
    # torch 2.13 has these names; the rule must not ask torch: a fake sub-config path works too
    src = "import torch\nsetattr(torch._inductor.config, 'memory_planning', True)\n"
    assert codes(src, select=SELECT) == ["ROC205"]


def test_module_level_dict_used_in_nested_function():
    src = ('import torch\nOPTS = {"max_autotune": True}\n'
           'def outer():\n    def inner(m):\n        return torch.compile(m, options=OPTS)\n    return inner\n')
    assert codes(src, select=SELECT) == ["ROC203"]


def test_dynamo_config_look_alike_is_not_inductor():
    src = "import torch\ntorch._dynamo.config.max_autotune = True\nimport my.config as config\nconfig.max_autotune = True\n"
    assert codes(src, select=SELECT) == []


def test_gate_name_taken_uses_free_name():
    src = "import torch\nis_rocm = 3\ntorch._inductor.config.max_autotune = True\n"
    out = fix(src, select=SELECT).fixed.decode()
    assert "max_autotune = not _rocmport_is_rocm" in out


# ------------------------------------------------------------------------------------------
# Execution with real torch
# ------------------------------------------------------------------------------------------

PROBE = """{
    "cudagraphs": config.triton.cudagraphs, "trees": config.triton.cudagraph_trees,
    "max_autotune": config.max_autotune, "pointwise": config.max_autotune_pointwise,
    "gemm": config.max_autotune_gemm, "backends": config.max_autotune_gemm_backends,
    "memory_planning": config.memory_planning, "decorated": decorated(), "patched": patched(),
    "options": OPTIONS, "kwargs": kwargs()["options"], "setup": (setup(), config.max_autotune)[1],
}"""
ROCM_VALUES = {
    "cudagraphs": False, "trees": False, "max_autotune": False, "pointwise": False, "gemm": False,
    "backends": "ATEN", "memory_planning": False, "decorated": False, "patched": None,
    "options": {"max_autotune": False, "epilogue_fusion": True, "triton.cudagraphs": False, "memory_planning": False},
    "kwargs": {"max_autotune": False, "triton.cudagraphs": False}, "setup": False,
}


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    pytest.importorskip("torch")
    from .exec_harness import run_module

    directory = tmp_path_factory.mktemp("config_exec")
    original = (FIXTURES / "inductor_config" / "spellings.py").read_bytes()
    fixed = fix(original, select=SELECT).fixed
    (directory / "original.py").write_bytes(original)
    (directory / "fixed.py").write_bytes(fixed)
    return {(name, rocm): run_module(directory / f"{name}.py", rocm, PROBE)
            for name in ("original", "fixed") for rocm in (False, True)}


def test_nvidia_path_keeps_original_values(executed):
    assert executed[("fixed", False)] == executed[("original", False)]
    assert executed[("original", False)]["cudagraphs"] == 1 and executed[("original", False)]["max_autotune"] is True


def test_rocm_path_gets_rocm_values(executed):
    assert executed[("fixed", True)] == ROCM_VALUES
    assert executed[("original", True)]["max_autotune"] is True  # the hazard, without the fix
