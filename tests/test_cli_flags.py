"""ruff's flags and behaviours on rocmport's command line (issue 17): --statistics,
--add-noqa, --exit-zero, --fix-only, --exit-non-zero-on-fix, -q/-s/-v, --show-files,
--show-settings, colour, command-line selection over configuration, stdin, --force-exclude on
--stdin-filename, and one-line exit-2 messages."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport import cli, output
from rocmport.cli import main

HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
TWO = ('import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
       'h = torch.compile(k, mode="max-autotune")\nj = torch.compile(k, mode="reduce-overhead")\n')
MESSAGE_101 = 'ROC101 [*] mode="reduce-overhead" turns on CUDA graphs'


def run(*args, cwd, input=None, env=None):
    old = os.getcwd()
    try:
        os.chdir(cwd)
        return CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    return tmp_path


def test_format_names_match_the_formatters():
    assert cli.FORMAT_NAMES == tuple(output.FORMATTERS)


# -- --statistics ------------------------------------------------------------------------------

def test_statistics_counts_per_rule_most_frequent_first(project):
    (project / "a.py").write_text(TWO)
    result = run("lint", "--statistics", "a.py", cwd=project)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "2\tROC101\t[*] compile-reduce-overhead",
        "1\tROC102\t[*] compile-max-autotune",
        "Found 3 findings (3 fixable with `rocmport fix --write`).",
    ]
    as_json = json.loads(run("lint", "--statistics", "--output-format", "json", "a.py", cwd=project).stdout)
    assert as_json == [{"code": "ROC101", "name": "compile-reduce-overhead", "count": 2, "fixable": True},
                       {"code": "ROC102", "name": "compile-max-autotune", "count": 1, "fixable": True}]
    quiet = run("lint", "--statistics", "-q", "a.py", cwd=project)
    assert "Found" not in quiet.stdout and quiet.exit_code == 1
    (project / "clean.py").write_text("x = 1\n")
    clean = run("lint", "--statistics", "clean.py", cwd=project)
    assert clean.exit_code == 0 and clean.stdout == "All checks passed!\n"


def test_statistics_marks_display_only_rules_unfixable(project):
    (project / "a.py").write_text(
        "from dataclasses import dataclass\n\n@dataclass\nclass C:\n    compile_mode: str = \"reduce-overhead\"\n")
    result = run("lint", "--statistics", "--select", "ROC105", "a.py", cwd=project)
    assert result.stdout.splitlines()[0] == "1\tROC105\t[ ] cudagraph-mode-default"


def test_fix_statistics_counts_what_remains(project):
    """`fix --statistics` (documented, once rejected) counts per rule what the fixes leave, as
    ruff's does with --fix; the diff or the listing gives way to the table."""
    display_only = 'class C:\n    compile_mode = "reduce-overhead"\n'
    (project / "a.py").write_text(TWO + display_only)
    diff = run("fix", "--statistics", "a.py", cwd=project)
    assert diff.exit_code == 1, diff.output  # something would change
    assert diff.stdout.splitlines() == ["1\tROC105\t[ ] cudagraph-mode-default",
                                        "Found 1 finding (0 fixable with `rocmport fix --write`)."]
    assert "Would fix 3 findings" in diff.stderr and "+++" not in diff.stdout
    assert (project / "a.py").read_text() == TWO + display_only
    written = run("fix", "--write", "--statistics", "a.py", cwd=project)
    assert written.exit_code == 1 and written.stdout == diff.stdout  # ROC105 remains
    assert "is_rocm else" in (project / "a.py").read_text()
    (project / "b.py").write_text(HAZARD)
    clean = run("fix", "--write", "--statistics", "b.py", cwd=project)
    assert clean.exit_code == 0 and clean.stdout == "All checks passed!\n"


def test_json_url_is_the_rules_section_in_the_repository(project):
    from rocmport import docs

    (project / "a.py").write_text(TWO + "def f(:\n")  # ROC001 has a section too
    (project / "b.py").write_text(TWO)
    items = json.loads(run("lint", "--output-format", "json", "a.py", "b.py", cwd=project).stdout)
    rules_md = (Path(__file__).resolve().parents[1] / "docs" / "rules.md").read_text(encoding="utf-8")
    anchors = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.+)$", rules_md, re.M)}
    assert {item["code"] for item in items} == {"ROC001", "ROC101", "ROC102"}
    for item in items:
        prefix = f"{docs.HOMEPAGE}/blob/main/docs/rules.md#"
        assert item["url"].startswith(prefix), item
        anchor = item["url"][len(prefix):]
        assert anchor in anchors and anchor.startswith(item["code"].lower() + "-")


# -- --add-noqa --------------------------------------------------------------------------------

def test_add_noqa_baselines_merges_keeps_bytes_and_is_idempotent(project):
    source = ('import torch\r\n'
              'f = torch.compile(g, mode="reduce-overhead")\r\n'
              'h = torch.compile(k, mode="reduce-overhead")  # noqa: E501\r\n'
              'j = torch.compile(k, mode="reduce-overhead")  # keep this comment\r\n'
              '\tx = 1\r\n'.replace("\tx = 1\r\n", "y = '\u00e9'\r\n"))
    data = b"\xef\xbb\xbf" + source.encode("utf-8")  # BOM, CRLF, non-ASCII
    (project / "a.py").write_bytes(data)
    result = run("lint", "--add-noqa", "a.py", cwd=project)
    assert result.exit_code == 0, result.output
    assert result.stderr.strip() == "Added 3 noqa directives."
    expected = ('import torch\r\n'
                'f = torch.compile(g, mode="reduce-overhead")  # noqa: ROC101\r\n'
                'h = torch.compile(k, mode="reduce-overhead")  # noqa: E501, ROC101\r\n'
                'j = torch.compile(k, mode="reduce-overhead")  # keep this comment  # noqa: ROC101\r\n'
                "y = '\u00e9'\r\n")
    assert (project / "a.py").read_bytes() == b"\xef\xbb\xbf" + expected.encode("utf-8")
    again = run("lint", "--add-noqa", "a.py", cwd=project)
    assert again.exit_code == 0 and again.stderr.strip() == "Added 0 noqa directives."
    assert (project / "a.py").read_bytes() == b"\xef\xbb\xbf" + expected.encode("utf-8")
    assert run("lint", "a.py", cwd=project).exit_code == 0  # the baseline silences everything


def test_add_noqa_leaves_lines_it_cannot_comment(project):
    # A finding whose line ends inside a multi-line string or with a backslash cannot take a
    # comment without changing the code: it is skipped and still reported.
    source = ('import torch\n'
              'f = torch.compile(g, mode="reduce-overhead", options=\\\n'
              '    None)\n')
    (project / "a.py").write_text(source)
    result = run("lint", "--add-noqa", "a.py", cwd=project)
    assert result.exit_code == 0
    assert "Added 0 noqa directives." in result.stderr and "1 finding could not get one" in result.stderr
    assert (project / "a.py").read_text() == source
    assert run("lint", "a.py", cwd=project).exit_code == 1


def test_add_noqa_refuses_stdin(project):
    result = run("lint", "--add-noqa", "-", cwd=project, input=HAZARD)
    assert result.exit_code == 2 and result.stderr.startswith("error: --add-noqa")


# -- exit codes --------------------------------------------------------------------------------

def test_exit_zero_reports_and_exits_0(project):
    (project / "a.py").write_text(HAZARD)
    result = run("lint", "--exit-zero", "a.py", cwd=project)
    assert result.exit_code == 0 and MESSAGE_101 in result.stdout
    assert run("fix", "--exit-zero", "a.py", cwd=project).exit_code == 0  # a diff, exit 0
    missing = run("lint", "--exit-zero", "nope.py", cwd=project)
    assert missing.exit_code == 2  # errors are still errors


def test_fix_only_applies_fixes_reports_nothing_else_and_exits_0(project):
    display_only = "from dataclasses import dataclass\n\n@dataclass\nclass C:\n    compile_mode: str = \"reduce-overhead\"\n"
    (project / "a.py").write_text(HAZARD)
    (project / "b.py").write_text(display_only)
    result = run("fix", "--write", "--fix-only", "a.py", "b.py", cwd=project)
    assert result.exit_code == 0, result.output
    assert "ROC105" not in result.output and result.stdout == ""
    assert "is_rocm" in (project / "a.py").read_text()  # the safe fix was applied
    assert (project / "b.py").read_text() == display_only
    # the default fix hook's contract: a second run changes nothing and passes
    assert run("fix", "--write", "--fix-only", "a.py", "b.py", cwd=project).exit_code == 0


def test_exit_non_zero_on_fix(project):
    (project / "a.py").write_text(HAZARD)
    first = run("fix", "--write", "--fix-only", "--exit-non-zero-on-fix", "a.py", cwd=project)
    assert first.exit_code == 1
    second = run("fix", "--write", "--fix-only", "--exit-non-zero-on-fix", "a.py", cwd=project)
    assert second.exit_code == 0
    (project / "c.py").write_text(HAZARD)
    plain = run("fix", "--write", "--exit-non-zero-on-fix", "c.py", cwd=project)
    assert plain.exit_code == 1  # fixed something, nothing left
    assert run("fix", "--write", "c.py", cwd=project).exit_code == 0


def test_fix_only_on_stdin(project):
    result = run("fix", "--fix-only", "-", cwd=project, input=HAZARD)
    assert result.exit_code == 0 and "is_rocm" in result.stdout and "ROC101" not in result.stderr


# -- -q, -s, -v --------------------------------------------------------------------------------

def test_quiet_silent_verbose(project):
    (project / "a.py").write_text(HAZARD)
    quiet = run("lint", "-q", "a.py", cwd=project)
    assert quiet.exit_code == 1 and quiet.stdout.count("\n") == 1 and MESSAGE_101 in quiet.stdout
    silent = run("lint", "-s", "a.py", cwd=project)
    assert silent.exit_code == 1 and silent.output == ""
    (project / "clean.py").write_text("x = 1\n")
    assert run("lint", "-q", "clean.py", cwd=project).output == ""
    verbose = run("lint", "-v", "--no-cache", "a.py", cwd=project)
    assert verbose.exit_code == 1
    assert "[rocmport] configuration: " in verbose.stderr and "[rocmport] 1 file to check" in verbose.stderr
    assert "[rocmport] checked 1 file in " in verbose.stderr and "1 files" not in verbose.stderr
    assert MESSAGE_101 in verbose.stdout and "[rocmport]" not in verbose.stdout
    fix_quiet = run("fix", "--write", "-q", "a.py", cwd=project)
    assert fix_quiet.output == "" and fix_quiet.exit_code == 0


# -- --show-files, --show-settings -------------------------------------------------------------

def test_show_files_and_show_settings(project):
    (project / "a.py").write_text(HAZARD)
    (project / "sub").mkdir()
    (project / "sub" / "b.py").write_text("x = 1\n")
    (project / "notes.txt").write_text("nothing\n")
    shown = run("lint", "--show-files", cwd=project)
    assert shown.exit_code == 0
    assert shown.stdout.splitlines() == [str(project / "a.py"), str(project / "sub" / "b.py")]
    (project / "pyproject.toml").write_text("[tool.rocmport]\nignore = [\"ROC102\"]\n")
    settings = run("lint", "--show-settings", "a.py", cwd=project)
    assert settings.exit_code == 0
    lines = settings.stdout.splitlines()
    assert lines[0] == f"Resolved settings for: {project / 'a.py'}"
    assert lines[1] == f"Settings path: {project / 'pyproject.toml'}"
    assert "ignore = ('ROC102',)" in lines
    enabled = [line for line in lines if line.startswith("enabled rules = ")][0]
    assert "'ROC101'" in enabled and "'ROC102'" not in enabled
    assert run("lint", "--show-files", "nope.py", cwd=project).exit_code == 2


# -- colour ------------------------------------------------------------------------------------

def test_colour_only_on_a_terminal_and_as_the_environment_says(project):
    (project / "a.py").write_text(HAZARD)
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    cmd = [sys.executable, "-m", "rocmport", "lint", "--no-cache", "a.py"]
    piped = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True)
    assert "\x1b[" not in piped.stdout and MESSAGE_101 in piped.stdout
    forced = subprocess.run(cmd, cwd=project, env=dict(env, FORCE_COLOR="1"), capture_output=True, text=True)
    assert "\x1b[1;91mROC101\x1b[0m" in forced.stdout
    both = subprocess.run(cmd, cwd=project, env=dict(env, FORCE_COLOR="1", NO_COLOR="1"), capture_output=True,
                          text=True)
    assert "\x1b[" not in both.stdout  # NO_COLOR wins, as with ruff

    def on_tty(extra):
        master, slave = pty.openpty()
        proc = subprocess.Popen(cmd, cwd=project, env=dict(env, **extra), stdout=slave, stderr=subprocess.DEVNULL)
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=120)
        os.close(master)
        return b"".join(chunks).decode()

    assert "\x1b[1;91mROC101\x1b[0m" in on_tty({})
    assert "\x1b[" not in on_tty({"NO_COLOR": "1"}) and "ROC101" in on_tty({"NO_COLOR": "1"})
    into_file = subprocess.run(cmd + ["--output-file", "out.txt"], cwd=project, env=dict(env, FORCE_COLOR="1"))
    assert into_file.returncode == 1 and "\x1b[" not in (project / "out.txt").read_text()


@pytest.mark.parametrize("when, environment, coloured", [
    ("always", {}, True), ("always", {"NO_COLOR": "1"}, True), ("never", {"FORCE_COLOR": "1"}, False),
    ("auto", {"FORCE_COLOR": "1"}, True), ("auto", {}, False), ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),
])
def test_color_flag_beats_the_environment_as_ruffs_does(project, when, environment, coloured):
    (project / "a.py").write_text(HAZARD)
    env = {"NO_COLOR": None, "FORCE_COLOR": None, **environment}
    result = run("lint", "--no-cache", "--color", when, "a.py", cwd=project, env=env)
    assert result.exit_code == 1 and ("\x1b[1;91mROC101\x1b[0m" in result.stdout) == coloured
    assert MESSAGE_101 in re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    assert run("lint", "--color", "sometimes", "a.py", cwd=project).exit_code == 2


# -- selection: the command line beats the configuration --------------------------------------

def test_command_line_select_beats_configured_ignore(project):
    (project / "pyproject.toml").write_text('[tool.rocmport]\nignore = ["ROC101"]\n')
    (project / "a.py").write_text(TWO)
    assert "ROC101" not in run("lint", "a.py", cwd=project).stdout
    selected = run("lint", "--select", "ROC101", "a.py", cwd=project)
    assert selected.exit_code == 1 and selected.stdout.count("ROC101") == 2 and "ROC102" not in selected.stdout
    extended = run("lint", "--extend-select", "ROC101", "a.py", cwd=project)
    assert extended.stdout.count("ROC101") == 2 and "ROC102" in extended.stdout
    both = run("lint", "--select", "ROC1", "--ignore", "ROC102", "a.py", cwd=project)
    assert both.stdout.count("ROC101") == 2 and "ROC102" not in both.stdout
    (project / "pyproject.toml").write_text('[tool.rocmport]\nselect = ["ROC102"]\n')
    assert "ROC101" not in run("lint", "a.py", cwd=project).stdout
    ext = run("lint", "--extend-select", "ROC101", "a.py", cwd=project)
    assert "ROC101" in ext.stdout and "ROC102" in ext.stdout


# -- stdin -------------------------------------------------------------------------------------

def test_stdin_filename_reads_stdin_as_ruff_does(project):
    (project / "a.py").write_text("x = 1\n")
    # --stdin-filename alone reads stdin (not the directory)
    alone = run("lint", "--stdin-filename", "model.py", cwd=project, input=HAZARD)
    assert alone.exit_code == 1 and alone.stdout.startswith("model.py:2:27: ROC101")
    # ... and paths beside it are ignored with ruff's warning
    beside = run("lint", "--stdin-filename", "model.py", "a.py", cwd=project, input=HAZARD)
    assert beside.exit_code == 1 and beside.stdout.startswith("model.py:2:27: ROC101")
    assert "warning: Ignoring file a.py in favor of standard input." in beside.stderr
    dash = run("lint", "-", cwd=project, input=HAZARD)
    assert dash.exit_code == 1 and dash.stdout.startswith("-:2:27: ROC101")
    fixed = run("fix", "--stdin-filename", "model.py", cwd=project, input=HAZARD)
    assert "is_rocm" in fixed.stdout


def test_force_exclude_applies_to_stdin_filename(project):
    (project / "pyproject.toml").write_text('[tool.rocmport]\nextend-exclude = ["generated"]\n')
    args = ("--force-exclude", "--stdin-filename", "generated/model.py", "-")
    linted = run("lint", *args, cwd=project, input=HAZARD)
    assert linted.exit_code == 0 and "ROC101" not in linted.output
    fixed = run("fix", *args, cwd=project, input=HAZARD)
    assert fixed.exit_code == 0 and fixed.stdout == HAZARD  # passed through unchanged
    # without --force-exclude the name does not exclude it
    assert run("lint", "--stdin-filename", "generated/model.py", "-", cwd=project, input=HAZARD).exit_code == 1
    # an included name is checked as usual
    assert run("lint", "--force-exclude", "--stdin-filename", "src/model.py", cwd=project,
               input=HAZARD).exit_code == 1


# -- paths as ruff prints them; setup's exit status as fix's -------------------------------------

def test_a_walk_of_the_working_directory_prints_plain_names(project):
    (project / "a.py").write_text(HAZARD)
    (project / "sub").mkdir()
    (project / "sub" / "b.py").write_text(HAZARD)
    result = run("lint", "--no-cache", ".", cwd=project)
    assert [line.split(":")[0] for line in result.stdout.splitlines()[:2]] == ["a.py", "sub/b.py"]
    assert run("lint", "--no-cache", "--show-files", ".", cwd=project).stdout.splitlines() == [
        str(project / "a.py"), str(project / "sub" / "b.py")]


def test_setup_without_write_exits_1_when_it_would_change_a_file(project):
    script = project / "train.py"
    script.write_text("import torch\n\n\ndef main():\n    print(torch.compile(abs, mode=\"max-autotune\"))\n\n\n"
                      "if __name__ == \"__main__\":\n    main()\n")
    before = script.read_text()
    shown = run("setup", "train.py", cwd=project)
    assert shown.exit_code == 1 and "+++ b/train.py" in shown.stdout
    assert "Would add the ROCm set-up to train.py" in shown.stderr and script.read_text() == before
    written = run("setup", "--write", "train.py", cwd=project)
    assert written.exit_code == 0 and "TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS" in script.read_text()
    again = run("setup", "train.py", cwd=project)
    assert again.exit_code == 0 and again.stdout == "" and "have the set-up already" in again.stderr
    (project / "broken.py").write_text("def f(:\n")
    broken = run("setup", "broken.py", cwd=project)
    assert broken.exit_code == 2 and "error: broken.py: " in broken.stderr and "already" not in broken.stderr


# -- one-line errors, exit 2 -------------------------------------------------------------------

def test_output_file_into_a_missing_folder_creates_it(project):
    (project / "a.py").write_text(HAZARD)  # as ruff; the Action's `sarif-file: reports/x.sarif`
    result = run("lint", "--output-format", "sarif", "--output-file", "reports/ci/out.sarif", "a.py", cwd=project)
    assert result.exit_code == 1 and result.stderr == ""
    assert json.loads((project / "reports" / "ci" / "out.sarif").read_text())["runs"][0]["results"]


def test_output_file_errors_are_one_line_and_exit_2(project):
    (project / "a.py").write_text(HAZARD)
    for target in (project / "a.py" / "out.txt", Path("/proc/rocmport-nope/out.txt"), Path("/proc/version")):
        result = run("lint", "--output-file", str(target), "a.py", cwd=project)
        assert result.exit_code == 2, (target, result.output)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: cannot write --output-file")
        assert "Traceback" not in result.output


def test_nonexistent_path_is_an_error_not_all_checks_passed(project):
    result = run("lint", "nope.py", cwd=project)
    assert result.exit_code == 2
    assert "All checks passed!" not in result.output
    assert result.stderr == "error: nope.py: no such file or directory\n"
    (project / "a.py").write_text(HAZARD)
    mixed = run("lint", "a.py", "nope.py", cwd=project)
    assert mixed.exit_code == 2 and MESSAGE_101 in mixed.stdout and "nope.py" in mixed.stderr


def test_internal_error_is_one_line_and_exit_2(project, monkeypatch):
    (project / "a.py").write_text(HAZARD)

    def boom(*args, **kwargs):
        raise RuntimeError("something broke\nsecond line")

    monkeypatch.setattr(cli, "_run", boom)
    result = CliRunner().invoke(main, ["lint", str(project / "a.py")])
    assert result.exit_code == 2
    assert result.stderr == ("error: internal error: RuntimeError: something broke "
                             "(ROCMPORT_TRACEBACK=1 shows where)\n")


def test_server_without_pygls_says_how_to_install_it(project):
    block = ("import sys\n"
             "class Block:\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name.split('.')[0] in ('pygls', 'lsprotocol'):\n"
             "            raise ImportError(name=name)\n"
             "sys.meta_path.insert(0, Block())\n"
             "from rocmport.cli import main\n"
             "main(['server'], prog_name='rocmport')\n")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.run([sys.executable, "-c", block], cwd=project, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == "error: `rocmport server` needs pygls (the `server` extra): pip install 'pygls>=2,<3'\n"


def test_add_noqa_never_writes_into_a_multi_line_string_or_a_notebook():
    from rocmport.findings import Finding, Position
    from rocmport.noqa import add_noqa

    source = 'x = """first\nsecond"""  # noqa:E501\ny = 1\r\n'
    inside = Finding("ROC105", "n", "m", Position(1, 5), Position(1, 9), filename="a.py")  # row 1 ends in the string
    after = Finding("ROC101", "n", "m", Position(2, 1), Position(2, 3), filename="a.py")  # merged into E501
    last = Finding("ROC102", "n", "m", Position(3, 1), Position(3, 2), filename="a.py")  # CRLF kept
    cell = Finding("ROC101", "n", "m", Position(1, 1), Position(1, 2), filename="nb.ipynb", cell=2)
    result = add_noqa(source.encode(), [inside, after, last, cell])
    assert result.data.decode() == 'x = """first\nsecond"""  # noqa:E501, ROC101\ny = 1  # noqa: ROC102\r\n'
    assert (result.added, result.skipped) == (2, 2)
    assert add_noqa(result.data, [after, last]).data is None  # nothing left to add
    assert add_noqa(b"x = (\n", [last]).data is None  # does not tokenize: left alone
