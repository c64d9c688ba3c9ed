"""The command-line contract: exit codes, formats, stdin, configuration, suppression,
discovery, bad input, atomic writes and the prelude's life cycle."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport import prelude
from rocmport.cli import main

HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'


def run(*args, cwd=None, input=None):
    runner = CliRunner()
    old = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        result = runner.invoke(main, list(args), input=input, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return tmp_path


def test_lint_exit_codes_and_summary(project):
    (project / "bad.py").write_text(HAZARD)
    (project / "good.py").write_text("import torch\n")
    result = run("lint", "bad.py", "good.py", cwd=project)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        'bad.py:2:27: ROC101 [*] mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm;'
        ' use "default" there',
        "Found 1 finding (1 fixable with `rocmport fix --write`).",
    ]
    assert run("lint", "good.py", cwd=project).exit_code == 0


def test_console_script_and_module_entry_point(project):
    (project / "bad.py").write_text(HAZARD)
    for cmd in ([sys.executable, "-m", "rocmport"], [str(Path(sys.executable).parent / "rocmport")]):
        proc = subprocess.run(cmd + ["lint", "bad.py"], cwd=project, capture_output=True, text=True)
        assert proc.returncode == 1 and "ROC101" in proc.stdout


def test_fix_shows_a_diff_and_writes_nothing(project):
    path = project / "bad.py"
    path.write_text(HAZARD)
    result = run("fix", "bad.py", cwd=project)
    assert result.exit_code == 1
    assert "--- a/bad.py\n+++ b/bad.py" in result.output and '+f = torch.compile(g, mode="default" if is_rocm else' in result.output
    assert path.read_text() == HAZARD


def test_fix_write_applies_keeps_mode_and_exits_zero(project):
    path = project / "bad.py"
    path.write_text(HAZARD)
    os.chmod(path, 0o751)
    result = run("fix", "--write", "bad.py", cwd=project)
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert "is_rocm else" in path.read_text()
    assert not [p for p in project.iterdir() if p.name.startswith(".rocmport-")]
    mtime = os.stat(path).st_mtime_ns
    assert run("fix", "--write", "bad.py", cwd=project).exit_code == 0
    assert os.stat(path).st_mtime_ns == mtime  # nothing changed: not rewritten


def test_stdin(project):
    result = run("lint", "-", "--stdin-filename", "pipe.py", input=HAZARD, cwd=project)
    assert result.exit_code == 1 and result.output.startswith("pipe.py:2:27: ROC101")
    result = run("fix", "-", input=HAZARD, cwd=project)
    assert 'mode="default" if is_rocm else "reduce-overhead"' in result.stdout_bytes.decode()
    assert result.exit_code == 0


def test_json_output(project):
    (project / "bad.py").write_text(HAZARD)
    out = project / "findings.json"
    result = run("lint", "--output-format", "json", "--output-file", str(out), "bad.py", cwd=project)
    assert result.exit_code == 1 and result.output == ""
    (item,) = json.loads(out.read_text())
    assert set(item) == {"code", "name", "message", "filename", "location", "end_location", "fix", "url", "cell",
                         "scope", "not_a_port", "related_locations"}
    assert item["scope"] == "source" and item["not_a_port"] is None and item["related_locations"] == []
    assert item["location"] == {"row": 2, "column": 27} and item["end_location"] == {"row": 2, "column": 44}
    assert item["fix"]["applicability"] == "safe"
    assert item["fix"]["edits"][0]["location"] == {"row": 2, "column": 27}


def test_select_ignore_and_bad_selector(project):
    (project / "bad.py").write_text(HAZARD)
    assert run("lint", "--ignore", "ROC1", "bad.py", cwd=project).exit_code == 0
    assert run("lint", "--select", "ROC102", "bad.py", cwd=project).exit_code == 0
    result = run("lint", "--select", "XYZ9", "bad.py", cwd=project)
    assert result.exit_code == 2 and "XYZ9" in result.output


def test_configuration(project):
    (project / "pyproject.toml").write_text(
        '[tool.rocmport]\nignore = ["ROC105"]\nextend-exclude = ["vendored"]\n'
        'per-file-ignores = { "bench_*.py" = ["ROC101"] }\n')
    (project / "bench_speed.py").write_text(HAZARD)
    (project / "vendored").mkdir()
    (project / "vendored" / "lib.py").write_text(HAZARD)
    (project / "cfg.py").write_text('COMPILE_MODE_DEFAULT = "reduce-overhead"\n')
    assert run("lint", ".", cwd=project).exit_code == 0
    assert run("lint", "vendored/lib.py", cwd=project).exit_code == 1  # named explicitly
    assert run("lint", "--force-exclude", "vendored/lib.py", cwd=project).exit_code == 0


def test_unknown_configuration_key_is_exit_2_naming_it(project):
    (project / "pyproject.toml").write_text('[tool.rocmport]\nselct = ["ROC1"]\n')
    (project / "a.py").write_text("x = 1\n")
    result = run("lint", "a.py", cwd=project)
    assert result.exit_code == 2 and "unknown key `selct`" in result.output
    (project / "pyproject.toml").write_text('[tool.rocmport.prelude]\nstyle = "fancy"\n')
    result = run("lint", "a.py", cwd=project)
    assert result.exit_code == 2 and "prelude.style" in result.output


def test_noqa_comments(project):
    (project / "a.py").write_text('import torch\nf = torch.compile(g, mode="reduce-overhead")  # noqa: ROC101\n'
                                  'h = torch.compile(g, mode="max-autotune")  # noqa\n'
                                  'k = torch.compile(g, mode="max-autotune")  # noqa: E501\n')
    result = run("lint", "a.py", cwd=project)
    assert [l.split(": ")[1].split()[0] for l in result.output.splitlines()[:-1]] == ["ROC102"]
    (project / "b.py").write_text("# rocmport: noqa\n" + HAZARD)
    assert run("lint", "b.py", cwd=project).exit_code == 0
    (project / "c.py").write_text("# rocmport: noqa: ROC1\n" + HAZARD)
    assert run("lint", "c.py", cwd=project).exit_code == 0
    (project / "d.py").write_text("# rocmport: noqa: ROC5\n" + HAZARD)
    assert run("lint", "d.py", cwd=project).exit_code == 1
    (project / "e.py").write_text('"""# rocmport: noqa"""\n' + HAZARD)  # a docstring, not a comment
    assert run("lint", "e.py", cwd=project).exit_code == 1


def test_discovery(project):
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".gitignore").write_text("generated/\n")
    for rel in ("pkg/a.py", "pkg/b.pyi", "build/c.py", "generated/d.py", ".venv/e.py", "venv/f.py",
                "node_modules/g.py", "site-packages/h.py", "notes.txt"):
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HAZARD)
    result = run("lint", ".", cwd=project)
    files = sorted({line.split(":")[0] for line in result.output.splitlines()[:-1]})
    assert files == ["build/c.py", "pkg/a.py", "pkg/b.pyi"]


def test_bad_input_is_a_finding_and_other_files_go_on(project):
    (project / "syntax.py").write_text("def broken(:\n    pass\n")
    (project / "nul.py").write_bytes(b"x = 1\x00\n")
    (project / "utf.py").write_bytes(b"x = '\xff'\n")
    (project / "dir.py").mkdir()
    os.symlink(project / "missing.py", project / "link.py")
    (project / "bad.py").write_text(HAZARD)
    result = run("lint", "syntax.py", "nul.py", "utf.py", "dir.py", "link.py", "bad.py", cwd=project)
    lines = result.output.splitlines()
    assert result.exit_code == 1
    # dir.py is a directory: it is walked like any other (and holds nothing)
    assert lines[0].startswith("bad.py:2:27: ROC101")
    assert lines[1] == "link.py:1:1: ROC001 cannot read: broken symbolic link"
    assert lines[2] == "nul.py:1:6: ROC001 source contains a NUL byte"
    assert lines[3] == "syntax.py:1:12: ROC001 syntax error: invalid syntax"
    assert lines[4] == "utf.py:1:6: ROC001 invalid utf-8 byte 0xff (no encoding cookie declares another encoding)"
    assert lines[5] == "Found 5 findings (1 fixable with `rocmport fix --write`)."


def test_missing_path_is_exit_2(project):
    (project / "bad.py").write_text(HAZARD)
    result = run("lint", "nope.py", "bad.py", cwd=project)
    assert result.exit_code == 2 and "nope.py: no such file or directory" in result.output
    assert "ROC101" in result.output


def test_rule_rules_and_prelude_commands():
    result = run("rule", "ROC101")
    assert result.exit_code == 0 and result.output.startswith("# ROC101 compile-reduce-overhead")
    assert "## Why it is a problem on ROCm" in result.output and "## Fix (safe)" in result.output
    assert run("rule", "ROC999").exit_code == 2
    listing = run("rules").output.splitlines()
    assert any(l.startswith("ROC104  compile-mode-not-literal") for l in listing)
    out = run("prelude").output
    assert out.startswith(f"# >>> rocmport prelude v{prelude.VERSION} inline gate=is_rocm")
    assert "def _rocmport_setup" in out
    compile(out, "prelude", "exec")
    module = run("prelude", "--style", "module", "--profile", "tuned", "--compile-guard").output
    compile(module, "prelude", "exec")
    assert "_rocmport_compile_guard" in module and "coordinate_descent_tuning" in module


def test_gate_line_is_added_once_and_reused(project):
    path = project / "a.py"
    path.write_text(HAZARD)
    assert run("fix", "--write", "a.py", cwd=project).exit_code == 0
    once = path.read_text()
    assert once.count("is_rocm = getattr(torch.version") == 1 and "rocmport prelude" not in once
    # A new hazard later in the file reuses the gate; a run-time mode is mapped inline.
    path.write_text(once + "h = torch.compile(g, mode=cfg.mode)\n")
    assert run("fix", "--write", "a.py", cwd=project).exit_code == 0
    twice = path.read_text()
    assert twice.count("is_rocm = getattr(torch.version") == 1
    assert 'mode={"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(' in twice
    assert run("fix", "a.py", cwd=project).exit_code == 0  # nothing left


def test_packages_get_no_new_file_by_default(project):
    pkg = project / "src" / "mylib"
    (pkg / "models").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "models" / "__init__.py").write_text("")
    lib = pkg / "models" / "net.py"
    lib.write_text(HAZARD)
    script = pkg / "train.py"
    script.write_text(HAZARD + 'if __name__ == "__main__":\n    pass\n')
    result = run("fix", "src", cwd=project)
    assert "/dev/null" not in result.output and "_rocmport" not in result.output
    assert run("fix", "--write", "src", cwd=project).exit_code == 0
    assert not (pkg / "_rocmport.py").exists()
    for path in (lib, script):
        text = path.read_text()
        assert 'is_rocm = getattr(torch.version, "hip", None) is not None' in text
        assert "def _rocmport_setup" not in text  # set-up only where `rocmport setup` puts it
    assert run("fix", "src", cwd=project).exit_code == 0  # nothing left to change
