"""The speed features change nothing but speed: the prefilter and name gates are
conservative, the cache returns what a fresh run finds, worker processes agree with one."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from rocmport.analysis.prescan import PREFILTER
from rocmport.cache import FORMAT, Cache
from rocmport.config import Settings
from rocmport.inputs import check_bytes
from rocmport.output import finding_dict

ROOT = Path(__file__).resolve().parent.parent
HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'


def corpus():
    """Every fixture and example of the project, and a sample of the installed torch
    package (the files that mention the words the rules look for, and some that do not)."""
    files = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*") if p.suffix in (".py", ".pyi"))
    files += sorted((ROOT / "examples").glob("*.py"))
    try:
        import torch
        torch_files = sorted(Path(torch.__file__).parent.rglob("*.py"))
        rng = random.Random(7)
        words = ("compile", "graph", "triton", "TORCHINDUCTOR", "cudagraph", "autotune")
        hits = [p for p in torch_files if any(w in p.read_text(errors="replace") for w in words)]
        files += rng.sample(hits, min(30, len(hits))) + rng.sample(torch_files, 10)
    except ImportError:  # pragma: no cover - torch is a test dependency
        pass
    return files


def _findings(path: Path, fix: bool = False):
    report = check_bytes(path.read_bytes(), str(path), Settings(), fix=fix)
    assert report.internal_error is None, report.internal_error
    return [json.dumps(finding_dict(f), sort_keys=True) for f in report.findings], report.fixed


@pytest.mark.slow
def test_prefilter_and_name_gates_are_conservative():
    files = corpus()
    assert len(files) > 100
    with_filter = [_findings(p) for p in files]
    PREFILTER["enabled"] = False
    try:
        without = [_findings(p) for p in files]
    finally:
        PREFILTER["enabled"] = True
    for path, a, b in zip(files, with_filter, without):
        assert a == b, f"prefilter changed the findings of {path}"
    assert sum(len(f) for f, _ in with_filter) > 50  # the corpus does hold findings


def run(args, cwd):
    return subprocess.run([sys.executable, "-m", "rocmport", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport]\n")
    for i in range(12):
        (tmp_path / f"m{i}.py").write_text(HAZARD if i % 3 else "import torch\nx = 1\n")
    return tmp_path


def test_cache_returns_what_a_fresh_run_finds(tree):
    cold = run(["lint", "--output-format", "json", "."], tree)
    cache = tree / ".rocmport_cache"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache / ".gitignore").exists()
    warm = run(["lint", "--output-format", "json", "."], tree)
    fresh = run(["lint", "--no-cache", "--output-format", "json", "."], tree)
    assert cold.stdout == warm.stdout == fresh.stdout and cold.returncode == warm.returncode == 1
    assert len(json.loads(cold.stdout)) == 8


def test_cache_is_invalidated_by_content_and_settings(tree):
    run(["lint", "."], tree)
    (tree / "m1.py").write_text("import torch\n")
    out = run(["lint", "--output-format", "json", "."], tree)
    assert "m1.py" not in out.stdout and len(json.loads(out.stdout)) == 7
    out = run(["lint", "--output-format", "json", "--ignore", "ROC101", "."], tree)
    assert json.loads(out.stdout) == []


def test_no_cache_and_cache_dir(tree, tmp_path_factory):
    run(["lint", "--no-cache", "."], tree)
    assert not (tree / ".rocmport_cache").exists()
    elsewhere = tmp_path_factory.mktemp("cache")
    run(["lint", "--cache-dir", str(elsewhere), "."], tree)
    assert (elsewhere / "CACHEDIR.TAG").exists() and not (tree / ".rocmport_cache").exists()


def test_cache_entries_survive_corruption(tree):
    run(["lint", "."], tree)
    for entry in (tree / ".rocmport_cache").rglob("*.json"):
        entry.write_text("{not json")
    out = run(["lint", "--output-format", "json", "."], tree)
    assert len(json.loads(out.stdout)) == 8


def test_two_runs_sharing_a_cache(tree):
    procs = [subprocess.Popen([sys.executable, "-m", "rocmport", "lint", "--output-format", "json", "."],
                              cwd=tree, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate()[0] for p in procs]
    assert outs[0] == outs[1] and len(json.loads(outs[0])) == 8
    assert not list((tree / ".rocmport_cache").rglob(".tmp-*"))


@pytest.mark.slow
def test_jobs_agree(tree):
    one = run(["lint", "--no-cache", "--jobs", "1", "--output-format", "json", "."], tree)
    two = run(["lint", "--no-cache", "--jobs", "2", "--output-format", "json", "."], tree)
    assert one.stdout == two.stdout
    fix_one = run(["fix", "--no-cache", "--jobs", "1", "."], tree)
    fix_two = run(["fix", "--no-cache", "--jobs", "2", "."], tree)
    assert fix_one.stdout == fix_two.stdout and fix_one.stdout.count("+++ ") == 8


def test_the_largest_files_go_to_the_workers_first(tmp_path, monkeypatch):
    from rocmport import runner

    paths = []
    for i, size in enumerate([10, 5000, 300, 40]):
        path = tmp_path / f"m{i}.py"
        path.write_text(HAZARD + "#" * size + "\n")
        paths.append(str(path))
    order = []
    real = runner._in_pool
    monkeypatch.setattr(runner, "_in_pool", lambda todo, *a, **k: order.extend(j[1][0] for j in todo) or real(todo, *a, **k))
    reports = runner.check_files(paths, Settings(), jobs=2)
    assert order == [paths[1], paths[2], paths[3], paths[0]]
    assert [r.path for r in reports] == paths and all(r.findings for r in reports)  # reported in the order given


@pytest.mark.slow
def test_fix_after_a_cached_lint_still_fixes(tree):
    run(["lint", "."], tree)
    assert run(["fix", "--write", "."], tree).returncode == 0
    assert "is_rocm else" in (tree / "m1.py").read_text()
    assert run(["lint", "."], tree).returncode == 0


def test_no_progress_bar_in_pipes(tree):
    out = run(["lint", "."], tree)
    assert "rocmport  [" not in out.stderr and out.stderr == ""


@pytest.mark.slow
def test_benchmark_script_runs_on_a_small_corpus(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--path",
                          str(ROOT / "tests" / "fixtures" / "compile_modes"), "--json", str(tmp_path / "b.json")],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "b.json").read_text())
    runs = [r["run"] for r in data["results"]]
    assert runs[0].startswith("baseline") and "rocmport lint, warm" in runs and "rocmport fix (diff), cold" in runs
    assert "vs baseline" in out.stdout and "files/s" in out.stdout


def test_progress_bar_on_a_terminal(tmp_path):
    """Many files and stderr a terminal: a bar on stderr; stdout keeps only the findings."""
    pty = pytest.importorskip("pty")
    for i in range(60):
        (tmp_path / f"m{i}.py").write_text(HAZARD)
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport]\n")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "rocmport", "lint", "--no-cache", "."], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    stdout, _ = proc.communicate(timeout=300)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    stderr = b"".join(chunks).decode(errors="replace")
    assert "rocmport" in stderr and "100%" in stderr and "60/60 files, 60 findings" in stderr
    assert not re.search(r"\d:\d\d|ETA|eta", stderr), stderr  # no time estimate (it was 53 minutes for 75 s)
    assert stdout.count("ROC101") == 60 and "%" not in stdout.replace("100%", "")


class FakeClock:
    def __init__(self, step: float):
        self.now, self.step = 1000.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_progress_in_a_log_is_a_plain_line_every_few_seconds():
    import io

    from rocmport.progress import Progress
    from rocmport.reports import FileReport

    stream = io.StringIO()
    progress = Progress(40, stream, tty=False, clock=FakeClock(1.0), interval=5.0)  # a file a second
    for i in range(40):
        progress.update(FileReport(path=f"m{i}.py", findings=[object()] * (i % 2)))
    progress.finish()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "rocmport: 5/40 files checked, 2 findings so far (5 s)"
    assert lines[1] == "rocmport: 10/40 files checked, 5 findings so far (10 s)"
    assert len(lines) == 7 and stream.getvalue().endswith("\n")  # 5, 10, ... 35 s; the summary says the end
    assert "\r" not in stream.getvalue() and "\x1b" not in stream.getvalue()
    quick = io.StringIO()  # a run that ends within the interval prints nothing
    progress = Progress(40, quick, tty=False, clock=FakeClock(0.1), interval=5.0)
    for i in range(40):
        progress.update(FileReport(path="m.py"))
    progress.finish()
    assert quick.getvalue() == ""


def test_progress_on_a_terminal_gives_counts_and_no_estimate():
    import io

    from rocmport.progress import Progress
    from rocmport.reports import FileReport

    clock = FakeClock(0.0)
    stream = io.StringIO()
    progress = Progress(100, stream, tty=True, clock=clock)
    clock.step = 30.0  # the first, largest files are slow: an estimate from them would be absurd
    progress.update(FileReport(path="big.py", findings=[object()]))
    assert stream.getvalue() == "\rrocmport [..............................]   1% 1/100 files, 1 finding\x1b[K"
    clock.step = 0.01
    for _ in range(99):
        progress.update(FileReport(path="m.py"))
    progress.finish()
    assert stream.getvalue().endswith("] 100% 100/100 files, 1 finding\x1b[K\n")
    assert stream.getvalue().count("\r") < 20  # redrawn at most ten times a second
    assert Progress(49, io.StringIO(), tty=True).enabled is False  # a short run: no bar


def test_lint_in_ci_prints_progress_lines_on_stderr(tmp_path, monkeypatch):
    """stderr not a terminal (a CI log): plain lines every few seconds, stdout the findings."""
    from click.testing import CliRunner

    from rocmport import progress
    from rocmport.cli import main

    for i in range(12):
        (tmp_path / f"m{i:02d}.py").write_text(HAZARD)
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport]\n")
    monkeypatch.setattr(progress, "monotonic", FakeClock(2.0))  # two seconds a file
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["lint", "--no-cache", "-j", "1", "."], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[:2] == ["rocmport: 3/12 files checked, 3 findings so far (6 s)",
                                              "rocmport: 6/12 files checked, 6 findings so far (12 s)"]
    assert "\r" not in result.stderr and result.stdout.count("ROC101") == 12
    quiet = CliRunner().invoke(main, ["lint", "-q", "--no-cache", "-j", "1", "."], catch_exceptions=False)
    assert quiet.stderr == ""


_REGIONS_AND_KERNELS = b"""import torch
import triton
import triton.language as tl


class Inner(torch.nn.Module):
    def forward(self, x):
        return x.nonzero()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        if x.sum().item() > 0:
            print(x)
        return self.inner(x)


model = torch.compile(Net(), mode="max-autotune")


@triton.jit
def kernel(x_ptr, BLOCK: tl.constexpr):
    WARP_SIZE = 32
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(x_ptr, (tl.exp(x) - tl.exp(-x)) / (tl.exp(x) + tl.exp(-x)))


def launch(x):
    kernel[(1,)](x, BLOCK=4096, num_warps=16)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        torch.cuda.synchronize()
        y = x @ x
"""


@pytest.mark.parametrize("code, codes, kind", [
    (b"import torch\nimport torch._inductor.config as ic\n"
     b"ic.triton.cudagraphs = True\n"
     b"if torch.cuda.get_device_capability() >= (9, 0):\n    dtype = torch.float8_e4m3fn\n"
     b"def build():\n    return torch.compile(mode='max-autotune')\n",
     {"ROC102", "ROC201", "ROC702", "ROC705"}, cst.CSTNode),
    # the regions of compiled code and captures, Triton's analysis (cycles of their own, which
    # the engine breaks once the rules are done); the visitor classes that rules make in a
    # call are cycles too, which may hold the few nodes they met, not the module
    (_REGIONS_AND_KERNELS, {"ROC102", "ROC301", "ROC307", "ROC401", "ROC402", "ROC404", "ROC505", "ROC512"},
     cst.Module),
])
def test_a_lint_leaves_no_cycle_that_holds_its_trees(code, codes, kind):
    """The collector is paused while a file is checked (``parsing.collector_paused``); what a
    check leaves in cycles is walked by the next collection, its trees included. The engine's
    own structures (the metadata, the walks, the fix's search for enclosing functions) hold no
    cycle, and the analyses the rules share are released when they are done
    (``RuleContext.release``), so the trees go with their last reference."""
    import gc

    check_bytes(code, "warm.py", Settings())  # imports and per-process caches first
    gc.collect()
    gc.disable()
    try:
        assert check_bytes(code, "m.py", Settings(), fix=True).fixed  # a fix's analyses too
        report = check_bytes(code, "m.py", Settings())
        assert codes <= {f.code for f in report.findings}
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        held = [o for o in gc.garbage if isinstance(o, kind)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert report.findings and not held


def _hazard_files(directory: Path, count: int) -> list:
    """``count`` files with a finding each, of growing sizes: their paths."""
    paths = []
    for i in range(count):
        path = directory / f"m{i}.py"
        path.write_text(HAZARD + "x = 1\n" * i)
        paths.append(str(path))
    return paths


def test_reports_are_cached_while_the_workers_check_the_rest(tmp_path, monkeypatch):
    """A cold lint writes each file's entry as its report comes, between two replies of the
    workers, not in a serial tail after the last one; every entry is written once."""
    from rocmport import runner

    paths = _hazard_files(tmp_path, 6)
    pooled = []
    real_in_pool = runner._in_pool

    def in_pool(*args, **kwargs):
        pooled.append("start")
        try:
            return real_in_pool(*args, **kwargs)
        finally:
            pooled.append("end")

    puts = []
    real_put = Cache.put_with_dependencies

    def put(self, path, *args):
        puts.append((path, list(pooled)))
        return real_put(self, path, *args)

    monkeypatch.setattr(runner, "_in_pool", in_pool)
    monkeypatch.setattr(Cache, "put_with_dependencies", put)
    cache = Cache(tmp_path / "cache", Settings())
    runner.check_files(paths, Settings(), jobs=2, cache=cache)
    assert sorted(p for p, _ in puts) == sorted(paths)  # each once
    assert all(state == ["start"] for _, state in puts)  # inside the pool
    again = runner.check_files(paths, Settings(), jobs=2, cache=cache)
    assert len(puts) == len(paths) and all(r.findings for r in again)  # served from the cache


def test_a_run_writes_its_entries_as_one_pack(tmp_path, monkeypatch):
    """A cold lint of the torch package wrote 2,200 entries, a file created, written and
    renamed each (1.7 s of system time, on the cores the workers share); a run now writes
    what it learnt as one pack, and reads the packs once (not a file per source file)."""
    from rocmport import runner

    paths = _hazard_files(tmp_path, 40)
    created = []
    real_open = os.open

    def counting_open(path, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            created.append(path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    first = runner.check_files(paths, Settings(), jobs=2, cache=Cache(tmp_path / "cache", Settings()))
    assert len([name for name in created if name.startswith(".tmp-")]) == 1  # the pack, renamed
    (pack,) = (tmp_path / "cache").rglob("*.pack")
    assert len(pack.read_text().splitlines()) == 40
    created.clear()
    checked = []
    monkeypatch.setattr(runner, "_work", lambda item: checked.append(item[0]))
    again = runner.check_files(paths, Settings(), jobs=1, cache=Cache(tmp_path / "cache", Settings()))
    assert checked == [] and created == []  # all answered from the pack: nothing written
    assert [r.findings for r in again] == [r.findings for r in first]


def test_the_engines_parse_skips_only_the_parsers_own_validation(monkeypatch):
    """``parsing.libcst_parse`` builds LibCST's tree without validating the parser's nodes,
    the same tree as ``libcst.parse_module``, and nodes built afterwards are validated again."""
    from pathlib import Path

    from rocmport import parsing, process

    assert parsing.SKIP_VALIDATION  # the LibCST this runs with validates in __post_init__ only
    validated = []
    real = cst.Name._validate
    monkeypatch.setattr(cst.Name, "_validate", lambda self: validated.append(self.value) or real(self))
    source = Path(parsing.__file__).read_text()
    with process.own():  # only in rocmport's own process (tests/test_embedding.py: elsewhere)
        ours = parsing.libcst_parse(source)
    assert validated == []
    theirs = cst.parse_module(source)
    assert validated and ours.deep_equals(theirs) and ours.code == source
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_a_workers_report_holds_the_files_bytes_without_sending_them_back(tmp_path, monkeypatch):
    """The parent sent a worker the file's bytes: the report comes back without them and the
    parent puts its own back (the torch package is 46 MB each way)."""
    from rocmport import runner

    paths = _hazard_files(tmp_path, 3)
    sent = []
    real_reply = runner._Workers._reply

    def reply(self):
        found = real_reply(self)
        sent.append(found[3].original if found[3] is not None else "died")
        return found

    monkeypatch.setattr(runner._Workers, "_reply", reply)
    reports = runner.check_files(paths, Settings(), jobs=2, cache=Cache(tmp_path / "cache", Settings()))
    assert sent == [None, None, None]  # what came through the pipes
    assert [r.original for r in reports] == [open(p, "rb").read() for p in paths]
    assert all(r.findings for r in reports)


# -- the cache: what a clone cannot forge, no write through a link, nothing left on a full disk --

FORGE = """
import sys
from rocmport.cache import FORMAT, Cache
from rocmport.config import load_settings
from pathlib import Path
root = Path(sys.argv[1])
cache = Cache(root / ".rocmport_cache", load_settings(root))
data = (root / "bad.py").read_bytes()
cache.put_with_dependencies(str(root / "bad.py"), data, None, {}, [])  # "no findings", keyed on this machine
cache.flush()
"""


def test_a_cache_from_another_machine_or_a_commit_never_hides_findings(tmp_path):
    """A `.rocmport_cache` committed to a repository (or copied from another machine) holds
    entries keyed without this user's secret: a fresh clone's lint finds what is there."""
    project = tmp_path / "clone"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.rocmport]\n")
    (project / "bad.py").write_text(HAZARD)
    other = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "committer-home"))
    subprocess.run([sys.executable, "-c", FORGE, str(project)], env=other, check=True)
    assert list((project / ".rocmport_cache").rglob("*.pack"))  # the forged entry is there
    mine = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "my-home"))
    first = subprocess.run([sys.executable, "-m", "rocmport", "lint", "-v", "."], cwd=project, env=mine,
                           capture_output=True, text=True)
    assert first.returncode == 1 and "bad.py:2:27: ROC101" in first.stdout, first.stdout + first.stderr
    again = subprocess.run([sys.executable, "-m", "rocmport", "lint", "-v", "."], cwd=project, env=mine,
                           capture_output=True, text=True)
    assert again.returncode == 1 and "all answered from the cache" in again.stderr  # my own entries do hit
    secret = tmp_path / "my-home" / "rocmport" / "secret"
    assert secret.stat().st_size == 32 and secret.stat().st_mode & 0o077 == 0


def test_the_cache_never_writes_through_a_link(tmp_path, monkeypatch):
    """Links planted in the cache directory (committed, or left by someone else) make lint
    create nothing where they point."""
    from click.testing import CliRunner

    from rocmport.cli import main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "pyproject.toml").write_text("[tool.rocmport]\n")
    (project / "bad.py").write_text(HAZARD)
    cache = project / ".rocmport_cache"
    cache.mkdir()
    for name in ("CACHEDIR.TAG", ".gitignore", f"v{FORMAT}"):
        os.symlink(outside / f"made-by-{name}", cache / name)  # dangling
    monkeypatch.chdir(project)
    for _ in range(2):
        result = CliRunner().invoke(main, ["lint", "-j", "1", "."], catch_exceptions=False)
        assert result.exit_code == 1 and "ROC101" in result.stdout
    assert list(outside.iterdir()) == []
    assert all(os.path.islink(cache / name) for name in ("CACHEDIR.TAG", ".gitignore", f"v{FORMAT}"))
    # the cache directory itself a link (a committed one): nothing written where it points
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", project / "linked_cache")
    result = CliRunner().invoke(main, ["lint", "-j", "1", "--cache-dir", "linked_cache", "."], catch_exceptions=False)
    assert result.exit_code == 1 and list((tmp_path / "elsewhere").iterdir()) == []


FULL_DISK = """
import errno, os, sys
from pathlib import Path
from rocmport.cache import FORMAT, Cache
from rocmport.config import Settings
from rocmport.findings import Finding, Position
folder = Path(sys.argv[1])
cache = Cache(folder / "cache", Settings())
cache.put_with_dependencies("small.py", b"x", None, {}, [])
cache.flush()  # fits: the folders and the tags are made
big = [Finding("ROC101", "n", "m" * 200_000, Position(1, 1), Position(1, 2), filename="big.py")]
cache.put_with_dependencies("big.py", b"y", None, {}, big)
cache.flush()  # does not fit
left = sorted(p.name for p in (folder / "cache").rglob("*") if p.is_file())
print(" ".join(left))
"""


def test_a_full_disk_leaves_no_temporary_file(tmp_path):
    """ENOSPC in the middle of an entry (a 64 KiB tmpfs, in a mount namespace of its own);
    where mounts are not allowed, a file-size limit fails the write the same way (EFBIG)."""
    import shutil

    folder = tmp_path / "disk"
    folder.mkdir()
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "home"))
    script = f"mount -t tmpfs -o size=64k tmpfs {folder} && exec {sys.executable} -c \"$0\" {folder}"
    proc = None
    if shutil.which("unshare") and os.geteuid() == 0:
        proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, FULL_DISK],
                              env=env, capture_output=True, text=True)
        if proc.returncode != 0 and "mount" in proc.stderr:
            proc = None  # no mount namespace here (an unprivileged container)
    if proc is None:
        limit = ("import resource, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                 "resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))\n")
        proc = subprocess.run([sys.executable, "-c", limit + FULL_DISK, str(folder)], env=env,
                              capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    names = proc.stdout.split()
    assert not [n for n in names if n.startswith(".tmp")], names
    assert "CACHEDIR.TAG" in names and len([n for n in names if n.endswith(".pack")]) == 1


def test_a_small_file_that_reads_other_modules_is_cached_with_what_it_read(tmp_path, monkeypatch):
    """A file under 1 KiB with no rule's trigger word may still consult the project (its
    imports: does it reach a module whose import runs CUDA-only code?). It gets an entry keyed
    by what it read, and the next run answers it from there: it was checked again on every
    run (343 files of the torch package: a warm lint took 2.3 s instead of 1.3 s)."""
    from rocmport import runner

    files = {"kern.py": "import cutlass\n\n\ndef gemm(a, b):\n    return cutlass.op(a, b)\n",
             "uses.py": "from kern import gemm\n", "plain.py": "import os\n\nHOME = os.environ.get('HOME')\n"}
    paths = []
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    first = runner.check_files(paths, Settings(), jobs=1, cache=Cache(tmp_path / "cache", Settings()))
    checked = []
    work = runner._work
    monkeypatch.setattr(runner, "_work", lambda item: checked.append(item[0]) or work(item))
    again = runner.check_files(paths, Settings(), jobs=1, cache=Cache(tmp_path / "cache", Settings()))
    assert [[f.code for f in r.findings] for r in again] == [[f.code for f in r.findings] for r in first]
    assert checked == []
    (tmp_path / "kern.py").write_text("import os\n\n\ndef gemm(a, b):\n    return a @ b\n")
    runner.check_files(paths, Settings(), jobs=1, cache=Cache(tmp_path / "cache", Settings()))
    assert set(checked) >= {paths[0], paths[1]}  # what uses.py read changed: checked again


def test_the_packs_are_merged_with_one_entry_per_file(tmp_path, monkeypatch):
    """Every file gets an entry, a line of its run's pack (an empty file, a syntax error, a
    shell script too); the next run checks none of them again, a changed file only; past
    MAX_PACKS packs a run merges them, keeping the latest entry of each file."""
    from rocmport import runner
    from rocmport.cache import MAX_PACKS

    paths = []
    for name, text in (("empty.py", ""), ("tiny.py", "x = 1\n"), ("bad.py", HAZARD),
                       ("long.py", "x = 1\n" * 300), ("run.sh", "echo hi\n"), ("broken.py", "def f(:\n")):
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    reports = runner.check_files(paths, Settings(), jobs=1, cache=Cache(tmp_path / "cache", Settings()))
    expected = [[], [], ["ROC101"], [], [], ["ROC001"]]
    assert [[f.code for f in r.findings] for r in reports] == expected
    (pack,) = (tmp_path / "cache").rglob("*.pack")
    assert len(pack.read_text().splitlines()) == 6
    checked = []
    work = runner._work
    monkeypatch.setattr(runner, "_work", lambda item: checked.append(item[0]) or work(item))
    again = runner.check_files(paths, Settings(), jobs=1, cache=Cache(tmp_path / "cache", Settings()))
    assert [[f.code for f in r.findings] for r in again] == expected and checked == []
    for i in range(MAX_PACKS + 4):
        (tmp_path / "tiny.py").write_text(f"x = {i + 2}\n")
        checked.clear()
        runner.check_files(paths, Settings(), jobs=1, cache=Cache(tmp_path / "cache", Settings()))
        assert checked == [paths[1]]  # a changed file is checked again, alone
    packs = list((tmp_path / "cache").rglob("*.pack"))
    assert len(packs) <= MAX_PACKS
    assert sum(len(p.read_text().splitlines()) for p in packs) < 6 + MAX_PACKS  # merged: one per file
    checked.clear()
    again = runner.check_files(paths, Settings(), jobs=1, cache=Cache(tmp_path / "cache", Settings()))
    assert [[f.code for f in r.findings] for r in again] == expected and checked == []


def test_runs_that_share_the_cache_merge_it_at_the_same_moment(tmp_path):
    """Three lints of one project at once, each finding MAX_PACKS packs to merge: each run's
    findings are whole, and the cache they leave answers the next run entirely."""
    from rocmport.cache import MAX_PACKS

    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.rocmport]\n")
    for i in range(12):
        (project / f"m{i}.py").write_text(HAZARD + "x = 1\n" * i)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "home"))
    seed = ("import sys\nfrom pathlib import Path\nfrom rocmport.cache import Cache\nfrom rocmport.config import Settings\n"
            "for i in range(int(sys.argv[2])):\n"
            "    cache = Cache(Path(sys.argv[1]), Settings())\n"
            "    cache.put_with_dependencies(f'other{i}.py', b'x', None, {}, [])\n"
            "    cache.flush()\n")
    subprocess.run([sys.executable, "-c", seed, str(project / ".rocmport_cache"), str(MAX_PACKS)], env=env, check=True)
    assert len(list((project / ".rocmport_cache").rglob("*.pack"))) == MAX_PACKS
    runs = [subprocess.Popen([sys.executable, "-m", "rocmport", "lint", "-j", "1", "."], cwd=project, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for proc in runs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 1 and out.count("ROC101") == 12, out + err
    last = subprocess.run([sys.executable, "-m", "rocmport", "lint", "-v", "."], cwd=project, env=env,
                          capture_output=True, text=True)
    assert last.stdout.count("ROC101") == 12 and "all answered from the cache" in last.stderr, last.stderr
    assert len(list((project / ".rocmport_cache").rglob("*.pack"))) <= 3
