"""Fix at the source (issue 29): a compile mode is gated once where the project decides it (a
config default, a constant, an argparse option), not at every compile call that reads it; the
call sites change only where the value is decided there. Near misses: a value also read for
something else, a value decided where the index cannot follow, a place ROC105 may not fix
(off for that file, suppressed), a test module's value. The fixed package runs the same on the
NVIDIA path (real torch)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rocmport.cache import Cache
from rocmport.config import Settings, load_settings
from rocmport.runner import check_files

from .exec_harness import run_module

CONFIG = """\
    from dataclasses import dataclass, field


    @dataclass
    class PolicyConfig:
        compile_model: bool = True
        compile_mode: str = "max-autotune"
        n_steps: int = field(default=4)
    """

MODEL = """\
    import torch

    from app.config import PolicyConfig


    class Policy(torch.nn.Module):
        def __init__(self, config: PolicyConfig):
            super().__init__()
            if config.compile_model:
                self.sample = torch.compile(self.sample, mode=config.compile_mode)
                self.forward = torch.compile(self.forward, mode=config.compile_mode)

        def sample(self, x):
            return x
    """


def _write(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _run(root: Path, only=None, fix=True, **settings):
    files = sorted(str(p) for p in root.rglob("*.py")) if only is None else [str(root / n) for n in only]
    return list(check_files(files, Settings().with_overrides(**settings) if settings else Settings(), jobs=1,
                            fix=fix))



def _fix(root: Path, only=None, **settings) -> dict:
    """``rocmport fix --write`` over the tree (or the files ``only`` names): what changed."""
    changed = {}
    for report in _run(root, only, **settings):
        assert report.internal_error is None, report.internal_error
        if report.fixed is not None and report.fixed != report.original:
            Path(report.path).write_bytes(report.fixed)
            changed[Path(report.path).relative_to(root).as_posix()] = report.fixed.decode()
    return changed


def _codes(root: Path, only=None, **settings) -> dict:
    out = {}
    for report in _run(root, only, fix=False, **settings):
        assert report.internal_error is None, report.internal_error
        for f in report.findings:
            out.setdefault(Path(report.path).relative_to(root).as_posix(), []).append(f.code)
    return out


def _app(tmp_path: Path, **files) -> Path:
    base = {"app/__init__.py": "", "app/config.py": CONFIG, "app/model.py": MODEL}
    base.update({f"app/{k}.py": v for k, v in files.items()})
    return _write(tmp_path, base)


def test_a_config_default_is_gated_once_and_the_compile_calls_are_left_alone(tmp_path):
    root = _app(tmp_path)
    assert _codes(root) == {"app/config.py": ["ROC105"]}
    changed = _fix(root)
    assert list(changed) == ["app/config.py"]
    assert 'compile_mode: str = "max-autotune-no-cudagraphs" if is_rocm else "max-autotune"' in changed["app/config.py"]
    assert _codes(root) == {}
    assert _fix(root) == {}


def test_the_message_names_the_compile_calls_in_the_other_module(tmp_path):
    root = _app(tmp_path)
    (report,) = [r for r in _run(root, fix=False) if r.path.endswith("config.py")]
    (finding,) = report.findings
    assert "the mode torch.compile gets at app/model.py:10 and 1 more" in finding.message
    assert finding.fix.applicability.value == "safe"


@pytest.mark.slow
def test_the_fixed_package_runs_the_same_on_the_nvidia_path(tmp_path):
    root = _app(tmp_path)
    _fix(root)
    driver = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(root)!r})
        import torch
        seen = []
        torch.compile = lambda fn=None, **kw: seen.append(kw) or fn
        from app.config import PolicyConfig
        from app.model import Policy
        Policy(PolicyConfig())
        seen.append(PolicyConfig(compile_mode="reduce-overhead").compile_mode)  # a user's choice stays
        """)
    assert run_module(driver, rocm=False, probe="seen") == [{"mode": "max-autotune"}] * 2 + ["reduce-overhead"]
    assert run_module(driver, rocm=True, probe="seen") == [{"mode": "max-autotune-no-cudagraphs"}] * 2 + [
        "reduce-overhead"]


def test_a_value_also_compared_elsewhere_is_fixed_at_the_calls_without_unsafe_fixes(tmp_path):
    """Gating the default would change `if config.compile_mode == ...` on ROCm too: the source
    fix is unsafe, so the safe run maps the compile calls as before."""
    root = _app(tmp_path, train="""\
        from app.config import PolicyConfig


        def warmup_steps(config: PolicyConfig):
            return 3 if config.compile_mode == "max-autotune" else 1
        """)
    codes = _codes(root)
    assert codes["app/config.py"] == ["ROC105"] and codes["app/model.py"] == ["ROC104", "ROC104"]
    (config,) = [r for r in _run(root, fix=False) if r.path.endswith("config.py")]
    assert "it is also compared (app/train.py:5)" in config.findings[0].message
    assert config.findings[0].fix.applicability.value == "unsafe"
    changed = _fix(root)
    assert sorted(changed) == ["app/model.py"]
    assert "if is_rocm else config.compile_mode" in changed["app/model.py"]


def test_with_unsafe_fixes_the_source_is_gated_and_the_calls_left(tmp_path):
    root = _app(tmp_path, train="""\
        from app.config import PolicyConfig


        def warmup_steps(config: PolicyConfig):
            return 3 if config.compile_mode == "max-autotune" else 1
        """)
    changed = _fix(root, unsafe_fixes=True)
    assert sorted(changed) == ["app/config.py"]


def test_a_value_decided_where_the_index_cannot_follow_is_fixed_at_the_call(tmp_path):
    """The model module alone: nothing rocmport reads decides `compile_mode` (the config is a
    library's, or a file not checked): the compile calls are fixed where they are."""
    root = _app(tmp_path)
    assert _codes(root, only=["app/model.py"]) == {"app/model.py": ["ROC104", "ROC104"]}
    changed = _fix(root, only=["app/model.py"])
    assert sorted(changed) == ["app/model.py"]


def test_a_value_no_file_of_the_project_decides_is_fixed_at_the_call(tmp_path):
    root = _app(tmp_path, model=MODEL.replace("from app.config import PolicyConfig",
                                              "from transformers import PretrainedConfig as PolicyConfig"))
    assert _codes(root)["app/model.py"] == ["ROC104", "ROC104"]


@pytest.mark.parametrize("how", ["noqa", "ignored"])
def test_a_place_rocmport_may_not_fix_leaves_the_calls_to_roc104(tmp_path, how):
    """ROC105 suppressed at the default, or off for its file: nothing would gate the source, so
    the compile calls are fixed where they are."""
    config = CONFIG.replace('"max-autotune"', '"max-autotune"  # noqa: ROC105') if how == "noqa" else CONFIG
    root = _app(tmp_path, config=config)
    settings = Settings()
    if how == "ignored":
        (root / "pyproject.toml").write_text('[tool.rocmport]\nper-file-ignores = { "app/config.py" = ["ROC105"] }\n')
        settings = load_settings(root)
    reports = check_files(sorted(str(p) for p in root.rglob("*.py")), settings, jobs=1, fix=False)
    codes = {Path(r.path).name: [f.code for f in r.findings] for r in reports if r.findings}
    assert codes == {"model.py": ["ROC104", "ROC104"]}, codes


def test_a_test_modules_value_does_not_decide_for_the_library(tmp_path):
    """`config.compile_mode = COMPILE_MODE` in a test decides the value for that test only: the
    library's call sites follow the library's default (gated), the test's constant is reported
    in the test."""
    root = _app(tmp_path)
    _write(root, {
        "tests/__init__.py": "",
        "tests/test_policy.py": """\
            import pytest

            from app.config import PolicyConfig
            from app.model import Policy

            COMPILE_MODE = "reduce-overhead"


            def test_compiled():
                config = PolicyConfig()
                config.compile_mode = COMPILE_MODE
                Policy(config)
            """,
    })
    codes = _codes(root)
    assert "app/model.py" not in codes
    assert codes["app/config.py"] == ["ROC105"]


def test_a_stored_name_is_followed_to_the_field_it_is_stored_into(tmp_path):
    """`PolicyConfig(compile_mode=DEFAULT_MODE)`: the constant reaches the field, whose every
    reader is a compile call: the constant is where it is decided."""
    root = _app(tmp_path, config=CONFIG.replace('"max-autotune"', '"default"'), factory="""\
        from app.config import PolicyConfig

        DEFAULT_MODE = "max-autotune"


        def make():
            return PolicyConfig(compile_mode=DEFAULT_MODE)
        """)
    codes = _codes(root)
    assert codes == {"app/factory.py": ["ROC105"]}, codes
    changed = _fix(root)
    assert sorted(changed) == ["app/factory.py"]
    assert 'DEFAULT_MODE = "max-autotune-no-cudagraphs" if is_rocm else "max-autotune"' in changed["app/factory.py"]


def test_cached_findings_follow_a_reader_added_in_another_module(tmp_path):
    """The compile calls' findings depend on every file that names the stored value: a
    comparison added elsewhere makes the source fix unsafe, and the calls are reported again
    (the lint cache does not keep the old answer)."""
    root = _app(tmp_path)

    def lint():
        cache = Cache(tmp_path / "cache", Settings())
        reports = check_files(sorted(str(p) for p in root.rglob("*.py")), Settings(), jobs=1, fix=False, cache=cache)
        return {Path(r.path).name: [f.code for f in r.findings] for r in reports if r.findings}

    assert lint() == {"config.py": ["ROC105"]}
    assert lint() == {"config.py": ["ROC105"]}  # from the cache
    _write(root, {"app/train.py": """\
        def steps(config):
            return 3 if config.compile_mode == "max-autotune" else 1
        """})
    assert lint() == {"config.py": ["ROC105"], "model.py": ["ROC104", "ROC104"]}


# -- the project's own wrapper around torch.compile ----------------------------------------

UTILS = """\
    import torch


    def compile_with_warmup(fn, mode=None, warmup=1):
        compiled = torch.compile(fn, mode=mode)
        for _ in range(warmup):
            compiled()
        return compiled
    """

CALLERS = """\
    import torch

    from app.utils import compile_with_warmup


    def step():
        return 1


    fast = compile_with_warmup(step, mode="reduce-overhead")
    tuned = compile_with_warmup(step, mode="max-autotune", warmup=2)
    plain = compile_with_warmup(step)
    direct = torch.compile(step, mode="reduce-overhead")
    """


def test_the_projects_wrapper_is_gated_once_inside_and_a_direct_call_beside_it_at_its_site(tmp_path):
    root = _write(tmp_path, {"app/__init__.py": "", "app/utils.py": UTILS, "app/callers.py": CALLERS})
    found = _codes(root)
    assert found == {"app/callers.py": ["ROC101"], "app/utils.py": ["ROC104"]}, found
    changed = _fix(root)
    assert sorted(changed) == ["app/callers.py", "app/utils.py"]
    assert '.get(mode, mode) if is_rocm else mode)' in changed["app/utils.py"]
    callers = changed["app/callers.py"]
    assert 'fast = compile_with_warmup(step, mode="reduce-overhead")' in callers  # left: the wrapper maps it
    assert 'direct = torch.compile(step, mode="default" if is_rocm else "reduce-overhead")' in callers
    assert _codes(root) == {} and _fix(root) == {}


@pytest.mark.slow
def test_the_gated_wrapper_runs_the_same_on_the_nvidia_path(tmp_path):
    root = _write(tmp_path, {"app/__init__.py": "", "app/utils.py": UTILS, "app/callers.py": CALLERS})
    _fix(root)
    driver = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(root)!r})
        import torch
        seen = []
        torch.compile = lambda fn=None, **kw: seen.append(kw.get("mode")) or fn
        import app.callers
        """)
    assert run_module(driver, rocm=False, probe="seen") == ["reduce-overhead", "max-autotune", None, "reduce-overhead"]
    assert run_module(driver, rocm=True, probe="seen") == ["default", "max-autotune-no-cudagraphs", None, "default"]


def test_a_wrapper_that_forwards_kwargs_leaves_the_fix_at_each_caller(tmp_path):
    """`torch.compile(fn, **kwargs)`: no parameter to map inside; the callers' literals are where
    the mode is decided."""
    utils = UTILS.replace("def compile_with_warmup(fn, mode=None, warmup=1):", "def compile_with_warmup(fn, warmup=1, **kwargs):")
    utils = utils.replace("torch.compile(fn, mode=mode)", "torch.compile(fn, **kwargs)")
    root = _write(tmp_path, {"app/__init__.py": "", "app/utils.py": utils, "app/callers.py": CALLERS})
    assert _codes(root) == {"app/callers.py": ["ROC101", "ROC102", "ROC101"]}


def test_a_wrapper_no_caller_hands_a_cuda_graph_mode_is_left_alone(tmp_path):
    callers = CALLERS.replace('fast = compile_with_warmup(step, mode="reduce-overhead")',
                              'fast = compile_with_warmup(step, mode="default")').replace(
        'mode="max-autotune", warmup=2', 'mode="max-autotune-no-cudagraphs", warmup=2')
    root = _write(tmp_path, {"app/__init__.py": "", "app/utils.py": UTILS, "app/callers.py": callers})
    assert _codes(root) == {"app/callers.py": ["ROC101"]}  # only the direct call


def test_a_wrapper_whose_callers_hand_it_a_stored_default_follows_that_default(tmp_path):
    """`compile_with_warmup(step, mode=cfg.compile_mode)`: the value is decided (and gated by
    ROC105) where it is stored; the wrapper needs no mapping."""
    root = _app(tmp_path, utils=UTILS, model=MODEL.replace(
        "torch.compile(self.sample, mode=config.compile_mode)",
        "compile_with_warmup(self.sample, mode=config.compile_mode)").replace(
        "from app.config import PolicyConfig",
        "from app.config import PolicyConfig\n    from app.utils import compile_with_warmup"))
    assert _codes(root) == {"app/config.py": ["ROC105"]}


def test_with_roc104_off_for_the_wrapper_the_callers_are_fixed(tmp_path):
    root = _write(tmp_path, {"app/__init__.py": "", "app/utils.py": UTILS, "app/callers.py": CALLERS,
                             "pyproject.toml": '[tool.rocmport]\nper-file-ignores = { "app/utils.py" = ["ROC104"] }\n'})
    reports = check_files(sorted(str(p) for p in root.rglob("*.py")), load_settings(root), jobs=1, fix=False)
    codes = {Path(r.path).name: [f.code for f in r.findings] for r in reports if r.findings}
    assert codes == {"callers.py": ["ROC101", "ROC102", "ROC101"]}, codes


# -- a Triton helper that decides num_warps for every launch (ROC503) ------------------------

SETTINGS = """\
    import triton


    def calculate_settings(n):
        block = triton.next_power_of_2(n)
        num_warps = 4
        if block >= 32768:
            num_warps = 32
        elif block >= 8192:
            num_warps = 16
        return block, num_warps
    """


def test_the_helper_that_decides_num_warps_is_gated_once(tmp_path):
    root = _write(tmp_path, {"kern/__init__.py": "", "kern/utils.py": SETTINGS, "kern/norm.py": """\
        import triton
        import triton.language as tl

        from kern.utils import calculate_settings


        @triton.jit
        def _norm(x, BLOCK: tl.constexpr):
            pass


        def norm(x, n):
            block, num_warps = calculate_settings(n)
            _norm[(1,)](x, BLOCK=block, num_warps=num_warps)
        """})
    assert _codes(root) == {"kern/utils.py": ["ROC503"]}
    changed = _fix(root)
    assert list(changed) == ["kern/utils.py"] and "num_warps = 16 if is_rocm else 32" in changed["kern/utils.py"]


@pytest.mark.slow
def test_the_gated_helper_runs_the_same_on_the_nvidia_path(tmp_path):
    pytest.importorskip("triton")
    root = _write(tmp_path, {"kern/__init__.py": "", "kern/utils.py": SETTINGS})
    _fix(root)
    driver = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(root)!r})
        from kern.utils import calculate_settings
        seen = [calculate_settings(n) for n in (100, 4000, 10000, 40000)]
        """)
    nvidia = [[128, 4], [4096, 4], [16384, 16], [65536, 32]]
    assert run_module(driver, rocm=False, probe="seen") == nvidia
    assert run_module(driver, rocm=True, probe="seen") == nvidia[:3] + [[65536, 16]]


# -- a test parameter: `@pytest.mark.parametrize("mode", [None, "reduce-overhead"])` ---------

PARAMETRIZED = """\
    import pytest
    import torch


    @pytest.mark.parametrize("mode", ["max-autotune-no-cudagraphs", "reduce-overhead"])
    class TestCompiled:
        def test_add(self, mode):
            f = torch.compile(lambda x: x + 1, mode=mode)
            assert f(1) == 2

        def test_mul(self, mode):
            g = torch.compile(lambda x: x * 2, mode=mode, fullgraph=mode is not None)
            assert g(2) == 4


    @pytest.mark.parametrize("compile_mode,threads", [(False, None), ("reduce-overhead", 4)])
    def test_threads(compile_mode, threads):
        if compile_mode:
            torch.compile(lambda x: x, mode=compile_mode)
    """


def test_a_parametrized_mode_is_gated_at_the_decorator_once_for_every_test(tmp_path):
    root = _write(tmp_path, {"tests/test_compiled.py": PARAMETRIZED})
    assert _codes(root) == {"tests/test_compiled.py": ["ROC105", "ROC105"]}
    (text,) = _fix(root).values()
    assert ('@pytest.mark.parametrize("mode", ["max-autotune-no-cudagraphs", "default" if is_rocm else'
            ' "reduce-overhead"])') in text
    assert '[(False, None), ("default" if is_rocm else "reduce-overhead", 4)]' in text
    assert text.count("mode=mode") == 2 and "mode=compile_mode)" in text  # the calls are left alone


def test_a_parametrized_mode_also_compared_is_fixed_at_each_call(tmp_path):
    """`if mode == "reduce-overhead": pytest.skip(...)`: gating the value would change what the
    test skips on ROCm, so the source fix is unsafe and the calls are mapped."""
    src = PARAMETRIZED.replace("            assert f(1) == 2",
                               '            if mode == "reduce-overhead":\n                pytest.skip("slow")\n'
                               "            assert f(1) == 2")
    root = _write(tmp_path, {"tests/test_compiled.py": src})
    codes = _codes(root)["tests/test_compiled.py"]
    assert codes.count("ROC104") == 2 and codes.count("ROC105") == 2


@pytest.mark.slow
def test_the_gated_parameter_collects_the_same_tests_on_nvidia(tmp_path):
    root = _write(tmp_path, {"tests/test_compiled.py": PARAMETRIZED})
    _fix(root)
    driver = textwrap.dedent(f"""\
        import runpy
        import torch
        ns = runpy.run_path({str(root / "tests" / "test_compiled.py")!r})
        seen = [ns["TestCompiled"].pytestmark[0].args[1], ns["test_threads"].pytestmark[0].args[1]]
        """)
    assert run_module(driver, rocm=False, probe="seen") == [["max-autotune-no-cudagraphs", "reduce-overhead"],
                                                            [[False, None], ["reduce-overhead", 4]]]
    assert run_module(driver, rocm=True, probe="seen") == [["max-autotune-no-cudagraphs", "default"],
                                                           [[False, None], ["default", 4]]]


@pytest.mark.parametrize("offered", [
    'parser.add_argument("--compile-mode", default="default", choices=["default", "reduce-overhead"])',
])
def test_an_option_that_offers_a_cuda_graph_mode_is_mapped_at_the_call(tmp_path, offered):
    """The default is clean, but the project offers "reduce-overhead" among the choices: what the
    user picks reaches the compile call, which maps it at run time (nothing to gate at the
    source: the choices are the user's)."""
    root = _write(tmp_path, {"app/__init__.py": "", "app/main.py": f"""\
        import argparse

        import torch


        def main(model):
            parser = argparse.ArgumentParser()
            {offered}
            args = parser.parse_args()
            return torch.compile(model, mode=args.compile_mode)
        """})
    assert _codes(root) == {"app/main.py": ["ROC104"]}


def test_a_field_typed_with_the_modes_it_may_take_is_mapped_at_the_call(tmp_path):
    root = _app(tmp_path, config=CONFIG.replace('compile_mode: str = "max-autotune"',
                                                'compile_mode: Literal["default", "max-autotune"] = "default"').replace(
        "from dataclasses import dataclass, field", "from dataclasses import dataclass, field\n    from typing import Literal"))
    assert _codes(root) == {"app/model.py": ["ROC104", "ROC104"]}


def test_a_clean_option_without_cuda_graph_choices_is_left_alone(tmp_path):
    root = _write(tmp_path, {"app/__init__.py": "", "app/main.py": """\
        import argparse

        import torch


        def main(model):
            parser = argparse.ArgumentParser()
            parser.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
            args = parser.parse_args()
            return torch.compile(model, mode=args.compile_mode)
        """})
    assert _codes(root) == {}


def test_the_example_maps_the_prefill_mode_once_inside_its_compile_helper(tmp_path):
    """examples/train_and_generate.py: `--prefill-mode` offers "reduce-overhead" and reaches
    torch.compile through `setup` and `compile_for_decoding(model, mode)`: one decision, one
    finding and one mapping, inside the helper; the call that hands it the value stays."""
    source = (Path(__file__).resolve().parent.parent / "examples" / "train_and_generate.py").read_text(encoding="utf-8")
    root = _write(tmp_path, {"train_and_generate.py": source})
    findings = [f for r in _run(root, fix=False) for f in r.findings if f.code == "ROC104"]
    lines = source.splitlines()
    assert [lines[f.start.row - 1].strip() for f in findings] == ["prefill = torch.compile(model, mode=mode, dynamic=True)"]
    fixed = _fix(root, select=("ROC104",))["train_and_generate.py"]
    assert "state = setup(args.device, args.prefill_mode)\n" in fixed
    assert '"reduce-overhead": "default"' in fixed and fixed.count(".get(mode, mode) if is_rocm else mode") == 1
