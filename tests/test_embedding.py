"""Run inside another program -- the flake8 plugin, LibCST's codemod runner, the language
server's own process, a library call -- rocmport changes nothing in the process: the cyclic
collector stays as the host left it and LibCST validates every node it builds, during the
check and after it. Only rocmport's own processes (the command line's run and its workers,
the language server's analysis child) use those switches (``rocmport.process``)."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import libcst as cst

from rocmport import parsing, process
from rocmport.config import Settings

HAZARD = "import torch\nf = torch.compile(g, mode='reduce-overhead')\n"


def _spy_on_parse(monkeypatch):
    """Record, at every LibCST parse rocmport makes, whether the collector is on and whether
    LibCST's own node validation is the one in place."""
    seen = []
    validate = cst.CSTNode.__post_init__
    real = cst.parse_module

    def parse(*args, **kwargs):
        seen.append((gc.isenabled(), cst.CSTNode.__post_init__ is validate))
        return real(*args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", parse)
    return seen, validate


def test_a_library_call_changes_nothing_in_the_process(monkeypatch):
    from rocmport.inputs import check_bytes

    seen, validate = _spy_on_parse(monkeypatch)
    assert not process.is_own()
    report = check_bytes(HAZARD.encode(), "m.py", Settings(), fix=True)
    assert report.fixed and seen and all(on and validating for on, validating in seen)
    assert gc.isenabled() and cst.CSTNode.__post_init__ is validate


def test_the_flake8_plugin_changes_nothing_in_flake8s_process(monkeypatch, tmp_path):
    from rocmport.flake8_plugin import Plugin

    seen, validate = _spy_on_parse(monkeypatch)
    path = tmp_path / "m.py"
    path.write_text(HAZARD)
    results = list(Plugin(None, str(path), HAZARD.splitlines(keepends=True)).run())
    assert any("ROC101" in r[2] for r in results)
    assert seen and all(on and validating for on, validating in seen)
    assert gc.isenabled() and cst.CSTNode.__post_init__ is validate


def test_the_libcst_codemod_command_changes_nothing_in_libcsts_process(monkeypatch):
    from libcst.codemod import CodemodContext

    from rocmport.libcst_commands import CompileModes

    seen, validate = _spy_on_parse(monkeypatch)
    out = CompileModes(CodemodContext(filename="m.py")).transform_module(cst.parse_module(HAZARD))
    assert "is_rocm" in out.code  # fixed
    seen = seen[1:]  # the first is the test's own parse above
    assert seen and all(on and validating for on, validating in seen)
    assert gc.isenabled() and cst.CSTNode.__post_init__ is validate


def test_the_language_servers_own_process_never_loads_the_engine():
    """The server answers from its analysis child; its own process imports neither the
    engine nor LibCST, so nothing there can be switched."""
    script = textwrap.dedent("""
        import sys
        import rocmport.server
        heavy = [m for m in ("libcst", "rocmport.engine", "rocmport.parsing") if m in sys.modules]
        print(heavy)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_rocmports_own_run_uses_the_switches_and_gives_them_back(monkeypatch):
    from rocmport.runner import check_files

    seen, validate = _spy_on_parse(monkeypatch)

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "m.py"
        path.write_text(HAZARD)
        check_files([str(path)], Settings(root=directory), jobs=1)
    assert seen and all(not on and not validating for on, validating in seen)
    assert not process.is_own() and gc.isenabled() and cst.CSTNode.__post_init__ is validate
