"""The bad-input catalogue (issue 8): each case with the exact message and exit code of the
command-line contract (2 for usage and internal errors, 1 when ROC001 findings remain), and
every other file still processed. ``tests/test_cli.py`` has the first few cases (syntax
error, NUL byte, invalid UTF-8, a directory named ``dir.py`` given explicitly, a broken link
named explicitly, a missing path under ``lint``); these extend them.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport.cli import main

HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
FIXED_LINE = 'f = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")'
ROC101 = ('ROC101 [*] mode="reduce-overhead" turns on CUDA graphs, which hang or slow down on ROCm;'
          ' use "default" there')


def run(*args, cwd):
    old = os.getcwd()
    try:
        os.chdir(cwd)
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def out_lines(result):
    """stdout's lines, with any "./" dropped (a walk of "." prints "name", as ruff does;
    tests/test_cli_flags.py pins that down)."""
    return [line[2:] if line.startswith("./") else line for line in result.stdout.splitlines()]


def cli(*args, cwd, timeout=300):
    """In a child process: a crash of a native parser must not take pytest down."""
    return subprocess.run([sys.executable, "-m", "rocmport", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "ok.py").write_text(HAZARD)  # the other file that must still be processed
    return tmp_path


def assert_other_file_fixed(project):
    assert FIXED_LINE in (project / "ok.py").read_text()


def test_syntax_errors(project):
    (project / "unclosed.py").write_bytes(b"import torch\nx = (1,\n")
    (project / "indent.py").write_bytes(b"if x:\npass\n")
    (project / "hazard_broken.py").write_bytes(HAZARD.encode() + b"def f(:\n")
    result = run("lint", ".", cwd=project)
    assert result.exit_code == 1
    assert out_lines(result) == [
        "hazard_broken.py:3:7: ROC001 syntax error: invalid syntax",
        "indent.py:2:1: ROC001 syntax error: expected an indented block after 'if' statement on line 1",
        f"ok.py:2:27: {ROC101}",
        "unclosed.py:2:5: ROC001 syntax error: '(' was never closed",
        "Found 4 findings (1 fixable with `rocmport fix --write`).",
    ]
    result = run("fix", "--write", ".", cwd=project)
    assert result.exit_code == 1  # the ROC001 findings remain
    assert (project / "hazard_broken.py").read_bytes() == HAZARD.encode() + b"def f(:\n"
    assert_other_file_fixed(project)


def test_nul_byte(project):
    data = b"import torch\nx = 1\x00\n" + HAZARD.encode()
    (project / "nul.py").write_bytes(data)
    result = run("fix", "--write", ".", cwd=project)
    assert result.exit_code == 1
    assert out_lines(result) == ["nul.py:2:6: ROC001 source contains a NUL byte",
                                          "Found 1 finding (0 fixable with `rocmport fix --write`)."]
    assert (project / "nul.py").read_bytes() == data
    assert_other_file_fixed(project)


def test_invalid_utf8_without_a_cookie(project):
    data = b"import torch\n# caf\xe9\n" + HAZARD.encode()
    (project / "bad.py").write_bytes(data)
    result = run("lint", ".", cwd=project)
    assert result.exit_code == 1
    assert out_lines(result)[0] == (
        "bad.py:2:6: ROC001 invalid utf-8 byte 0xe9 (no encoding cookie declares another encoding)")
    assert out_lines(result)[1].startswith("ok.py:2:27: ROC101")


def test_latin1_cookie_is_decoded_and_kept(project):
    data = (b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9t\xe9'\n"
            b'f = torch.compile(g, mode="reduce-overhead")\n')
    (project / "lat.py").write_bytes(data)
    (project / "klingon.py").write_bytes(b"# -*- coding: klingon -*-\nx = 1\n")
    result = run("lint", "lat.py", "klingon.py", cwd=project)
    assert result.exit_code == 1
    assert out_lines(result) == [
        "klingon.py:1:1: ROC001 cannot determine the encoding: unknown encoding: klingon",
        f"lat.py:4:27: {ROC101}",
        "Found 2 findings (1 fixable with `rocmport fix --write`).",
    ]
    assert run("fix", "--write", "lat.py", cwd=project).exit_code == 0
    fixed = (project / "lat.py").read_bytes()
    assert fixed.startswith(b"# -*- coding: latin-1 -*-\n")
    assert b"s = '\xe9t\xe9'\n" in fixed  # still latin-1, not re-encoded as UTF-8
    assert FIXED_LINE.encode() in fixed
    compile(fixed, "lat.py", "exec")


def test_bom_is_kept(project):
    (project / "bom.py").write_bytes(b"\xef\xbb\xbf" + HAZARD.encode())
    result = run("lint", "bom.py", cwd=project)
    assert result.exit_code == 1 and out_lines(result)[0] == f"bom.py:2:27: {ROC101}"
    assert run("fix", "--write", "bom.py", cwd=project).exit_code == 0
    fixed = (project / "bom.py").read_bytes()
    assert fixed.startswith(b"\xef\xbb\xbf") and fixed.count(b"\xef\xbb\xbf") == 1
    assert fixed.endswith(FIXED_LINE.encode() + b"\n")


@pytest.mark.parametrize("name,newline", [("crlf", b"\r\n"), ("cr", b"\r")])
def test_crlf_and_cr_line_endings(project, name, newline):
    data = HAZARD.encode().replace(b"\n", newline)
    (project / f"{name}.py").write_bytes(data)
    result = run("lint", f"{name}.py", cwd=project)
    assert out_lines(result)[0] == f"{name}.py:2:27: {ROC101}"
    assert run("fix", "--write", f"{name}.py", cwd=project).exit_code == 0
    fixed = (project / f"{name}.py").read_bytes()
    assert fixed.startswith(b"import torch" + newline)
    assert fixed.endswith(FIXED_LINE.encode() + newline)
    other = {b"\r\n": [b"\n", b"\r"], b"\r": [b"\n"]}[newline]
    assert not any(o in fixed.replace(b"\r\n", b"") for o in other), "a foreign line ending crept in"
    assert run("fix", "--write", f"{name}.py", cwd=project).exit_code == 0
    assert (project / f"{name}.py").read_bytes() == fixed


def test_mixed_line_endings(project):
    data = b'import torch\r\nx = 1\rf = torch.compile(g, mode="reduce-overhead")\ny = 2\r\n'
    (project / "mixed.py").write_bytes(data)
    result = run("lint", "mixed.py", cwd=project)
    assert out_lines(result)[0] == f"mixed.py:3:27: {ROC101}"
    assert run("fix", "--write", "mixed.py", cwd=project).exit_code == 0
    fixed = (project / "mixed.py").read_bytes()
    # every original terminator is where it was; the gate line uses the first one (CRLF)
    assert fixed.startswith(b"import torch\r\n")
    assert fixed.endswith(b"x = 1\r" + FIXED_LINE.encode() + b"\ny = 2\r\n")
    assert b'is_rocm = getattr(torch.version, "hip", None) is not None\r\n' in fixed


def test_tabs_and_form_feeds(project):
    """A form feed at the start of a line before a hazard: LibCST's positions skip such
    bytes, so the finding's column, the edit's position and the fixed bytes must all
    account for it."""
    data = (b"import torch\n\x0cf = torch.compile(g, mode=\"reduce-overhead\")\n"
            b"if x:\n\th = torch.compile(g, mode=\"max-autotune\")\n"
            b"\x0c\ndef k():\n\x0c    return torch.compile(g,\x0c mode=\"reduce-overhead\")\n")
    (project / "ff.py").write_bytes(data)
    result = run("lint", "--output-format", "json", "ff.py", cwd=project)
    assert result.exit_code == 1
    items = json.loads(result.stdout)
    assert [(i["code"], i["location"]["row"], i["location"]["column"]) for i in items] == [
        ("ROC101", 2, 28), ("ROC102", 4, 28), ("ROC101", 7, 36)]
    lines = data.decode().split("\n")  # not splitlines(): it splits at form feeds too
    for item in items:  # each edit starts exactly at the mode string in the original line
        edit = item["fix"]["edits"][0]
        line = lines[edit["location"]["row"] - 1]
        start, end = edit["location"]["column"] - 1, edit["end_location"]["column"] - 1
        assert line[start:end] in ('"reduce-overhead"', '"max-autotune"')
    assert run("fix", "--write", "ff.py", cwd=project).exit_code == 0
    fixed = (project / "ff.py").read_bytes()
    assert b"\n\x0c" + FIXED_LINE.encode() + b"\n" in fixed
    assert b'\n\th = torch.compile(g, mode="max-autotune-no-cudagraphs" if is_rocm else "max-autotune")\n' in fixed
    assert (b'\n\x0c\ndef k():\n\x0c    return torch.compile(g,\x0c mode="default" if is_rocm else '
            b'"reduce-overhead")\n') in fixed
    compile(fixed, "ff.py", "exec")
    assert run("fix", "ff.py", cwd=project).exit_code == 0  # settled


def test_ten_megabyte_file(project):
    """10 MB of valid code with nothing to find: checked whole, exit 0, never rewritten."""
    chunk = "".join(f"value_{i} = {i} * 2  # padding line {i:06d} " + "x" * 40 + "\n" for i in range(1000))
    data = ("import torch\n" + chunk * (10_000_000 // len(chunk) + 1)).encode()
    assert len(data) >= 10_000_000
    big = project / "big.py"
    big.write_bytes(data)
    mtime = os.stat(big).st_mtime_ns
    result = run("fix", "--write", "big.py", "ok.py", cwd=project)
    assert result.exit_code == 0, result.output
    assert os.stat(big).st_mtime_ns == mtime and big.read_bytes() == data
    assert_other_file_fixed(project)


@pytest.mark.parametrize("name,source,message", [
    ("parens", "import torch\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
     "parens.py:2:205: ROC001 syntax error: too many nested parentheses"),
    ("brackets", "import torch\nx = " + "[" * 3000 + "torch.compile(g, mode='reduce-overhead')" + "]" * 3000 + "\n",
     "brackets.py:2:205: ROC001 syntax error: too many nested parentheses"),
    ("operators", "import torch\nx = 1" + " + 1" * 20000 + "\nf = torch.compile(g, mode='reduce-overhead')\n",
     "operators.py:1:1: ROC001 cannot parse: nesting too deep"),
    ("unary", "x = " + "-" * 20000 + "1\n", "unary.py:1:1: ROC001 cannot parse: nesting too deep"),
    ("not", "import torch\nx = " + "not " * 20000 + "torch.compile(g, mode='reduce-overhead')\n",
     "not.py:1:1: ROC001 cannot parse: nesting too deep"),
    ("attributes", "import torch\nx = a" + ".b" * 20000 + "\ntorch.compile(g, mode='max-autotune')\n",
     "attributes.py:1:1: ROC001 cannot parse: nesting too deep"),
])
def test_deeply_nested_expressions(project, name, source, message):
    """No RecursionError escapes, and LibCST's native parser (which overflows the C stack
    on such input: a segmentation fault) never sees it. In a child process, for safety."""
    (project / f"{name}.py").write_text(source)
    for command in (["lint"], ["fix", "--write"]):
        proc = cli(*command, f"{name}.py", "ok.py", cwd=project)
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stdout + proc.stderr
        assert message in proc.stdout.splitlines()
    assert (project / f"{name}.py").read_text() == source
    assert_other_file_fixed(project)


COMPILE = "f = torch.compile(g, mode='reduce-overhead')\n"
ELIF = "x = 1\nif x == 0:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n" for i in range(1, 500))


@pytest.mark.parametrize("name, source", [
    ("elif500", "import torch\n" + ELIF + COMPILE),
    ("sum500", "import torch\ny = " + " + ".join(["x"] * 500) + "\n" + COMPILE),
    ("sum2900", "import torch\ny = " + " + ".join(["x"] * 2900) + "\n" + COMPILE),
    ("attrs900", "import torch\ny = a" + ".b" * 900 + "\n" + COMPILE),
    ("import1000", "import torch\nimport " + ".".join(["a"] * 1000) + "\n" + COMPILE),
])
def test_deep_valid_code_is_analysed_and_fixed(project, name, source):
    """Valid Python nested 500 to 2,900 levels (issue 31: a RecursionError's traceback,
    "All checks passed!" and exit 2) is checked on a deep stack and fixed like any file."""
    (project / f"{name}.py").write_text(source)
    proc = cli("lint", "--no-cache", f"{name}.py", "ok.py", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-2000:]
    assert f"{name}.py:" in proc.stdout and "ROC101" in proc.stdout.split(f"{name}.py:", 1)[1], proc.stdout
    proc = cli("fix", "--no-cache", "--write", f"{name}.py", "ok.py", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "if is_rocm else 'reduce-overhead'" in (project / f"{name}.py").read_text()
    assert_other_file_fixed(project)


@pytest.mark.parametrize("parts", [5000, 8000])
def test_an_import_of_thousands_of_dotted_parts_is_a_finding(project, parts):
    """CPython holds the name as one string, LibCST as nested attributes: 8,000 parts made
    its native parser overflow the C stack (a segmentation fault)."""
    source = "import torch\nimport " + ".".join(["a"] * parts) + "\n" + COMPILE
    (project / "dotted.py").write_text(source)
    for command in (["lint"], ["fix", "--write"]):
        proc = cli(*command, "--no-cache", "dotted.py", "ok.py", cwd=project)
        assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr
        assert ("dotted.py:2:1: ROC001 too complex for the parser: a module name of more than 1000 dotted parts"
                " (LibCST would crash on it)") in proc.stdout
    assert (project / "dotted.py").read_text() == source
    assert_other_file_fixed(project)


def _flat_python(size: int) -> str:
    """Module-level statements only (no block to cut the file after), hazards among them."""
    rows, n = ["import torch\n"], 0
    total = len(rows[0])
    while total < size:
        row = (f"value_{n} = {n} * 2 + len(table_{n % 7}) if {n} % 3 else -{n}  # row {n}\n"
               f'table_{n} = {{"name": "row{n}", "scale": value_{n} / 3, "tags": [{n}, {n + 1}]}}\n'
               + (f'compiled_{n} = torch.compile(model, mode="reduce-overhead")\n' if n % 500 == 0 else ""))
        rows.append(row)
        total += len(row)
        n += 1
    return "".join(rows)


def _limited(*args, cwd, gigabytes=8):
    """The command line under ``ulimit -v`` (an allocation LibCST's native parser cannot make
    aborts the process: no exception, no finding, exit 134)."""
    command = " ".join([f"ulimit -v {gigabytes * 1024 * 1024};", sys.executable, "-m", "rocmport", *args])
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=1800)


@pytest.mark.slow
def test_a_31_mb_file_under_an_8_gb_limit_is_a_finding(project):
    """Issue 31: a 31 MB file aborted the run under an 8 GB limit."""
    (project / "big.py").write_text(_flat_python(31_000_000))
    proc = _limited("lint", "--no-cache", "big.py", "ok.py", cwd=project)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    assert out_lines(proc)[0].startswith("big.py:1:1: ROC001 too large to analyse: 29.")
    assert out_lines(proc)[1].startswith("ok.py:2:27: ROC101")
    proc = _limited("fix", "--no-cache", "--write", "big.py", "ok.py", cwd=project)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr[-2000:])
    assert_other_file_fixed(project)


@pytest.mark.slow
def test_a_50_mb_notebook_under_an_8_gb_limit_is_a_finding(project):
    chunk = _flat_python(120_000)
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": chunk.replace("value_", f"v{i}_").splitlines(keepends=True)} for i in range(400)]
    data = json.dumps({"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=1)
    assert len(data) > 50_000_000
    (project / "big.ipynb").write_text(data)
    proc = _limited("lint", "--no-cache", "big.ipynb", "ok.py", cwd=project)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    assert out_lines(proc)[0].startswith("big.ipynb:cell 1:1:1: ROC001 too large to analyse:")
    assert out_lines(proc)[1].startswith("ok.py:2:27: ROC101")


def test_a_file_that_cannot_be_cut_is_refused_before_libcst(monkeypatch):
    """One statement larger than LibCST takes at once (its working memory, not its tree, is
    the limit there): a finding, and LibCST never sees it."""
    from rocmport import parsing
    from rocmport.config import Settings
    from rocmport.inputs import check_bytes

    monkeypatch.setattr(parsing, "MAX_PIECE_CHARS", 20_000)
    source = "import torch\nTABLE = [\n" + "".join(f"    {i},\n" for i in range(5000)) + "]\n" + HAZARD
    report = check_bytes(source.encode(), "table.py", Settings())
    assert [f.code for f in report.findings] == ["ROC001"], report.internal_error
    assert report.findings[0].message.startswith("too large for the parser: ")


def test_empty_files(project):
    for name in ("empty.py", "pkg/__init__.py", "blank.py"):
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_bytes(b"" if name != "blank.py" else b"\n\n   \n")
    os.remove(project / "ok.py")
    result = run("lint", ".", cwd=project)
    assert result.exit_code == 0 and result.stdout == "All checks passed!\n"
    result = run("fix", "--write", ".", cwd=project)
    assert result.exit_code == 0 and (project / "empty.py").read_bytes() == b""


def test_directory_named_like_a_python_file_in_a_walked_tree(project):
    inner = project / "pkg" / "x.py"
    inner.mkdir(parents=True)
    (inner / "inner.py").write_text(HAZARD)
    result = run("lint", ".", cwd=project)
    assert result.exit_code == 1
    assert [line.split(":")[0] for line in out_lines(result)[:-1]] == ["ok.py", "pkg/x.py/inner.py"]
    assert "ROC001" not in result.stdout
    assert run("fix", "--write", ".", cwd=project).exit_code == 0
    assert FIXED_LINE in (inner / "inner.py").read_text()


def test_broken_and_looping_symlinks_in_a_walked_tree(project):
    os.symlink(project / "missing.py", project / "broken.py")
    os.symlink(project / "loop_b.py", project / "loop_a.py")
    os.symlink(project / "loop_a.py", project / "loop_b.py")
    os.symlink(project, project / "self_dir")  # a directory link that would loop: not followed
    result = run("fix", "--write", ".", cwd=project)
    assert result.exit_code == 1
    assert out_lines(result) == [
        "broken.py:1:1: ROC001 cannot read: broken symbolic link",
        "loop_a.py:1:1: ROC001 cannot read: Too many levels of symbolic links",
        "loop_b.py:1:1: ROC001 cannot read: Too many levels of symbolic links",
        "Found 3 findings (0 fixable with `rocmport fix --write`).",
    ]
    assert os.path.islink(project / "broken.py") and os.path.islink(project / "loop_a.py")
    assert_other_file_fixed(project)


def as_nobody(*args, cwd):
    """rocmport run as the unprivileged user ``nobody`` (these cases must run under root too)."""
    import shutil

    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:  # pragma: no cover - util-linux is in the CI image
            pytest.fail("setpriv is needed to run the permission cases as root")
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    else:
        prefix = []
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    return subprocess.run(prefix + [sys.executable, "-m", "rocmport", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.fixture
def open_project():
    """A project that ``nobody`` can enter and write (pytest's tmp_path is root's alone)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="rocmport-perm-"))
    os.chmod(base, 0o777)
    (base / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (base / "ok.py").write_text(HAZARD)
    if os.geteuid() == 0:
        os.chown(base / "ok.py", 65534, 65534)  # nobody's own file (rocmport keeps owners)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_unreadable_file(open_project):
    path = open_project / "secret.py"
    path.write_text(HAZARD)
    os.chmod(path, 0)
    result = as_nobody("fix", "--write", "--no-cache", ".", cwd=open_project)
    assert result.returncode == 1, result.stderr
    assert out_lines(result)[0] == "secret.py:1:1: ROC001 cannot read: Permission denied"
    assert_other_file_fixed(open_project)


@pytest.mark.parametrize("command", [("lint",), ("fix", "--write")])
def test_unreadable_file_named_on_the_command_line(open_project, command):
    """pre-commit and editors always name files: one the user cannot read is ROC001 and the
    others are still checked (click's Path type used to stop the run with a usage error)."""
    path = open_project / "secret.py"
    path.write_text(HAZARD)
    os.chmod(path, 0)
    result = as_nobody(*command, "--no-cache", "secret.py", "ok.py", cwd=open_project)
    assert result.returncode == 1, result.stderr
    assert "Usage:" not in result.stderr and "not readable" not in result.stderr
    assert "secret.py:1:1: ROC001 cannot read: Permission denied" in result.stdout.splitlines()
    if command == ("lint",):
        assert f"ok.py:2:27: {ROC101}" in result.stdout.splitlines()
    else:
        assert_other_file_fixed(open_project)


def test_read_only_file_with_a_fix_pending(open_project):
    path = open_project / "ro.py"
    path.write_text(HAZARD)
    os.chmod(path, 0o444)
    result = as_nobody("fix", "--write", "--no-cache", "ro.py", "ok.py", cwd=open_project)
    assert result.returncode == 2, result.stderr
    assert "error: ro.py: cannot write: Permission denied (the file is read-only)" in result.stderr
    assert path.read_text() == HAZARD and stat.S_IMODE(os.stat(path).st_mode) == 0o444
    assert_other_file_fixed(open_project)
    assert not [p for p in open_project.iterdir() if p.name.startswith(".rocmport-")]


def test_write_failure_is_reported_not_crashed(project, monkeypatch):
    """The same as the read-only case, for any user: the writer refuses one file."""
    import rocmport.writer as writer_module  # the CLI imports write_atomic from it when it writes

    real = writer_module.write_atomic

    def refuse(path, data, **kwargs):
        if os.path.basename(path) == "ro.py":
            raise PermissionError(13, "Permission denied (the file is read-only)", path)
        return real(path, data, **kwargs)

    monkeypatch.setattr(writer_module, "write_atomic", refuse)
    (project / "ro.py").write_text(HAZARD)
    result = run("fix", "--write", "ro.py", "ok.py", cwd=project)
    assert result.exit_code == 2
    assert "error: ro.py: cannot write: Permission denied (the file is read-only)" in result.stderr
    assert (project / "ro.py").read_text() == HAZARD
    assert_other_file_fixed(project)


def test_paths_that_do_not_exist(project):
    result = run("fix", "--write", "nope.py", "missing_dir", "ok.py", cwd=project)
    assert result.exit_code == 2
    assert "error: nope.py: no such file or directory" in result.stderr
    assert "error: missing_dir: no such file or directory" in result.stderr
    assert_other_file_fixed(project)
    result = run("lint", "nope.py", cwd=project)
    assert result.exit_code == 2 and result.stderr == "error: nope.py: no such file or directory\n"
