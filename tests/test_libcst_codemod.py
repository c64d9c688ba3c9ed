"""Each rule family as a LibCST codemod: ``python -m libcst.tool codemod
libcst_commands.<Family> PATH`` (resolved through the repository's ``.libcst.codemod.yaml``)
and the fully dotted ``-x rocmport.libcst_commands.<Family>`` form, run for real in a
subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rocmport.libcst_commands import COMMANDS, RocmportCommand
from rocmport import prelude

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("compile_modes", "inductor_config", "env_vars", "capture", "graph_breaks", "triton_launch",
            "vendor_checks")

SOURCE = (
    "import torch\n"
    "import torch._inductor.config as inductor_config\n"
    "\n"
    "inductor_config.triton.cudagraphs = True\n"
    'model = torch.compile(torch.nn.Linear(2, 2), mode="reduce-overhead")\n'
)


def codemod(*args):
    return subprocess.run([sys.executable, "-m", "libcst.tool", "codemod", "--hide-progress", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_a_command(family):
    from rocmport.registry import all_rules

    assert issubclass(COMMANDS[family], RocmportCommand)
    codes = COMMANDS[family].family_codes()
    assert codes and set(codes) == {code for code, rule in all_rules().items()
                                    if rule.__module__.startswith(f"rocmport.rules.{family}.")}


def test_every_rule_family_is_listed():
    from rocmport.registry import all_rules

    assert set(FAMILIES) == set(COMMANDS)
    families = {rule.__module__.split(".")[2] for rule in all_rules().values()}
    assert families - {"tool"} == set(FAMILIES)


@pytest.mark.slow
def test_family_command_fixes_only_its_family(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    run = codemod("libcst_commands.CompileModes", str(path))
    assert run.returncode == 0, run.stderr
    text = path.read_text()
    assert 'mode="default" if is_rocm else "reduce-overhead"' in text
    assert "inductor_config.triton.cudagraphs = True\n" in text  # ROC2xx is another family's
    gate = 'is_rocm = getattr(torch.version, "hip", None) is not None\n'
    assert text.count(gate) == 1 and prelude.find_block(text) is None
    # every byte outside the fix and the gate line is kept
    assert text.replace("\n" + gate, "") == SOURCE.replace(
        '"reduce-overhead")', '"default" if is_rocm else "reduce-overhead")')

    run = codemod("-x", "rocmport.libcst_commands.InductorConfig", str(path))
    assert run.returncode == 0, run.stderr
    assert "inductor_config.triton.cudagraphs = not is_rocm\n" in path.read_text()

    # nothing left to do: the file is skipped and stays byte for byte the same
    before = path.read_bytes()
    run = codemod("libcst_commands.CompileModes", str(path))
    assert run.returncode == 0 and "Skipped 1 files" in run.stderr
    assert path.read_bytes() == before


@pytest.mark.slow
def test_unified_diff_writes_nothing(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    run = codemod("libcst_commands.CompileModes", "-u", "1", str(path))
    assert run.returncode == 0, run.stderr
    assert '+model = torch.compile(torch.nn.Linear(2, 2), mode="default" if is_rocm else "reduce-overhead")' \
        in run.stdout
    assert path.read_text() == SOURCE
