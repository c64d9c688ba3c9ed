"""Checks many files: the cache first, then a process pool for the rest. It never prints;
``progress`` (a callable taking each file's report as it is done) is how the CLI shows how
far it got (``rocmport.progress``).

A worker that dies (a native parser's crash, the out-of-memory killer) never takes the run
down: the file it held is checked again alone in a fresh worker once the rest are done, and
a file that kills that one too gets an ROC001 finding. Workers die with the run: each asks
the kernel for SIGKILL when its parent dies (Linux), ignores Ctrl-C (the parent handles
it), and the parent kills them when it is interrupted."""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence

from .cache import Cache
from .config import Settings
from .process import own as own_process
from .reports import FileReport, unreadable  # the engine (and LibCST) only loads when a file needs analysis
from .signals import Interrupted, interrupt_on_signals, restore_signals  # noqa: F401 (re-exported)
from .source import read_limited, read_regular

if TYPE_CHECKING:  # pragma: no cover
    from rocmport.analysis.index import ProjectIndex

_SETTINGS: Optional[Settings] = None
_INDEX: Optional["ProjectIndex"] = None  # the project index, in each worker
_PR_SET_PDEATHSIG = 1


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:  # the parent died before prctl: nobody would reap us
        os._exit(1)


def _init(settings: Settings, parent: Optional[int] = None, index: Optional["ProjectIndex"] = None) -> None:
    global _SETTINGS, _INDEX
    _SETTINGS = settings
    _INDEX = index
    if parent is not None:  # a worker process: rocmport's own, for its whole life
        own_process().__enter__()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _die_with_parent(parent)


def _work(item):
    from .inputs import check_bytes, check_path

    path, data, fix = item
    record = _INDEX is not None and _INDEX.keeps_dependencies
    if record:
        _INDEX.start_recording(path)
    report = (check_path(path, _SETTINGS, fix=fix, index=_INDEX) if data is None
              else check_bytes(data, path, _SETTINGS, fix=fix, index=_INDEX))
    if record:
        report.dependencies = _INDEX.stop_recording()  # the summaries its findings depend on
    return report


def _size(path: str, data: Optional[bytes]) -> int:
    if data is not None:
        return len(data)
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _read(path: str) -> Optional[bytes]:
    try:
        return read_regular(path)
    except OSError:
        return None  # check_path reports it as ROC001


def check_stream(stream, name: str, settings: Settings, *, fix: bool = False) -> FileReport:
    """Check what ``stream`` (stdin) holds, read up to :data:`~rocmport.source.MAX_INPUT_BYTES`."""
    with own_process():
        return _check_stream(stream, name, settings, fix=fix)


def _check_stream(stream, name: str, settings: Settings, *, fix: bool = False) -> FileReport:
    from .inputs import check_bytes

    try:
        data = read_limited(stream)
    except OSError as exc:
        report = FileReport(path=name)
        report.findings = unreadable(name, f"cannot read: {exc.strerror or exc}", 1, 1, settings.enabled_codes(name))
        return report
    report = check_bytes(data, name, settings, fix=fix)
    if fix and report.extra_files:  # stdin gives back one text: no module can be written beside it
        import dataclasses

        inline = settings.with_overrides(prelude=dataclasses.replace(settings.prelude, style="inline"))
        report = check_bytes(data, name, inline, fix=fix)
    return report


def _context():
    import multiprocessing  # only when a pool is needed: a run served from the cache never pays for it

    return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


_MASKABLE = hasattr(signal, "pthread_sigmask")  # not on Windows


def _serve(conn, settings: Settings, parent: int, index: Optional["ProjectIndex"]) -> None:
    """A worker: checks what its pipe brings, one item at a time, until the pipe closes."""
    _init(settings, parent, index)
    if _MASKABLE:  # blocked by the parent around the start
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):  # the parent is done, or gone
            return
        try:
            report = _work(item)
            if report.original is item[1]:  # the parent's own bytes: it puts them back (_Workers.run)
                report.original = None
            reply = (True, report)
        except Exception as exc:  # raised again in the parent: an internal error, as without workers
            reply = (False, exc)
        try:
            conn.send(reply)
        except OSError:  # the parent is gone, or stopping us
            return
        except Exception as exc:  # pickling failed, before a byte was sent
            conn.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))


class _Workers:
    """Worker processes, each with a pipe of its own, waited on by the calling thread alone.

    Not ``concurrent.futures``: its pool reads every reply through one queue in a helper
    thread, so a worker killed in the middle of a reply (by the out-of-memory killer, or by
    this run's own stop) leaves that thread waiting for bytes that never come, and the
    interpreter waits for that thread at exit: a hang. Here a worker's death is the end of
    its own pipe, the item it held is known, and a stop kills the workers and returns."""

    def __init__(self, settings: Settings, index: Optional["ProjectIndex"]):
        self.context = _context()
        self.args = (settings, os.getpid(), index)
        self.held = {}  # connection -> (process, the job it checks)
        self.idle = []  # (connection, process)

    def _start(self):
        parent_end, child_end = self.context.Pipe()
        process = self.context.Process(target=_serve, args=(child_end,) + self.args, daemon=True)
        # a Ctrl-C during the start is the parent's: the worker starts with it blocked
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if _MASKABLE else None
        try:
            process.start()
        finally:
            if previous is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        child_end.close()  # the worker's death is then the end of this pipe
        return parent_end, process

    def run(self, jobs, width: int, reports, progress, done=None) -> list:
        """Check ``jobs`` (``(slot, item)``) in at most ``width`` workers, each report into
        ``reports[slot]`` (then ``done(slot)``, while the workers go on); returns the jobs
        whose worker died."""
        queue = list(jobs)[::-1]
        died = []
        finished = []  # slots whose ``done`` waits until the workers have their next files
        while queue or self.held:
            while queue and len(self.held) < width:
                job = queue.pop()
                conn, process = self.idle.pop() if self.idle else self._start()
                try:
                    conn.send(job[1])
                except OSError:  # died idle
                    self._bury(conn, process)
                    died.append(job)
                    continue
                self.held[conn] = (process, job)
            while finished:
                done(finished.pop())
            if not self.held:
                continue
            conn, process, job, report = self._reply()
            if report is None:
                died.append(job)
                continue
            if report.original is None:
                report.original = job[1][1]  # the bytes it sent, not sent back
            reports[job[0]] = report
            self.idle.append((conn, process))
            if done is not None:
                finished.append(job[0])
            if progress:
                progress(report)
        while finished:
            done(finished.pop())
        return died

    def _reply(self):
        """The next answer: ``(conn, process, job, report)``, ``report`` None for a worker
        that died with the job (it is gone then)."""
        from multiprocessing.connection import wait

        sentinels = {process.sentinel: conn for conn, (process, _) in self.held.items()}
        ready = wait(list(self.held) + list(sentinels))[0]
        conn = sentinels.get(ready, ready)
        process, job = self.held.pop(conn)
        try:
            ok, value = conn.recv()
        except (EOFError, OSError):  # died, maybe in the middle of its reply
            self._bury(conn, process)
            return conn, process, job, None
        if not ok:
            self.idle.append((conn, process))  # alive: the stop ends it
            raise value
        return conn, process, job, value

    def _bury(self, conn, process) -> None:
        conn.close()
        process.kill()
        process.join()

    def stop(self) -> None:
        """End every worker now, rather than wait for the files they hold."""
        workers = [(conn, process) for conn, (process, _) in self.held.items()] + self.idle
        self.held, self.idle = {}, []
        for conn, process in workers:
            conn.close()
            process.kill()
        for _, process in workers:
            process.join(5)


def _crashed(path: str, settings: Settings) -> FileReport:

    report = FileReport(path=path)
    report.findings = unreadable(path, "cannot analyse: the worker checking this file crashed (a parser limit);"
                                    " the file is left as it was", 1, 1, settings.enabled_codes(path))
    return report


def _in_pool(todo, reports, settings: Settings, jobs: int, progress,
             project: Optional["ProjectIndex"] = None, done=None) -> None:
    """Check ``todo`` in ``jobs`` workers (``done(slot)`` after each report the first round
    brings). A file whose worker died is checked again alone once the rest are done (the
    death may have been another file's memory); if it kills that worker too, it gets ROC001."""
    workers = _Workers(settings, project)
    try:
        for job in workers.run(todo, min(jobs, len(todo)), reports, progress, done):
            if workers.run([job], 1, reports, progress):
                reports[job[0]] = _crashed(job[1][0], settings)
                if progress:
                    progress(reports[job[0]])
    finally:
        workers.stop()


def check_files(files: Sequence[str], settings: Settings, *, fix: bool = False, jobs: Optional[int] = None,
                cache: Optional[Cache] = None,
                progress: Optional[Callable[[FileReport], None]] = None) -> List[FileReport]:
    """Reports for ``files``, in order. ``lint`` serves unchanged files from the cache;
    ``fix`` never reads or writes it (what it writes depends on more than a file's bytes:
    the generated module, other files of the package). The rest go to ``jobs`` worker
    processes (1: this process). The run is rocmport's own (``rocmport.process``)."""
    with own_process():
        return _check_files(files, settings, fix=fix, jobs=jobs, cache=cache, progress=progress)


def _check_files(files: Sequence[str], settings: Settings, *, fix: bool = False, jobs: Optional[int] = None,
                 cache: Optional[Cache] = None,
                 progress: Optional[Callable[[FileReport], None]] = None) -> List[FileReport]:
    reports: List[Optional[FileReport]] = [None] * len(files)
    todo = []
    keys = {}
    if fix:
        cache = None
    from rocmport.analysis.index import ProjectIndex  # reads no file and imports no LibCST

    project = ProjectIndex(files)  # module names only: summaries are computed on demand
    # what a file's findings read of other modules is recorded for its cache entry: without a
    # cache (``--no-cache``, ``fix``) nothing is (the digests of those answers cost time)
    project.keeps_dependencies = cache is not None
    datas = [_read(path) for path in files] if cache is not None else [None] * len(files)
    for path, data in zip(files, datas):
        if data is not None:
            project.seen(path, data)  # what the index may read again, it has (cache keys ask it)
    for index, path in enumerate(files):
        data = datas[index]
        if data is not None:
            cached = cache.lookup(path, data, project)
            if cached is not None:
                reports[index] = FileReport(path=path, findings=cached, original=data)
                if progress:
                    progress(reports[index])
                continue
            keys[index] = data
        todo.append((index, (path, data, fix)))
    if todo:
        from . import inputs  # noqa: F401 (before the fork: workers inherit it instead of importing it each)

    def store(index: int) -> None:
        """Cache the report of ``files[index]`` (lint only: fix has no cache), once."""
        data = keys.pop(index, None)
        report = reports[index]
        if data is not None and report is not None and report.internal_error is None:
            cache.put_with_dependencies(files[index], data, project, getattr(report, "dependencies", None) or {},
                                        report.findings)

    jobs = jobs or default_jobs()
    # each report is cached as it comes, while the workers check the rest
    _run_jobs(todo, reports, settings, jobs, progress, project, store if cache is not None else None)
    for index in list(keys):
        store(index)
    if cache is not None:
        cache.flush()
    if fix and len(todo) > 1:
        _share_package_gates(files, reports, settings, jobs, project)
    return reports  # type: ignore[return-value]


def _run_jobs(todo, reports, settings: Settings, jobs: int, progress, project, done=None) -> None:
    if jobs > 1 and len(todo) > 1:
        # largest first: a large file started last would leave the other workers idle
        # while it is checked (the reports keep their slots, so the output's order is kept)
        todo.sort(key=lambda job: -_size(job[1][0], job[1][1]))
        _in_pool(todo, reports, settings, jobs, progress, project, done)
    else:
        _init(settings, index=project)
        for index, item in todo:
            reports[index] = _work(item)
            if progress:
                progress(reports[index])


def _share_package_gates(files: Sequence[str], reports: list, settings: Settings, jobs: int, project) -> None:
    """Where several modules of a package got a gate line each, one line in the package's
    utilities module instead (``rocmport.package_gate``): those modules are fixed again with
    the index reading that module as it will be written, and keep what imports the gate."""
    from rocmport.analysis.index import ProjectIndex

    from . import package_gate

    plans = package_gate.plan(files, reports, project)
    if not plans:
        return
    index = ProjectIndex(files, data={files[plan.slot]: plan.text for plan in plans})
    index.keeps_dependencies = False
    again: List[Optional[FileReport]] = [None] * len(files)
    todo = [(slot, (files[slot], None, True)) for plan in plans for slot in plan.importers]
    # a utilities module that gets the line: its findings where they are in what is written
    todo += [(plan.slot, (files[plan.slot], plan.text, False)) for plan in plans if not plan.own]
    _run_jobs(todo, again, settings, jobs, None, index)
    for plan in plans:
        taken = package_gate.taken(plan, {slot: again[slot] for slot in plan.importers if again[slot] is not None})
        if not taken:
            continue
        utility = reports[plan.slot]
        reports[plan.slot] = package_gate.with_gate(plan, utility, again[plan.slot])
        for slot, report in taken.items():
            report.needs_written = (utility.path,)
            reports[slot] = report
