"""Fast start (issue 17): the light commands never import LibCST or torch, and the flake8
plugin imports nothing heavy when flake8's selection leaves out ROC. Checked by what is in
``sys.modules`` when the process ends (no timing here: benchmarks/startup.py measures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmport import registry

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("libcst", "torch", "rocmport.engine", "rocmport.rules.base")

# Runs rocmport's CLI (or flake8) and writes the names of the imported modules at exit.
RECORD = """
import atexit, json, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
if sys.argv[2] == "flake8":
    from flake8.main.cli import main
    sys.exit(main(sys.argv[3:]))
from rocmport.cli import main
main(sys.argv[2:], prog_name="rocmport")
"""


def imported(tmp_path, *args, cwd=None):
    record = tmp_path / "modules.json"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", RECORD, str(record), *args], cwd=cwd or tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    return proc, set(json.loads(record.read_text()))


def heavy(modules):
    return sorted(m for m in modules if m.split(".")[0] in ("libcst", "torch") or m in HEAVY)


@pytest.fixture(scope="module")
def index_is_current():
    if registry._indexed() is None:
        pytest.fail(f"rocmport/_rule_index.py is stale (a rule changed): run `{registry.REGENERATE}`")


def test_rule_index_is_current_and_agrees_with_the_rule_classes():
    assert registry.INDEX_FILE.read_text(encoding="utf-8") == registry.render_index(), (
        f"rocmport/_rule_index.py is stale: run `{registry.REGENERATE}`")
    indexed = registry._indexed()
    assert indexed is not None
    assert indexed == {code: registry.RuleInfo.of(rule) for code, rule in registry.all_rules().items()}


def test_a_stale_index_is_never_used(monkeypatch):
    registry.rule_infos.cache_clear()
    try:
        monkeypatch.setattr(registry, "sources_fingerprint", lambda: "edited since")
        assert registry._indexed() is None
        infos = registry.rule_infos()  # built from the classes instead
        assert list(infos) == list(registry.all_rules())
    finally:
        registry.rule_infos.cache_clear()


@pytest.mark.parametrize("args", [["--version"], ["rules"], ["rule", "ROC101"], ["--help"], ["lint", "--help"]])
def test_light_commands_do_not_import_libcst(tmp_path, index_is_current, args):
    proc, modules = imported(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    assert heavy(modules) == []


def test_cache_hit_lint_does_not_import_libcst(tmp_path, index_is_current):
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport]\n")
    (tmp_path / "model.py").write_text('import torch\nf = torch.compile(g, mode="reduce-overhead")\n')
    (tmp_path / "clean.py").write_text("x = 1\n")
    first, modules = imported(tmp_path, "lint", "model.py", "clean.py")
    assert first.returncode == 1 and "ROC101" in first.stdout
    assert "libcst" in modules  # a miss: the engine ran
    second, modules = imported(tmp_path, "lint", "model.py", "clean.py")
    assert second.returncode == 1 and second.stdout == first.stdout
    assert heavy(modules) == []
    assert "multiprocessing" not in modules  # no worker pool for answers from the cache
    third, modules = imported(tmp_path, "lint", "--output-format", "sarif", "model.py")
    assert third.returncode == 1 and heavy(modules) == []


def test_flake8_plugin_is_free_when_roc_is_not_selected(tmp_path, index_is_current):
    (tmp_path / "model.py").write_text('import torch\nf = torch.compile(g, mode="reduce-overhead")\n')
    proc, modules = imported(tmp_path, "flake8", "--select", "E", "model.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rocmport.flake8_plugin" in modules  # flake8 loaded it ...
    assert heavy(modules) == []  # ... and it did nothing heavy
    proc, modules = imported(tmp_path, "flake8", "--select", "ROC", "model.py")
    assert proc.returncode == 1 and "ROC101" in proc.stdout
    proc, modules = imported(tmp_path, "flake8", "--extend-select", "ROC101", "--select", "E", "model.py")
    assert proc.returncode == 1 and "ROC101" in proc.stdout
