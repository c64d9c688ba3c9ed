"""Checks many files: the cache first, then a process pool for the rest. It never prints;
``progress`` (a callable taking a count) is how the CLI draws its bar.

A worker that dies (a native parser's crash, the out-of-memory killer) never takes the run
down: the files it may have held are checked again one at a time in a fresh worker, and a
file that kills that one too gets an ROC001 finding. Workers die with the run: each asks
the kernel for SIGKILL when its parent dies (Linux), ignores Ctrl-C (the parent handles
it), and the parent stops them when it is interrupted."""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence

from .cache import Cache
from .config import Settings
from .signals import Interrupted, interrupt_on_signals, restore_signals  # noqa: F401 (re-exported)
from .reports import FileReport  # the engine (and LibCST) only loads when a file needs analysis
from .source import read_limited, read_regular

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import ProcessPoolExecutor

    from rocmport.codemods._index import ProjectIndex

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
    if parent is not None:  # a worker process
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _die_with_parent(parent)


def _work(item):
    from .inputs import check_bytes, check_path

    path, data, fix = item
    if _INDEX is not None:
        _INDEX.start_recording()
    report = (check_path(path, _SETTINGS, fix=fix, index=_INDEX) if data is None
              else check_bytes(data, path, _SETTINGS, fix=fix, index=_INDEX))
    if _INDEX is not None:
        report.dependencies = _INDEX.stop_recording()  # the summaries its findings depend on
    return report


def _read(path: str) -> Optional[bytes]:
    try:
        return read_regular(path)
    except OSError:
        return None  # check_path reports it as ROC001


def check_stream(stream, name: str, settings: Settings, *, fix: bool = False) -> FileReport:
    """Check what ``stream`` (stdin) holds, read up to :data:`~rocmport.source.MAX_INPUT_BYTES`."""
    from .engine import _roc001
    from .inputs import check_bytes

    try:
        data = read_limited(stream)
    except OSError as exc:
        report = FileReport(path=name)
        report.findings = _roc001(name, f"cannot read: {exc.strerror or exc}", 1, 1, settings.enabled_codes(name))
        return report
    return check_bytes(data, name, settings, fix=fix)


def _context():
    import multiprocessing  # only when a pool is needed: a run served from the cache never pays for it

    return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)


def _pool(workers: int, settings: Settings, index: Optional["ProjectIndex"] = None) -> "ProcessPoolExecutor":
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_init,
                               initargs=(settings, os.getpid(), index))


def _stop(pool: "ProcessPoolExecutor") -> None:
    """Stop a pool now: kill its workers rather than wait for the files they hold."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        try:
            process.kill()
        except (OSError, AttributeError):  # pragma: no cover - already gone
            pass
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        try:
            process.join(5)
        except (OSError, AssertionError, AttributeError):  # pragma: no cover
            pass
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(5)
        if not manager.is_alive():
            # Python 3.11's exit hook wakes every pool thread it still knows through a pipe
            # that this one closed when it ended: a traceback at exit ("Bad file descriptor")
            from concurrent.futures import process as futures_process

            getattr(futures_process, "_threads_wakeups", {}).pop(manager, None)


def _crashed(path: str, settings: Settings) -> FileReport:
    from .engine import _roc001

    report = FileReport(path=path)
    report.findings = _roc001(path, "cannot analyse: the worker checking this file crashed (a parser limit);"
                                    " the file is left as it was", 1, 1, settings.enabled_codes(path))
    return report


def _in_pool(todo, reports, settings: Settings, jobs: int, progress,
             project: Optional["ProjectIndex"] = None) -> None:
    from concurrent.futures.process import BrokenProcessPool

    """Check ``todo`` in a pool; after a worker's death, the files not done go one by one."""
    pending = list(todo)
    pool = _pool(min(jobs, len(pending)), settings, project)
    try:
        futures = [(index, pool.submit(_work, item)) for index, item in pending]
        left = []
        for index, future in futures:
            try:
                reports[index] = future.result()
                if progress:
                    progress(1)
            except BrokenProcessPool:
                left.append(index)
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    items = dict(pending)
    for index in left:  # one file per worker: the one that dies is the culprit
        single = _pool(1, settings, project)
        try:
            reports[index] = single.submit(_work, items[index]).result()
        except BrokenProcessPool:
            reports[index] = _crashed(items[index][0], settings)
        except BaseException:
            _stop(single)
            raise
        single.shutdown(wait=True)
        if progress:
            progress(1)


def check_files(files: Sequence[str], settings: Settings, *, fix: bool = False, jobs: Optional[int] = None,
                cache: Optional[Cache] = None, progress: Optional[Callable[[int], None]] = None) -> List[FileReport]:
    """Reports for ``files``, in order. ``lint`` serves unchanged files from the cache;
    ``fix`` never reads or writes it (what it writes depends on more than a file's bytes:
    the generated module, other files of the package). The rest go to ``jobs`` worker
    processes (1: this process)."""
    reports: List[Optional[FileReport]] = [None] * len(files)
    todo = []
    keys = {}
    if fix:
        cache = None
    from rocmport.codemods._index import ProjectIndex  # reads no file and imports no LibCST

    project = ProjectIndex(files)  # module names only: summaries are computed on demand
    datas = [_read(path) for path in files] if cache is not None else [None] * len(files)
    for path, data in zip(files, datas):
        if data is not None:
            project.seen(path, data)  # what the index may read again, it has (cache keys ask it)
    for index, path in enumerate(files):
        data = datas[index]
        if data is not None:
            key = cache.lookup_key(path, data, project)
            cached = cache.get(key, path) if key is not None else None
            if cached is not None:
                reports[index] = FileReport(path=path, findings=cached, original=data)
                if progress:
                    progress(1)
                continue
            keys[index] = data
        todo.append((index, (path, data, fix)))
    if todo:
        from . import inputs  # noqa: F401 (before the fork: workers inherit it instead of importing it each)
    jobs = jobs or default_jobs()
    if jobs > 1 and len(todo) > 1:
        _in_pool(todo, reports, settings, jobs, progress, project)
    else:
        _init(settings, index=project)
        for index, item in todo:
            reports[index] = _work(item)
            if progress:
                progress(1)
    if cache is not None:
        for index, data in keys.items():
            report = reports[index]
            if report is not None and report.internal_error is None:  # lint only: fix has no cache
                cache.put_with_dependencies(files[index], data, project, getattr(report, "dependencies", {}),
                                            report.findings)
    return reports  # type: ignore[return-value]
