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
