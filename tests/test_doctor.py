"""`rocmport doctor` against the real torch 2.13 installed here, in subprocesses with a
controlled environment (torch reads its environment variables once, at import), and in a
Python where `import torch` fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rocmport.doctor import check_environment, needs_rng_patch, parse_version

REPO = Path(__file__).resolve().parents[1]
pytest.importorskip("torch")

# A wrapper that makes `import torch` fail, as in an environment without torch.
BLOCK_TORCH = textwrap.dedent("""
    import sys

    class _NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError("No module named 'torch'", name="torch")
            return None

    sys.meta_path.insert(0, _NoTorch())
    from rocmport.cli import main
    main(sys.argv[1:], prog_name="rocmport")
""")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TORCHINDUCTOR_", "TORCH_COMPILE_", "TORCHDYNAMO_"))}
    env.update(extra)
    return env


def start(*args, env=None, block_torch=False):
    cmd = [sys.executable, "-c", BLOCK_TORCH, "doctor", *args] if block_torch else \
        [sys.executable, "-m", "rocmport", "doctor", *args]
    return subprocess.Popen(cmd, cwd=REPO, env=env if env is not None else clean_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc):
    stdout, stderr = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def doctor(*args, env=None, block_torch=False):
    return finish(start(*args, env=env, block_torch=block_torch))


@pytest.fixture(scope="module")
def clean_runs(tmp_path_factory):
    """Text on stdout and JSON into --output-file, from a clean environment (run side by side:
    each imports torch and its inductor config, which takes seconds)."""
    out = tmp_path_factory.mktemp("doctor") / "doctor.json"
    text, as_json = start(), start("--output-format", "json", "--output-file", str(out))
    return finish(text), finish(as_json), out


RED_ENV = dict(TORCHINDUCTOR_MAX_AUTOTUNE="1", TORCHINDUCTOR_CUDAGRAPHS="1",
               TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS="ATEN,TRITON", TORCHINDUCTOR_FREEZING="1")


@pytest.fixture(scope="module")
def red_runs():
    text, as_json = start(env=clean_env(**RED_ENV)), start("--output-format", "json", env=clean_env(**RED_ENV))
    return finish(text), finish(as_json)


def setting(report, name):
    (row,) = [s for s in report["settings"] if s["name"] == name]
    return row


def test_clean_environment_text(clean_runs):
    proc = clean_runs[0]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    import torch

    assert f"torch   {torch.__version__}, build: CPU only" in out
    assert "inductor.triton.cudagraphs" in out and "dynamo.recompile_limit" in out
    assert "Dynamo RNG patch: not needed" in out
    assert out.rstrip().endswith("No red flags.")


def test_clean_environment_json_into_output_file(clean_runs):
    proc, out = clean_runs[1], clean_runs[2]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    report = json.loads(out.read_text(encoding="utf-8"))
    import torch

    assert report["torch"] == {"version": torch.__version__, "build": "cpu", "cuda": None, "hip": None, "gpus": []}
    assert report["red_flags"] == [] and report["environment"] == []
    assert report["rng_patch"]["needed"] is False
    expected = {  # torch 2.13's defaults (torch-facts.md)
        "inductor.max_autotune": False,
        "inductor.max_autotune_gemm_backends": "ATEN,TRITON,CPP",
        "inductor.triton.cudagraphs": False,
        "inductor.triton.cudagraph_trees": True,
        "inductor.memory_planning": False,
        "inductor.coordinate_descent_tuning": False,
        "inductor.freezing": False,
        "dynamo.recompile_limit": 8,
    }
    for name, value in expected.items():
        row = setting(report, name)
        assert row["value"] == value and row["source"] == "default", row
    assert any("thread-local" in note for note in report["notes"])


def test_red_flag_variables_are_reported_with_their_effect_and_exit_1(red_runs):
    text, proc = red_runs
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["red_flags"] == ["TORCHINDUCTOR_CUDAGRAPHS", "TORCHINDUCTOR_MAX_AUTOTUNE",
                                   "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS"]
    freezing = [e for e in report["environment"] if e["name"] == "TORCHINDUCTOR_FREEZING"]
    assert freezing and freezing[0]["red_flag"] is False
    # torch really read them: the values changed, and doctor says where they came from
    row = setting(report, "inductor.max_autotune")
    assert row["value"] is True and row["source"] == "environment: TORCHINDUCTOR_MAX_AUTOTUNE=1"
    assert setting(report, "inductor.triton.cudagraphs")["value"] is True
    row = setting(report, "inductor.max_autotune_gemm_backends")
    assert row["value"] == "ATEN,TRITON"
    assert row["source"] == "environment: TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS=ATEN,TRITON"
    assert setting(report, "inductor.freezing")["source"] == "environment: TORCHINDUCTOR_FREEZING=1"
    assert setting(report, "inductor.memory_planning")["source"] == "default"

    assert text.returncode == 1
    assert "RED FLAG TORCHINDUCTOR_CUDAGRAPHS=1: turns on triton.cudagraphs" in text.stdout
    assert "RED FLAG TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS=ATEN,TRITON: lets autotuning pick TRITON" in text.stdout
    assert "3 red flags: " in text.stdout


def test_safe_values_are_not_red_flags():
    found = check_environment({"TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "ATEN", "TORCHINDUCTOR_CUDAGRAPHS": "0",
                               "TORCHINDUCTOR_MAX_AUTOTUNE": ""})
    assert [(e.name, e.red_flag) for e in found] == [("TORCHINDUCTOR_CUDAGRAPHS", False),
                                                     ("TORCHINDUCTOR_MAX_AUTOTUNE", False),
                                                     ("TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS", False)]


def test_without_torch_it_says_so_and_exits_2():
    proc = doctor(block_torch=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "torch is not installed in this Python environment" in proc.stdout
    assert "Traceback" not in proc.stderr
    proc = doctor("--output-format", "json", block_torch=True, env=clean_env(TORCHINDUCTOR_CUDAGRAPHS="1"))
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    assert report["torch"] is None and "torch is not installed" in report["error"]
    assert report["red_flags"] == ["TORCHINDUCTOR_CUDAGRAPHS"]  # the environment is still checked


def test_versions_are_parsed_as_integer_tuples():
    assert parse_version("2.10.0a0+git1234") == (2, 10)
    assert parse_version("2.9.1+rocm6.2") == (2, 9)
    assert parse_version("nonsense") is None
    assert needs_rng_patch("2.9.1") is True
    assert needs_rng_patch("2.10.0a0") is False  # TorchVersion("2.10.0a0") >= "2.10" is False: not used
    assert needs_rng_patch("2.13.0+cpu") is False
    assert needs_rng_patch("1.13.1") is True


def test_environment_checks():
    flags = {e.name: e.red_flag for e in check_environment({
        "TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE": "true",  # torch reads only "1": stays off
        "TORCHINDUCTOR_MAX_AUTOTUNE": "1",
        "TORCHINDUCTOR_CUDAGRAPHS": "true",
        "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM": "0",
        "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": "aten, cpp",
        "TORCHINDUCTOR_MEMORY_PLANNING": "1",
        "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1",
        "PATH": "/usr/bin",
    })}
    assert flags == {"TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE": False, "TORCHINDUCTOR_MAX_AUTOTUNE": True,
                     "TORCHINDUCTOR_CUDAGRAPHS": False, "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM": False,
                     "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS": True, "TORCHINDUCTOR_MEMORY_PLANNING": True,
                     "TORCHINDUCTOR_FORCE_DISABLE_CACHES": False}


def test_cudagraphs_true_is_not_a_red_flag_because_torch_reads_only_1():
    """torch 2.13 reads ``os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1"``: ``true`` leaves
    triton.cudagraphs off, and doctor's table and its verdict must agree on that."""
    proc = doctor("--output-format", "json", env=clean_env(TORCHINDUCTOR_CUDAGRAPHS="true"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert setting(report, "inductor.triton.cudagraphs")["value"] is False  # what torch itself read
    assert report["red_flags"] == []
    (env,) = [e for e in report["environment"] if e["name"] == "TORCHINDUCTOR_CUDAGRAPHS"]
    assert env["red_flag"] is False and 'exact value "1"' in env["effect"]


# ------------------------------------------------------------------------------------------
# ROCm: HIP runtime and GPU architectures, with faked torch attributes
# ------------------------------------------------------------------------------------------

from types import SimpleNamespace  # noqa: E402

from rocmport import doctor as doctor_module  # noqa: E402
from rocmport import rocm_facts  # noqa: E402

MI300X = SimpleNamespace(name="AMD Instinct MI300X", gcnArchName="gfx942:sramecc+:xnack-", major=9, minor=4)
MI355X = SimpleNamespace(name="AMD Instinct MI355X", gcnArchName="gfx950:sramecc+:xnack-", major=9, minor=5)
MI250 = SimpleNamespace(name="AMD Instinct MI250X", gcnArchName="gfx90a:sramecc+:xnack-", major=9, minor=0)
RX7900 = SimpleNamespace(name="Radeon RX 7900 XTX", gcnArchName="gfx1100", major=11, minor=0)


def fake_torch(hip, *gpus, fail=False):
    def props(index):
        if fail:
            raise RuntimeError("HIP error: invalid device ordinal")
        return gpus[index]

    cuda = SimpleNamespace(is_available=lambda: bool(gpus), device_count=lambda: len(gpus),
                           get_device_properties=props, get_device_name=lambda i: gpus[i].name)
    return SimpleNamespace(version=SimpleNamespace(hip=hip, cuda=None), cuda=cuda)


def rocm_install(tmp_path, version):
    (tmp_path / ".info").mkdir()
    (tmp_path / ".info" / "version").write_text(version + "\n")
    return {"ROCM_PATH": str(tmp_path)}


def issue_keys(rocm):
    return {i["key"]: i["certain"] for i in rocm["runtime_issues"]}


def test_mi300x_on_rocm_7_2_1_has_the_replay_corruption(tmp_path):
    rocm = doctor_module.inspect_rocm(fake_torch("7.2.53211-dd7f95766", MI300X), rocm_install(tmp_path, "7.2.1-81"))
    assert rocm["hip_version"] == "7.2" and rocm["version_checked"] == "7.2.1"
    assert issue_keys(rocm) == {"capture-errors-swallowed": True, "mi300x-replay-corruption": True}
    (gpu,) = rocm["gpus"]
    assert gpu["gfx"] == "gfx942" and gpu["capability"] == [9, 4]
    assert gpu["fp8"] == {"dtype": "torch.float8_e4m3fnuz", "max": 240.0}
    corruption = [i for i in rocm["runtime_issues"] if i["key"] == "mi300x-replay-corruption"][0]
    assert corruption["sources"] == ["ROCm/clr#279"] and corruption["versions"] == "7.2.0 - 7.2.3"


def test_patch_level_unknown_is_said_so(tmp_path):
    # no ROCm install to read the patch level from: 7.2 may or may not be 7.2.0-7.2.3
    rocm = doctor_module.inspect_rocm(fake_torch("7.2.53211", MI300X), {"ROCM_PATH": str(tmp_path / "none")})
    assert issue_keys(rocm) == {"capture-errors-swallowed": True, "mi300x-replay-corruption": False}
    text = "\n".join(doctor_module._rocm_lines(rocm))
    assert "possibly (patch level or GPU unknown): graph replays on MI300X" in text
    # an install of another release does not decide it either
    rocm = doctor_module.inspect_rocm(fake_torch("7.2.53211", MI300X), rocm_install(tmp_path, "6.4.0"))
    assert rocm["version_checked"] == "7.2" and issue_keys(rocm)["mi300x-replay-corruption"] is False


def test_mi355x_and_mi200_and_an_unknown_arch(tmp_path):
    rocm = doctor_module.inspect_rocm(fake_torch("7.2.1", MI355X, MI250, RX7900), rocm_install(tmp_path, "7.2.4"))
    assert issue_keys(rocm) == {"capture-errors-swallowed": True, "mi355x-stale-reads": True}
    mi355, mi250, rx = rocm["gpus"]
    assert mi355["fp8"] == {"dtype": "torch.float8_e4m3fn", "max": 448.0}
    assert mi250["fp8"] is None and "no fp8" in mi250["fp8_note"]
    assert rx["fp8"] is None and "not in rocmport's table" in rx["fp8_note"]


def test_hip_7_14_raises_in_capture_and_has_no_known_issue():
    rocm = doctor_module.inspect_rocm(fake_torch("7.14.60000", MI300X), {"ROCM_PATH": "/nonexistent"})
    assert rocm["runtime_issues"] == []
    assert "No known HIP-runtime capture issue for 7.14." in "\n".join(doctor_module._rocm_lines(rocm))


def test_old_hip_swallows_capture_errors_on_any_gpu():
    rocm = doctor_module.inspect_rocm(fake_torch("6.2.41133-dd7f95766"), {"ROCM_PATH": "/nonexistent"})
    assert rocm["gpus"] == [] and issue_keys(rocm) == {"capture-errors-swallowed": True}
    assert rocm["runtime_issues"][0]["sources"] == ["pytorch#155684", "pytorch#187110"]


def test_driver_trouble_is_a_note_not_a_traceback():
    rocm = doctor_module.inspect_rocm(fake_torch("6.2.0", MI300X, fail=True), {"ROCM_PATH": "/nonexistent"})
    assert rocm["gpus"] == [] and "invalid device ordinal" in rocm["notes"][0]


def test_doctor_on_a_faked_rocm_build(monkeypatch, tmp_path):
    import torch

    monkeypatch.setattr(torch.version, "hip", "7.2.53211-dd7f95766")
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: MI300X.name)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i=0: MI300X)
    environ = dict(clean_env(), **rocm_install(tmp_path, "7.2.2-10"))
    text, status = doctor_module.run("text", environ)
    assert status == 0  # known runtime issues are explained, not red flags of the environment
    assert "build: ROCm (HIP 7.2.53211-dd7f95766)" in text
    assert "GPU 0        AMD Instinct MI300X: gfx942:sramecc+:xnack-, MI300" in text
    assert "fp8 is torch.float8_e4m3fnuz (max 240) on gfx942" in text
    assert "graph replays on MI300X corrupt results nondeterministically [ROCm 7.2.0 - 7.2.3" in text
    report = json.loads(doctor_module.run("json", environ)[0])
    assert report["torch"]["build"] == "rocm" and report["rocm"]["gpus"][0]["gfx"] == "gfx942"
    assert {i["key"] for i in report["rocm"]["runtime_issues"]} == {"capture-errors-swallowed",
                                                                    "mi300x-replay-corruption"}


def test_cpu_build_has_no_rocm_section(monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "hip", None)
    report = doctor_module.inspect(clean_env())
    assert report.rocm is None and report.as_dict()["rocm"] is None
    assert "ROCm:" not in doctor_module.render_text(report)


def test_rocm_facts_page_is_generated_from_the_table():
    assert rocm_facts.main(["--check"]) == 0, "docs/rocm-facts.md is stale: python -m rocmport.rocm_facts"
    page = rocm_facts.DOC_PATH.read_text(encoding="utf-8")
    for issue in rocm_facts.RUNTIME_ISSUES:
        assert issue.effect in page and all(source in page for source in issue.sources)


def _faked_rocm(monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "hip", "7.2.53211-dd7f95766")
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_remedy_is_unset_because_the_prelude_keeps_what_the_environment_says(monkeypatch, tmp_path):
    """The prelude sets inductor's variables with os.environ.setdefault: it cannot turn off a
    TORCHINDUCTOR_CUDAGRAPHS=1 already in the environment, so doctor must not say it does."""
    _faked_rocm(monkeypatch)
    environ = clean_env(TORCHINDUCTOR_CUDAGRAPHS="1", ROCM_PATH=str(tmp_path))
    text, status = doctor_module.run("text", environ)
    assert status == 1 and "build: ROCm (HIP 7.2.53211-dd7f95766)" in text
    assert "let rocmport's prelude set ROCm-safe values" not in text
    assert text.rstrip().splitlines()[-2:] == [
        "1 red flag: TORCHINDUCTOR_CUDAGRAPHS.",
        "Unset TORCHINDUCTOR_CUDAGRAPHS before the program starts (`unset TORCHINDUCTOR_CUDAGRAPHS`, or take it "
        "out of the launch script, Dockerfile or CI environment). rocmport's prelude does not override it: it "
        "fills in only variables that are not set (os.environ.setdefault), so a value already in the environment "
        "stays in force."]
    assert json.loads(doctor_module.run("json", environ)[0])["remedy"][0].startswith("Unset TORCHINDUCTOR_CUDAGRAPHS")


@pytest.mark.slow
def test_what_the_remedy_says_of_the_prelude_is_so(tmp_path):
    """The claim itself, on a simulated ROCm build with real torch: after the prelude ran,
    triton.cudagraphs is still on when TORCHINDUCTOR_CUDAGRAPHS=1 was in the environment."""
    from rocmport import prelude

    from .torch_runner import run_file

    path = tmp_path / "entry.py"
    path.write_text(prelude.render_inline("is_rocm", prelude.PARTS, prelude.PreludeOptions()))
    kept = run_file(path, rocm=True, env={"TORCHINDUCTOR_CUDAGRAPHS": "1"})
    assert kept["config"]["triton.cudagraphs"] is True and kept["env"]["TORCHINDUCTOR_CUDAGRAPHS"] == "1"
    unset = run_file(path, rocm=True)
    assert unset["config"]["triton.cudagraphs"] is False  # what unsetting it gives


@pytest.mark.parametrize("build, advice", [
    ("rocm", "(this is a ROCm build: `unset CUDA_VISIBLE_DEVICES`)."), ("cuda", "`unset HIP_VISIBLE_DEVICES`"),
])
def test_cuda_and_hip_visible_devices_together_are_a_red_flag(build, advice):
    environ = {"CUDA_VISIBLE_DEVICES": "0,1", "HIP_VISIBLE_DEVICES": "1"}
    (found,) = check_environment(environ)
    assert found.red_flag and found.name == "HIP_VISIBLE_DEVICES" and "CUDA_VISIBLE_DEVICES=0,1" in found.effect
    assert "ROC605" in found.effect
    report = doctor_module.Report(python="3", executable="python", torch="2.13.0", build=build, environment=[found])
    text = doctor_module.render_text(report)
    assert "RED FLAG HIP_VISIBLE_DEVICES=1: set together with CUDA_VISIBLE_DEVICES=0,1" in text
    assert text.rstrip().splitlines()[-1].startswith("Keep one of CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES")
    assert advice in text and "Unset" not in text
    for alone in ({"CUDA_VISIBLE_DEVICES": "0"}, {"HIP_VISIBLE_DEVICES": "0"}):
        assert check_environment(alone) == []
