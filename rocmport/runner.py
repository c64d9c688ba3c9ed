"""Checks many files: the cache first, then a process pool for the rest. It never prints;
``progress`` (a callable taking a count) is how the CLI draws its bar."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, List, Optional, Sequence

from codemods._index import ProjectIndex

from .cache import Cache
from .config import Settings
from .engine import FileReport, check_bytes, check_path

_SETTINGS: Optional[Settings] = None
_INDEX: Optional[ProjectIndex] = None


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _init(settings: Settings, index: Optional[ProjectIndex] = None) -> None:
    global _SETTINGS, _INDEX
    _SETTINGS = settings
    _INDEX = index


def _work(item):
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
        if os.path.isdir(path):
            return None
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None  # check_path reports it as ROC001


def check_files(files: Sequence[str], settings: Settings, *, fix: bool = False, jobs: Optional[int] = None,
                cache: Optional[Cache] = None, progress: Optional[Callable[[int], None]] = None) -> List[FileReport]:
    """Reports for ``files``, in order. Files whose cached findings need no fix are served
    from the cache; the rest go to ``jobs`` worker processes (1: this process)."""
    reports: List[Optional[FileReport]] = [None] * len(files)
    todo = []
    keys = {}
    project = ProjectIndex(files)  # module names only: summaries are computed on demand
    for index, path in enumerate(files):
        data = _read(path) if cache is not None else None
        if data is not None:
            key = cache.lookup_key(path, data, project)
            cached = cache.get(key, path) if key is not None else None
            if cached is not None and not (fix and any(f.applies(settings.unsafe_fixes) for f in cached)):
                reports[index] = FileReport(path=path, findings=cached, original=data)
                if progress:
                    progress(1)
                continue
            keys[index] = data
        todo.append((index, (path, data, fix)))
    jobs = jobs or default_jobs()
    if jobs > 1 and len(todo) > 1:
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=context,
                                 initializer=_init, initargs=(settings, project)) as pool:
            chunk = max(1, min(16, len(todo) // (jobs * 8) or 1))
            results = pool.map(_work, [item for _, item in todo], chunksize=chunk)
            for (index, _), report in zip(todo, results):
                reports[index] = report
                if progress:
                    progress(1)
    else:
        _init(settings, project)
        for index, item in todo:
            reports[index] = _work(item)
            if progress:
                progress(1)
    if cache is not None:
        for index, data in keys.items():
            report = reports[index]
            if report is not None and report.internal_error is None and (not fix or (
                    report.fixed is None and not report.extra_files)):  # nothing to fix: the lint result
                cache.put_with_dependencies(files[index], data, project, getattr(report, "dependencies", {}),
                                            report.findings)
    return reports  # type: ignore[return-value]
