"""The flake8 plugin, through real flake8 in a subprocess: ``flake8 --select ROC``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("flake8")

SOURCE = (
    "import torch\n"
    "\n"
    'a = torch.compile(f, mode="reduce-overhead")\n'
    'b = torch.compile(f, mode="max-autotune")  # noqa: ROC102\n'
    'c = torch.compile(f, mode="max-autotune")  # noqa: E501\n'
    'd = torch.compile(f, mode="max-autotune")  # noqa\n'
    'e = torch.compile(f, mode="max-autotune")  # NOQA:ROC1\n'
)


def flake8(*args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True)


def test_reports_findings_and_respects_noqa(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    run = flake8("--select", "ROC", "train.py", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert run.stdout.splitlines() == [
        'train.py:3:27: ROC101 mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm; '
        'use "default" there',
        'train.py:5:27: ROC102 mode="max-autotune" turns on CUDA graphs, which hang or slow down on ROCm; '
        'use "max-autotune-no-cudagraphs" there',
    ]
    # no fixes: the file is as it was
    assert (tmp_path / "train.py").read_text() == SOURCE


def test_disable_noqa_shows_everything(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    run = flake8("--select", "ROC", "--disable-noqa", "train.py", cwd=tmp_path)
    assert [line.split(":")[1] for line in run.stdout.splitlines()] == ["3", "4", "5", "6", "7"]


def test_flake8_selection_and_stdin(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    run = flake8("--select", "ROC", "--extend-ignore", "ROC101", "train.py", cwd=tmp_path)
    assert [line.split(": ")[1][:6] for line in run.stdout.splitlines()] == ["ROC102"]
    run = flake8("--select", "ROC", "--stdin-display-name", "piped.py", "-", cwd=tmp_path, stdin=SOURCE)
    assert run.stdout.startswith("piped.py:3:27: ROC101 ")
    # # flake8: noqa skips the file; a clean file reports nothing
    (tmp_path / "clean.py").write_text("# flake8: noqa\n" + SOURCE)
    assert flake8("--select", "ROC", "clean.py", cwd=tmp_path).stdout == ""


def test_encoding_cookie_and_syntax_error(tmp_path):
    (tmp_path / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\nimport torch\nx = '\xe9'; m = torch.compile(f, mode='reduce-overhead')\n")
    run = flake8("--select", "ROC", "latin.py", cwd=tmp_path)
    assert run.stdout.startswith("latin.py:3:36: ROC101 "), run.stdout + run.stderr
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    # flake8 reports a file it cannot parse itself (E999) and runs no AST plugin on it
    run = flake8("--select", "ROC,E999", "broken.py", cwd=tmp_path)
    assert ": E999 SyntaxError" in run.stdout and "ROC" not in run.stdout


# -- cost: a file no rule can match never loads the engine (benchmarks/flake8_cost.py) --------

PROBE = ("import atexit, sys\n"
         "atexit.register(lambda: print('LOADED', sorted(m for m in ('libcst', 'rocmport.engine', 'rocmport.inputs')"
         " if m in sys.modules)))\n"
         "from flake8.main.cli import main\nmain(sys.argv[1:])\n")


def test_a_file_without_trigger_words_never_loads_the_engine(tmp_path):
    """flake8's default selection includes ROC: a file that holds none of the rules' trigger
    words costs the plugin a text search, not LibCST (0.23 s of CPU per run before)."""
    (tmp_path / "plain.py").write_text("import os\n\n\ndef join(parts):\n    return os.path.join(*parts)\n")
    (tmp_path / "train.py").write_text(SOURCE)
    plain = subprocess.run([sys.executable, "-c", PROBE, "--isolated", "-j", "1", "plain.py"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert plain.returncode == 0 and plain.stdout == "LOADED []\n", plain.stdout + plain.stderr
    both = subprocess.run([sys.executable, "-c", PROBE, "--isolated", "-j", "1", "plain.py", "train.py"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert "train.py:3:27: ROC101 " in both.stdout and "LOADED ['libcst', 'rocmport.engine'" in both.stdout


def test_the_light_prefilter_agrees_with_the_engines():
    """registry.may_report answers from the index what registry.text_triggered answers from the
    rule classes: the plugin skips exactly the files in which the engine would run no rule."""
    import random
    from pathlib import Path

    import torch

    from rocmport.config import Settings
    from rocmport.registry import text_triggered
    from rocmport.registry import may_report, rule_infos, visitor_rules

    root = Path(__file__).resolve().parents[1]
    files = sorted((root / "tests" / "fixtures").rglob("*.py")) + sorted((root / "examples").glob("*.py"))
    files += random.Random(31).sample(sorted(Path(torch.__file__).parent.rglob("*.py")), 200)
    files += sorted(Path(os.__file__).parent.glob("*.py"))[:100]
    assert all(info.TRIGGERS for code, info in rule_infos().items() if not code.startswith("ROC0"))
    everything = frozenset(rule_infos())
    selections = [everything, Settings().enabled_codes(), frozenset({"ROC605", "ROC701"}), frozenset({"ROC001"})]
    skipped = 0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for enabled in selections:
            engine = bool(text_triggered([r for r in visitor_rules() if r.CODE in enabled], text))
            assert may_report(text, enabled) == engine, (path, sorted(enabled)[:3])
            skipped += not engine
    assert skipped > 100  # the shortcut is taken
