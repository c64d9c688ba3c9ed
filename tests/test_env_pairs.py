"""ROC605 / ROC606: variables that only make sense together, in Python and in shell scripts,
Dockerfiles, YAML and .env files; and the torch behaviour ROC605's message states, executed
on torch 2.13 (``torch/cuda/__init__.py:_parse_visible_devices``) with ``torch.version.hip``
set."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rocmport.inputs import check_path
from rocmport.registry import all_rules, family_rules
from rocmport.rules.env_vars.env_cuda_and_hip_visible_devices import VisibleDevicesBoth, removes
from rocmport.rules.env_vars.env_cuda_arch_list_without_rocm_arch import ArchListWithoutRocmArch
from rocmport.rules.env_vars.scan_files import NAMES, scan

from .harness import FIXTURES, codes, settings

PAIRS = FIXTURES / "env_vars" / "pairs"
ALL = frozenset(all_rules())
EXPECTED = {
    "visible.sh": [(4, 8, "ROC605")],
    "Dockerfile.ext": [(5, 5, "ROC605")],  # PYTORCH_ROCM_ARCH is mentioned (a comment): no ROC606
    "ci.yml": [(11, 7, "ROC605"), (16, 11, "ROC606")],  # the nvidia and amd jobs' env maps are apart
    ".env": [],
    "unset.sh": [],
}


def test_every_fixture_is_listed():
    assert sorted(p.name for p in PAIRS.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_file_findings(name):
    report = check_path(str(PAIRS / name), settings())
    assert report.internal_error is None
    assert [(f.start.row, f.start.column, f.code) for f in report.findings] == EXPECTED[name]
    for f in report.findings:
        assert f.fix is not None and not f.fixable and f.name == all_rules()[f.code].NAME
    assert check_path(str(PAIRS / name), settings(), fix=True).fixed is None


def test_one_definition_per_rule():
    """Names and messages of the file scanner come from the rules of rocmport.rules.env_vars."""
    assert NAMES == {r.CODE: r.NAME for r in family_rules("env_vars") if r.CODE != "ROC603"}
    found = scan("a.sh", "export CUDA_VISIBLE_DEVICES=0\nexport HIP_VISIBLE_DEVICES=0\n", ALL)
    assert [f.message for f in found] == [VisibleDevicesBoth.message("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", 1)
                                          + " (set in a shell script)"]
    found = scan(".env", "TORCH_CUDA_ARCH_LIST=8.0\n", ALL)
    assert [f.message for f in found] == [ArchListWithoutRocmArch.message("TORCH_CUDA_ARCH_LIST") + " (set in an .env file)"]


def test_file_near_misses():
    assert scan("a.sh", "CUDA_VISIBLE_DEVICES=0 python a.py  # noqa: ROC605\nHIP_VISIBLE_DEVICES=0 python b.py  # noqa\n",
                ALL) == []
    assert scan("a.sh", "# export HIP_VISIBLE_DEVICES=0\nexport CUDA_VISIBLE_DEVICES=0\n", ALL) == []
    assert scan("Dockerfile", "ENV TORCH_CUDA_ARCH_LIST=8.0 PYTORCH_ROCM_ARCH=gfx942\n", ALL) == []
    assert scan("c.yml", "a:\n  env:\n    CUDA_VISIBLE_DEVICES: 0\nb:\n  env:\n    HIP_VISIBLE_DEVICES: 0\n", ALL) == []
    found = scan("c.yml", "env:\n  - name: CUDA_VISIBLE_DEVICES\n    value: '0'\n  - name: HIP_VISIBLE_DEVICES\n"
                          "    value: '0'\n", ALL)
    assert [(f.start.row, f.code) for f in found] == [(4, "ROC605")]
    assert [f.code for f in scan("a.sh", "export CUDA_VISIBLE_DEVICES=0 HIP_VISIBLE_DEVICES=0\n",
                                 frozenset({"ROC601"}))] == []
    # TORCH_CUDA_ARCH_LIST: cleared, or in a file for NVIDIA only
    assert scan("a.sh", 'export TORCH_CUDA_ARCH_LIST=""\n', ALL) == []
    for name in (".github/workflows/nv-build.yml", "docker/Dockerfile.cuda", "build_nvidia.sh"):
        text = ("runs-on: [mi300]\nsteps:\n  - run: TORCH_CUDA_ARCH_LIST=9.0 pip install .\n" if name.endswith("yml")
                else "FROM rocm/pytorch\nENV TORCH_CUDA_ARCH_LIST=9.0\n" if "Dockerfile" in name
                else "export TORCH_CUDA_ARCH_LIST=9.0\n")
        assert scan(name, text, ALL) == [], name
        assert [f.code for f in scan(name.replace("nv", "gpu").replace("cuda", "gpu"), text, ALL)] == ["ROC606"]


def test_an_arch_list_no_rocm_build_reads():
    """Issue 28: a Dockerfile or YAML file that names ROCm nowhere builds nothing for ROCm (its
    image, its runners); arch-specific NVIDIA targets only (9.0a, 10.0a) build kernels AMD has
    no counterpart of. A shell script may run anywhere: it is still reported."""
    nvidia_image = "FROM nvcr.io/nvidia/pytorch:25.11-py3\nRUN TORCH_CUDA_ARCH_LIST='9.0;10.0' pip install .\n"
    assert scan("docker/Dockerfile.vllm", nvidia_image, ALL) == []
    workflow = "jobs:\n  test:\n    runs-on: [self-hosted, a100]\n    env:\n      TORCH_CUDA_ARCH_LIST: '8.0 9.0'\n"
    assert scan(".github/workflows/unit_tests.yml", workflow, ALL) == []
    # near misses: the same file that builds for ROCm too, a shell script, a portable target
    assert [f.code for f in scan("docker/Dockerfile.vllm", nvidia_image + "FROM rocm/pytorch:latest\n", ALL)] == [
        "ROC606"]
    assert [f.code for f in scan(".github/workflows/unit_tests.yml",
                                 workflow.replace("a100]", "a100]\n    container: rocm/pytorch"), ALL)] == ["ROC606"]
    assert [f.code for f in scan("build.sh", "export TORCH_CUDA_ARCH_LIST='9.0;10.0'\npip install .\n", ALL)] == [
        "ROC606"]
    assert scan("build.sh", "export TORCH_CUDA_ARCH_LIST='9.0a'\n", ALL) == []
    assert [f.code for f in scan("build.sh", "export TORCH_CUDA_ARCH_LIST='9.0a;8.0'\n", ALL)] == ["ROC606"]


def test_removes():
    assert removes('os.environ.pop("CUDA_VISIBLE_DEVICES", None)', "CUDA_VISIBLE_DEVICES")
    assert removes("del os.environ['HIP_VISIBLE_DEVICES']", "HIP_VISIBLE_DEVICES")
    assert removes("unset CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
    assert removes("env -u CUDA_VISIBLE_DEVICES python x.py", "CUDA_VISIBLE_DEVICES")
    assert not removes('os.environ.get("CUDA_VISIBLE_DEVICES")', "CUDA_VISIBLE_DEVICES")
    assert not removes("unset CUDA_VISIBLE_DEVICES_OLD", "CUDA_VISIBLE_DEVICES")


def test_python_spellings():
    base = "import os\nimport subprocess\n"
    assert codes(base + 'os.environ.update(CUDA_VISIBLE_DEVICES="0", HIP_VISIBLE_DEVICES="0")\n',
                 select=["ROC605"]) == ["ROC605"]
    assert codes(base + 'env = os.environ.copy()\nenv["CUDA_VISIBLE_DEVICES"] = "0"\n'
                        'os.environ.setdefault("HIP_VISIBLE_DEVICES", "0")\n', select=["ROC605"]) == ["ROC605"]
    assert codes(base + 'x = "HIP_VISIBLE_DEVICES" if is_rocm else "CUDA_VISIBLE_DEVICES"\n', select=["ROC605"]) == []
    assert codes(base + 'os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"\nos.environ["TORCH_CUDA_ARCH_LIST"] += "+PTX"\n',
                 select=["ROC606"]) == ["ROC606"]


# ------------------------------------------------------------------------------------------
# What torch 2.13 does with the variables (the facts ROC605's message states)
# ------------------------------------------------------------------------------------------

_PARSE = r'''
import json, sys
import torch
torch.version.hip = sys.argv[1] or None
try:
    print("RESULT" + json.dumps(torch.cuda._parse_visible_devices()))
except RuntimeError as exc:
    print("RESULT" + json.dumps("RuntimeError: " + str(exc)))
'''


def _parse(hip, **variables):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_VISIBLE_DEVICES")}
    env.update(variables)
    done = subprocess.run([sys.executable, "-c", _PARSE, hip], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def test_torch_visible_device_parsing():
    pytest.importorskip("torch")
    rocm = "6.2.0"
    # ROCm build: HIP_VISIBLE_DEVICES wins, CUDA_VISIBLE_DEVICES is ignored without a word
    assert _parse(rocm, CUDA_VISIBLE_DEVICES="0,1", HIP_VISIBLE_DEVICES="1") == [1]
    # ROCR_VISIBLE_DEVICES alone: CUDA_VISIBLE_DEVICES ignored as well
    assert _parse(rocm, CUDA_VISIBLE_DEVICES="3", ROCR_VISIBLE_DEVICES="0,1") == [0, 1]
    # HIP lists more devices than ROCR: torch raises
    assert _parse(rocm, HIP_VISIBLE_DEVICES="0,1", ROCR_VISIBLE_DEVICES="0").startswith("RuntimeError")
    # only CUDA_VISIBLE_DEVICES: used on ROCm too
    assert _parse(rocm, CUDA_VISIBLE_DEVICES="2") == [2]
    # NVIDIA build: HIP_VISIBLE_DEVICES plays no part
    assert _parse("", CUDA_VISIBLE_DEVICES="0,1", HIP_VISIBLE_DEVICES="1") == [0, 1]
