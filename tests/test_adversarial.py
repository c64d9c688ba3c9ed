"""The adversarial catalogue (issue 18): every way an adversarial run broke rocmport, each
pinned down so it stays fixed. No input, path, file type, configuration, cache state,
signal or concurrent writer may make rocmport crash, hang, read without bound, change a
byte outside a fix, lose someone else's edit, write outside its tree, or answer differently
with and without the cache. Choices are documented in docs/reliability.md.

Cases that could crash the interpreter or hang run in a child process with a timeout.
Permission cases run the check as ``nobody`` (``setpriv``), so they really run as root.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmport import cache as cache_module
from rocmport.cache import FORMAT, Cache, settings_fingerprint
from rocmport.cli import main
from rocmport.config import Settings
from rocmport.inputs import check_bytes
from rocmport.writer import ChangedOnDisk, write_atomic

ROOT = Path(__file__).resolve().parent.parent
HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
FIXED_LINE = 'f = torch.compile(g, mode="default" if is_rocm else "reduce-overhead")'
SLIM = "[tool.rocmport.prelude]\nrng-patch = false\ninductor-setup = false\n"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args, cwd, timeout=120, stdin=None, **kw):
    """rocmport in a child process (a native crash or a hang must not take pytest down)."""
    return subprocess.run([sys.executable, "-m", "rocmport", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=stdin, env=ENV, **kw)


def run(*args, cwd):
    old = os.getcwd()
    try:
        os.chdir(cwd)
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def clean_exit_2(result):
    """Exit 2 with one ``error:`` line on stderr, never a traceback."""
    err = result.stderr
    assert (result.returncode if hasattr(result, "returncode") else result.exit_code) == 2, err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.rocmport]\n" + SLIM)
    (tmp_path / "ok.py").write_text(HAZARD)
    return tmp_path


# ------------------------------------------------------------------------------------------
# Inputs LibCST cannot take
# ------------------------------------------------------------------------------------------

def test_flat_boolean_chain_is_refused_before_libcst_and_the_run_goes_on(project):
    chain = "x = " + " and ".join(["a"] * 8000) + "\n"
    (project / "chain.py").write_text(HAZARD + chain)
    (project / "chain_plain.py").write_text(chain)  # nothing to match: the quick parse path
    before = (project / "chain.py").read_bytes()
    result = cli("fix", "--write", "-j", "2", "--no-cache", "chain.py", "chain_plain.py", "ok.py", cwd=project)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    for name in ("chain.py", "chain_plain.py"):
        assert f"{name}:" in result.stdout and "ROC001 too complex for the parser" in result.stdout
    assert (project / "chain.py").read_bytes() == before
    assert FIXED_LINE in (project / "ok.py").read_text()


def test_a_worker_crash_never_kills_the_run(project):
    """The guard switched off (and the file checked on the worker's own 8 MB stack, not on a
    deep thread), LibCST really crashes its worker: the run reports that file and checks
    every other one."""
    (project / "chain.py").write_text(HAZARD + "x = " + " and ".join(["a"] * 9000) + "\n")
    _chain_crashes_alone(project, "import rocmport.parsing as p; p.MAX_BOOL_CHAIN = 10 ** 9;"
                                  " p.DEEP_MIN_BYTES = 10 ** 9\n")


def _chain_crashes_alone(project, setup: str) -> None:
    """With ``setup`` run first, check ok.py, chain.py and b.py in two workers: chain.py's
    worker dies; chain.py gets ROC001 and the others their findings, without a traceback."""
    (project / "b.py").write_text(HAZARD)
    script = setup + (
        "from rocmport.runner import check_files\n"
        "from rocmport.config import Settings\n"
        "reports = check_files(['ok.py', 'chain.py', 'b.py'], Settings(root='.'), jobs=2)\n"
        "for r in reports: print(r.path, [f.code for f in r.findings], r.findings and r.findings[0].message)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True,
                            timeout=120, env=ENV)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ok.py ['ROC101']") and lines[2].startswith("b.py ['ROC101']")
    assert lines[1].startswith("chain.py ['ROC001']") and "worker checking this file crashed" in lines[1]


# In the worker checking ``chain.py``: write half of the reply, then die (or hang there).
HALF_A_REPLY = """
import os, struct, time, multiprocessing.connection as c
PARENT, send = os.getpid(), c.Connection._send_bytes
def half(self, buf):
    if os.getpid() != PARENT and b"chain.py" in bytes(buf):
        os.write(self.fileno(), struct.pack("!i", len(buf)) + bytes(buf)[: len(buf) // 2])
        if not os.environ.get("HANG"):
            os._exit(9)
        open("half-sent", "w").close()
        time.sleep(3600)
    return send(self, buf)
c.Connection._send_bytes = half
"""


def test_a_worker_that_dies_in_the_middle_of_its_reply_never_hangs_the_run(project):
    """Found by CI: a worker killed while sending its report left ``concurrent.futures``'s
    reader thread waiting for the rest forever, and the run with it. A death is now the end
    of that worker's own pipe: the file is tried again alone, then reported."""
    (project / "chain.py").write_text(HAZARD)
    _chain_crashes_alone(project, HALF_A_REPLY)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_a_worker_is_in_the_middle_of_its_reply(project, signum, code):
    """The other half of what CI found: stopped while a reply was half read, the run
    printed its message and then waited for the pool's reader thread forever at exit (or
    raced it: a traceback from the standard library's exit hook)."""
    (project / "chain.py").write_text(HAZARD)
    script = HALF_A_REPLY + "from rocmport.cli import main\nmain(['lint', '--no-cache', '-j', '2', '.'])\n"
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=project, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**ENV, "HANG": "1"})
    deadline = time.time() + 60
    while time.time() < deadline and not (project / "half-sent").exists():
        time.sleep(0.05)
    assert (project / "half-sent").exists(), "no worker got to chain.py"
    workers = _children(proc.pid)
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()  # a hang fails the test without leaving the process behind
    assert proc.returncode == code and "Traceback" not in err, err
    assert "interrupted" in err
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers)


def test_implicitly_joined_strings_beyond_libcst_are_not_a_syntax_error():
    many = "import torch\nx = (" + " ".join(['"a"'] * 3001) + ")\n" + HAZARD
    findings = check_bytes(many.encode(), "s.py", Settings()).findings
    assert [f.code for f in findings] == ["ROC001"]
    assert findings[0].message.startswith("too complex for the parser: 3001 implicitly joined string literals")
    assert "syntax error" not in findings[0].message
    # LibCST parses 3,000; its visitors recurse once per joined string, on a deep stack
    # (issue 31: "cannot analyse: nesting too deep" past 1,000 before)
    fewer = "import torch\nx = (" + " ".join(['"a"'] * 3000) + ")\n" + HAZARD
    assert [f.code for f in check_bytes(fewer.encode(), "s.py", Settings()).findings] == ["ROC101"]
    some = "import torch\nx = (" + " ".join(['"a"'] * 300) + ")\n" + HAZARD
    assert [f.code for f in check_bytes(some.encode(), "s.py", Settings()).findings] == ["ROC101"]
    # a real syntax error stays one
    bad = check_bytes(b"x = (\n" + HAZARD.encode(), "s.py", Settings()).findings
    assert bad[0].message.startswith("syntax error")


# ------------------------------------------------------------------------------------------
# Notebooks
# ------------------------------------------------------------------------------------------

def notebook(cells, metadata="{}"):
    body = ",".join('{"cell_type": "code", "metadata": {}, "source": %s, "outputs": [], "execution_count": null}'
                    % (c if isinstance(c, str) and c.startswith("[") else json.dumps(c)) for c in cells)
    return ('{"cells": [%s], "metadata": %s, "nbformat": 4, "nbformat_minor": 5}' % (body, metadata)).encode()


def test_notebook_with_an_integer_over_4300_digits_is_analysed_and_kept(project):
    big = "9" * 5000
    data = notebook([HAZARD], '{"big": %s}' % big)
    report = check_bytes(data, "n.ipynb", Settings(), fix=True)
    assert report.internal_error is None
    assert report.fixed is not None and FIXED_LINE in json.loads(report.fixed, parse_int=str)["cells"][0]["source"]
    assert b'"big": ' + big.encode() in report.fixed
    assert report.fixed.endswith(data[data.index(b'], "metadata"'):])


def test_notebook_with_a_lone_surrogate_is_a_finding(project):
    data = notebook([HAZARD]).replace(b'"cells": [', b'"cells": [{"cell_type": "code", "metadata": {}, '
                                      b'"source": "x = \\"\\ud800\\"\\n", "outputs": []}, ')
    for fix in (False, True):
        report = check_bytes(data, "n.ipynb", Settings(), fix=fix)
        assert report.internal_error is None and report.fixed is None
        assert [f.code for f in report.findings] == ["ROC001"]
        assert "lone surrogate (\\ud800)" in report.findings[0].message


def test_notebook_metadata_nested_980_deep(project):
    data = notebook([HAZARD], '{"x": %s}' % ("[" * 980 + "]" * 980))
    for fix in (False, True):
        report = check_bytes(data, "n.ipynb", Settings(), fix=fix)
        assert report.internal_error is None and report.fixed is None
        assert [f.message for f in report.findings] == ["invalid notebook JSON: nesting too deep (more than 400 levels)"]


def test_notebook_source_line_ending_in_a_lone_cr_is_kept(project):
    lines = ["import torch\n", "x = 1\r", 'f = torch.compile(g, mode="reduce-overhead")\n', "y = 2\r\n", "z = 3"]
    data = notebook([json.dumps(lines)])
    report = check_bytes(data, "n.ipynb", Settings(), fix=True)
    fixed = json.loads(report.fixed)["cells"][0]["source"]
    assert "x = 1\r" in fixed and "y = 2\r\n" in fixed and fixed[-1] == "z = 3"
    assert FIXED_LINE + "\n" in fixed


# ------------------------------------------------------------------------------------------
# Files that are not files
# ------------------------------------------------------------------------------------------

def test_fifos_named_or_walked_are_never_read(project):
    os.mkfifo(project / "pipe.py")
    os.mkfifo(project / "pipe")
    walked = project / "walked"
    walked.mkdir()
    os.mkfifo(walked / "pipe2.py")
    os.mkfifo(walked / "pipe2")
    (walked / "ok2.py").write_text(HAZARD)
    result = cli("fix", "--write", "--output-format", "full", "pipe.py", "pipe", "walked", "ok.py", cwd=project,
                 timeout=60)
    assert result.returncode == 1, result.stderr
    assert "pipe.py:1:1: ROC001 cannot read: a named pipe (FIFO): not read" in result.stdout
    assert "pipe:1:1: ROC001 cannot read: a named pipe (FIFO): not read" in result.stdout
    assert "pipe2" not in result.stdout  # found by a walk: skipped
    assert FIXED_LINE in (project / "ok.py").read_text() and FIXED_LINE in (walked / "ok2.py").read_text()
    assert stat.S_ISFIFO(os.lstat(project / "pipe.py").st_mode)


def test_fifos_named_like_the_files_rocmport_reads_beside_the_code_are_never_read(project):
    """.gitignore, setup.cfg, ruff.toml, requirements files and the generated module: every
    file of the tree rocmport reads goes through ``source.read_regular`` or ``read_head``."""
    sub = project / "pkg"
    sub.mkdir()
    (sub / "__init__.py").write_text("")
    (sub / "train.py").write_text(HAZARD + "if __name__ == '__main__':\n    f()\n")
    for name in (".gitignore", "setup.cfg", "ruff.toml", "requirements.txt", "_rocmport.py"):
        os.mkfifo(sub / name)
    result = cli("fix", "--write", "pkg", cwd=project, timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    assert FIXED_LINE in (sub / "train.py").read_text()
    setup = cli("setup", "pkg/train.py", cwd=project, timeout=60)
    assert "Traceback" not in setup.stderr, setup.stderr


def test_only_source_reads_the_users_files():
    """One place reads bytes: no module but ``source`` opens a file of the user's tree (the
    exceptions read rocmport's own files, or /opt/rocm)."""
    import re

    own = {"source.py", "docs.py", "registry.py", "rocm_facts.py", "cache.py", "doctor.py", "lsp.py"}  # lsp: /proc
    pattern = re.compile(r"\bopen\(|read_bytes\(|read_text\(|parser\.read\(|tomllib\.load\(")
    found = [f"{path.name}:{n}" for path in sorted((ROOT / "rocmport").rglob("*.py")) if path.name not in own
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if pattern.search(line) and "os.open(" not in line and not line.lstrip().startswith("#")
             and "output_file" not in line]
    assert found == []


def test_dev_zero_as_a_path_and_on_stdin_is_bounded(project):
    import threading

    from rocmport.inputs import check_path

    found = []
    worker = threading.Thread(target=lambda: found.append(check_path("/dev/zero", Settings())), daemon=True)
    worker.start()
    worker.join(30)
    assert found and found[0].findings[0].message == "cannot read: a character device: not read"
    with open("/dev/zero", "rb") as zero:
        result = cli("lint", "-", cwd=project, timeout=60, stdin=zero)
    assert result.returncode == 1 and "-:1:1: ROC001 cannot read: larger than 64 MiB: not read" in result.stdout


# ------------------------------------------------------------------------------------------
# Clean exit 2: configuration, names, cache
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("content, message", [
    (b"tool = 5\n", "`tool` must be a table, not int"),
    (b"[tool]\nrocmport = 5\n", "`tool.rocmport` must be a table, not int"),
])
def test_configuration_of_the_wrong_shape(project, content, message):
    (project / "pyproject.toml").write_bytes(content)
    result = run("lint", "ok.py", cwd=project)
    clean_exit_2(result)
    assert message in result.stderr


def test_non_utf8_bytes_in_a_parent_pyproject(project):
    (project / "pyproject.toml").write_bytes(b'[tool.other]\nname = "\xff"\n')
    sub = project / "sub"
    sub.mkdir()
    (sub / "ok.py").write_text(HAZARD)
    result = run("lint", "ok.py", cwd=sub)
    clean_exit_2(result)
    assert "invalid TOML: not UTF-8 (byte 0xff" in result.stderr


def test_non_utf8_file_names(project):
    name = os.fsdecode(b"caf\xe9.py")
    (project / name).write_text(HAZARD)
    for args in (("lint", "--output-file", "out.txt", "."), ("fix", "--output-format", "json", ".")):
        assert run(*args, cwd=project).exit_code == 1, args
    assert b"caf\xe9.py" in (project / "out.txt").read_bytes()


def test_cache_entries_of_the_wrong_shape_or_a_fifo_are_misses(project):
    """A pack's line under the right key but of another shape, a FIFO, a link or a pack
    that is not ASCII: a miss each, never an error or a hang, and lint finds what is there."""
    settings = Settings(root=str(project))
    key = Cache(project / ".cache", settings).key("ok.py", HAZARD.encode())
    packs = project / ".cache" / f"v{FORMAT}" / "packs"
    packs.mkdir(parents=True)
    pack = packs / "1.pack"
    for content in ('{"a": 1}', "[1]", '[{"c": 5}]', "5", '[{"c": "ROC101", "n": 1, "m": "x", "s": [1, 1], '
                    '"e": [1, 1], "f": null, "cell": null, "u": null, "sp": [0, 0]}]', "[" * 100000,
                    '{"deps": {"m": ["x", "y"]}, "digest": "z", "findings": []}', "not json"):
        pack.write_text(f"{key} slot {content}\n")
        assert Cache(project / ".cache", settings).get(key, "ok.py") is None, content
    pack.write_bytes(f"{key} slot []\n\xff\n".encode("latin-1"))
    assert Cache(project / ".cache", settings).get(key, "ok.py") is None  # not ASCII: not one of ours
    pack.unlink()
    os.mkfifo(pack)
    assert Cache(project / ".cache", settings).get(key, "ok.py") is None  # a FIFO is never opened for reading
    (project / "elsewhere.pack").write_text(f"{key} slot []\n")
    os.symlink(project / "elsewhere.pack", packs / "2.pack")
    assert Cache(project / ".cache", settings).get(key, "ok.py") is None  # nor a link followed
    result = run("lint", "--cache-dir", ".cache", "ok.py", cwd=project)
    assert result.exit_code == 1 and "ROC101" in result.stdout

# ------------------------------------------------------------------------------------------
# Signals: exit codes, workers stopped
# ------------------------------------------------------------------------------------------

def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _slow_tree(root: Path, count=40):
    body = HAZARD + "".join(f"def f{i}(x):\n    return torch.compile(x, mode='max-autotune') + {i}\n"
                            for i in range(300))
    for n in range(count):
        (root / f"m{n}.py").write_text(body)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGKILL, -9)])
def test_killing_the_run_stops_its_workers(project, signum, code):
    _slow_tree(project)
    proc = subprocess.Popen([sys.executable, "-m", "rocmport", "lint", "--no-cache", "-j", "2", "."], cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    deadline = time.time() + 60
    workers = []
    while time.time() < deadline and len(workers) < 2:
        workers = _children(proc.pid)
        time.sleep(0.05)
    assert workers, "no worker started"
    time.sleep(0.3)
    proc.send_signal(signum)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers)


# ------------------------------------------------------------------------------------------
# Encodings: every byte outside a fix kept, or the file left alone
# ------------------------------------------------------------------------------------------

TEN = ["cp932", "big5", "big5hkscs", "cp950", "johab", "utf-7", "unicode_escape", "raw_unicode_escape",
       "iso2022_jp", "hz"]
TEXT = {"cp932": "日本語", "big5": "中文", "big5hkscs": "中文", "cp950": "中文", "johab": "한국어",
        "utf-7": "é€", "unicode_escape": "e", "raw_unicode_escape": "é", "iso2022_jp": "日本語", "hz": "中文"}


@pytest.mark.parametrize("encoding", TEN)
def test_encodings_that_do_not_round_trip(encoding):
    text = f"# -*- coding: {encoding} -*-\nimport torch\n# {TEXT[encoding]}\nf = torch.compile(g, mode=\"reduce-overhead\")\n"
    data = text.encode(encoding)
    if encoding == "unicode_escape":
        data = data.replace(b"\\n", b"\n")  # a real file: real newlines, escapes only in strings
        data += b's = "\\u00e9"\n'
    report = check_bytes(data, "e.py", Settings(), fix=True)
    assert report.internal_error is None
    if report.fixed is None:  # left alone, and said so
        assert any(f.code == "ROC002" and "left as it was" in f.message for f in report.findings)
        assert encoding in ("utf-7", "unicode_escape", "raw_unicode_escape", "iso2022_jp", "hz")
    else:  # every original line kept, byte for byte
        assert encoding in ("cp932", "big5", "big5hkscs", "cp950", "johab")
        kept = [line for line in data.splitlines(keepends=True) if b"compile" not in line]
        for line in kept:
            assert line in report.fixed
        assert report.fixed.decode(encoding).count(FIXED_LINE) == 1


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_line_that_is_only_a_backslash_continuation_is_refused_not_misplaced(project, newline):
    """Found by fuzz.py: LibCST's tree leaves out a continuation-only line before a statement,
    so every position after it was a line off (an internal error, or an edit in the wrong
    place). Such a file is refused with ROC001 at that line and never rewritten."""
    source = newline.join(["import torch", " \\", 'f = torch.compile(g, mode="reduce-overhead")', ""])
    report = check_bytes(source.encode(), "t.py", Settings(), fix=True)
    assert report.internal_error is None and report.fixed is None
    assert [(f.code, f.start.row) for f in report.findings] == [("ROC001", 2)]
    assert "backslash continuation" in report.findings[0].message
    (project / "cont.py").write_bytes(source.encode())
    result = cli("fix", "--write", "cont.py", cwd=project)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert (project / "cont.py").read_bytes() == source.encode()
    # a continuation inside an expression comes back whole: checked and fixed as usual
    inside = 'import torch\nf = torch.compile(g,\n\\\n mode="reduce-overhead")\n'
    assert [f.code for f in check_bytes(inside.encode(), "t.py", Settings()).findings] == ["ROC101"]


def test_a_byte_sequence_that_decodes_to_a_character_encoded_otherwise():
    data = b"# -*- coding: cp932 -*-\nimport torch\n# \x87\x90\n" + HAZARD.encode()[13:]
    assert "≒".encode("cp932") != b"\x87\x90"
    report = check_bytes(data, "e.py", Settings(), fix=True)
    assert report.fixed is None
    assert any(f.code == "ROC002" and "do not survive decoding" in f.message for f in report.findings)


# ------------------------------------------------------------------------------------------
# Writes: someone else's edit, ownership, links
# ------------------------------------------------------------------------------------------

def test_write_atomic_never_loses_an_edit_or_resurrects_a_file(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"theirs\n")
    with pytest.raises(ChangedOnDisk, match="changed on disk"):
        write_atomic(str(path), b"ours\n", expected=b"original\n")
    assert path.read_bytes() == b"theirs\n"
    path.unlink()
    with pytest.raises(ChangedOnDisk, match="deleted"):
        write_atomic(str(path), b"ours\n", expected=b"original\n")
    assert not path.exists() and os.listdir(tmp_path) == []


@pytest.mark.parametrize("edit", ["change", "delete"])
def test_fix_write_with_a_file_edited_meanwhile(project, monkeypatch, edit):
    from rocmport import runner as cli_module  # the CLI imports check_files from the runner when it runs

    real = cli_module.check_files

    def racing(files, *args, **kwargs):
        reports = real(files, *args, **kwargs)
        if edit == "change":
            (project / "ok.py").write_text(HAZARD + "# their edit\n")
        else:
            (project / "ok.py").unlink()
        return reports

    monkeypatch.setattr(cli_module, "check_files", racing)
    result = run("fix", "--write", "ok.py", cwd=project)
    assert result.exit_code == 2
    assert "error: ok.py: cannot write: " in result.stderr
    assert "Fixed 0 findings in 0 files." in result.stderr  # never a fix that did not land
    if edit == "change":
        assert (project / "ok.py").read_text() == HAZARD + "# their edit\n"
    else:
        assert not (project / "ok.py").exists()


def test_two_concurrent_runs_with_different_selections(project):
    both = HAZARD + "import torch._inductor.config as cfg\ncfg.triton.cudagraphs = True\n"
    for n in range(4):
        (project / f"m{n}.py").write_text(both)
    procs = [subprocess.Popen([sys.executable, "-m", "rocmport", "fix", "--write", "--no-cache", "--select", sel, "."],
                              cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
             for sel in ("ROC101", "ROC201")]
    outputs = [p.communicate(timeout=120) for p in procs]
    markers = {"ROC101": b'"default" if is_rocm', "ROC201": b"= True if not is_rocm"}
    for sel, proc, (_, err) in zip(("ROC101", "ROC201"), procs, outputs):
        assert "Traceback" not in err
        failed = {line.split(":")[0].split("error: ")[-1].lstrip("./") for line in err.splitlines()
                  if line.startswith("error:")}
        for n in range(4):
            name = f"m{n}.py"
            if name not in failed:  # what a run says it fixed is on disk
                assert markers[sel] in (project / name).read_bytes() or b"is_rocm" in (project / name).read_bytes()
    for n in range(4):
        compile((project / f"m{n}.py").read_bytes(), "m.py", "exec")


def test_root_keeps_owner_group_and_mode(project):
    if os.geteuid() != 0:
        pytest.skip("needs root to hand a file to another user")  # the CI and this machine run as root
    path = project / "ok.py"
    os.chown(path, 65534, 65534)
    os.chmod(path, 0o640)
    assert run("fix", "--write", "ok.py", cwd=project).exit_code == 0
    info = os.stat(path)
    assert (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (65534, 65534, 0o640)
    assert FIXED_LINE in path.read_text()


def test_hard_link_is_not_split(project):
    os.link(project / "ok.py", project / "other.py")
    result = run("fix", "--write", "ok.py", cwd=project)
    assert result.exit_code == 2 and "has 2 hard links; not rewritten" in result.stderr
    assert os.stat(project / "ok.py").st_ino == os.stat(project / "other.py").st_ino
    assert (project / "ok.py").read_text() == HAZARD


def test_symlinked_file_keeps_its_link_and_nothing_is_written_outside_the_tree(project, tmp_path_factory):
    (project / "real").mkdir()
    (project / "ok.py").rename(project / "real" / "target.py")
    os.symlink("real/target.py", project / "link.py")
    outside = tmp_path_factory.mktemp("outside") / "far.py"
    outside.write_text(HAZARD)
    os.symlink(outside, project / "far_link.py")
    assert run("fix", "--write", "link.py", cwd=project).exit_code == 0
    assert os.path.islink(project / "link.py")
    assert FIXED_LINE in (project / "real" / "target.py").read_text()
    assert run("fix", "--write", ".", cwd=project).exit_code == 0  # the walk does not follow far_link.py
    assert outside.read_text() == HAZARD and os.path.islink(project / "far_link.py")


def test_unreadable_subdirectory_is_reported_when_run_unprivileged():
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs setpriv and root to run the check as nobody")
    base = Path(tempfile.mkdtemp(prefix="rocmport-perm-"))
    try:
        os.chmod(base, 0o755)
        (base / "ok.py").write_text("x = 1\n")
        locked = base / "locked"
        locked.mkdir()
        (locked / "hidden.py").write_text(HAZARD)
        os.chmod(locked, 0o700)  # root's: nobody cannot list it
        result = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                 sys.executable, "-m", "rocmport", "lint", "--no-cache", "."],
                                cwd=base, capture_output=True, text=True, timeout=60, env=ENV)
        assert result.returncode == 1, result.stderr
        assert "locked:1:1: ROC001 cannot read: cannot list the directory: Permission denied" in result.stdout
        assert "All checks passed" not in result.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ------------------------------------------------------------------------------------------
# The user's code is never imported
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("module", ["rocmport", "flake8"])
def test_a_rules_package_in_the_working_directory_is_not_imported(project, module):
    shadow = project / "rules"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("import pathlib\npathlib.Path(__file__).parent.parent.joinpath"
                                        "('MARKER').write_text('imported')\nRULES = []\n")
    args = ["lint", "--no-cache", "ok.py"] if module == "rocmport" else ["--select", "ROC", "ok.py"]
    result = subprocess.run([sys.executable, "-m", module, *args], cwd=project, capture_output=True, text=True,
                            timeout=120, env=ENV)
    assert not (project / "MARKER").exists()
    assert "ROC101" in result.stdout, result.stdout + result.stderr


# ------------------------------------------------------------------------------------------
# The cache never changes an answer
# ------------------------------------------------------------------------------------------

def test_cache_key_covers_rule_code_and_configuration_root(monkeypatch, tmp_path):
    a = Settings(root=str(tmp_path / "a"), per_file_ignores=(("x.py", ("ROC101",)),))
    b = Settings(root=str(tmp_path / "b"), per_file_ignores=(("x.py", ("ROC101",)),))
    assert settings_fingerprint(a) != settings_fingerprint(b)
    before = settings_fingerprint(a)
    monkeypatch.setattr(cache_module, "code_fingerprint", lambda: "other rule code")
    assert settings_fingerprint(a) != before


def test_sequences_of_commands_answer_the_same_with_and_without_cache(tmp_path):
    """lint, fix, a formatter-like rewrite, a config change, fix --write, lint: the same
    outputs and exit codes with the cache as with --no-cache, in two copies of a project."""
    def setup(root):
        root.mkdir()
        (root / "pyproject.toml").write_text("[tool.rocmport]\n" + SLIM)
        pkg = root / "pkg"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("")
        (pkg / "a.py").write_text(HAZARD)
        (root / "b.py").write_text(HAZARD + "import torch._inductor.config as cfg\ncfg.triton.cudagraphs = True\n")

    steps = [
        ("lint", "."), ("fix", "."),
        ("rewrite",), ("lint", "."), ("fix", "."),
        ("config", "[tool.rocmport]\nignore = [\"ROC201\"]\n" + SLIM), ("lint", "."), ("fix", "."),
        ("fix", "--write", "."), ("lint", "."),
        ("delete-generated",), ("fix", "."), ("fix", "--write", "."), ("lint", "."),
        ("config", "[tool.rocmport]\n" + SLIM), ("lint", "."), ("fix", "."),
    ]
    roots = {"cache": tmp_path / "with", "nocache": tmp_path / "without"}
    for root in roots.values():
        setup(root)
    for step in steps:
        answers = {}
        for mode, root in roots.items():
            if step[0] == "rewrite":  # a formatter: same code, other bytes
                for path in root.rglob("*.py"):
                    path.write_text(path.read_text().replace('mode="reduce-overhead"', "mode='reduce-overhead'"))
                continue
            if step[0] == "config":
                (root / "pyproject.toml").write_text(step[1])
                continue
            if step[0] == "delete-generated":
                for path in root.rglob("_rocmport.py"):
                    path.unlink()
                continue
            extra = () if mode == "cache" else ("--no-cache",)
            result = run(step[0], *extra, *step[1:], cwd=root)
            answers[mode] = (result.exit_code, result.stdout.replace(str(root), "ROOT"),
                             result.stderr.replace(str(root), "ROOT"))
        if answers:
            assert answers["cache"] == answers["nocache"], step
