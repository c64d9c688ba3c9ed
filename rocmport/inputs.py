"""One file in, by its kind: the one place that sends a file to what checks it.

A Jupyter notebook goes to the notebook adapter (``rocmport.notebook``: code cells, magics
masked); a shell script, Dockerfile, YAML or ``.env`` file to the ROC6xx scanner
(``rocmport.rules.env_vars.scan_files``, display-only); anything else -- a ``.py`` file, or a file
named on the command line whatever its name -- to the engine as Python
(``rocmport.engine.check_bytes``). ``rocmport.filekinds`` decides the kind, from the name
and, for a file without a suffix, its first bytes. The runner, the command line, the flake8
plugin and the language server check files through here.
"""

from __future__ import annotations

import os

from rocmport.rules.env_vars import scan_files as env_files

from . import engine, parsing, reports
from .config import Settings
from .filekinds import ENV_KINDS, HEAD_BYTES, file_kind
from .notebook import check_notebook
from .reports import FileReport
from .source import read_regular


def check_bytes(data: bytes, path: str, settings: Settings, *, fix: bool = False, index=None) -> FileReport:
    """Lint (or fix) the bytes of one file. Never raises for bad input. A file that may nest
    deeply is checked on a thread with a large stack (``parsing.run_deep``)."""
    if len(data) > parsing.DEEP_MIN_BYTES:
        return parsing.run_deep(_check_bytes, data, path, settings, fix, index)
    return _check_bytes(data, path, settings, fix, index)


def _check_bytes(data: bytes, path: str, settings: Settings, fix: bool, index) -> FileReport:
    kind = file_kind(path, data[:HEAD_BYTES])  # None: a file named on the command line, read as Python
    if kind == "notebook":
        return check_notebook(data, path, settings, fix=fix)
    if kind in ENV_KINDS:  # shell, Dockerfile, YAML, .env: ROC6xx only, display-only
        report = FileReport(path=path, original=data)
        if settings.scope == "tests":
            return report  # build and CI files are not tests
        try:
            report.findings = env_files.scan(path, data.decode("utf-8", "replace"), settings.enabled_codes(path), kind)
        except Exception as exc:  # pragma: no cover - a bug in the scanner
            report.internal_error = f"{type(exc).__name__}: {exc}"
        return report
    return engine.check_bytes(data, path, settings, fix=fix, index=index)


def check_path(path: str, settings: Settings, *, fix: bool = False, index=None) -> FileReport:
    """Read ``path`` and check it; unreadable files become ROC001 findings."""
    try:
        data = read_regular(path)
    except OSError as exc:
        report = FileReport(path=path)
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError) and os.path.islink(path):
            reason = "broken symbolic link"
        elif os.path.isdir(path):
            try:
                os.scandir(path).close()
                reason = "Is a directory"
            except OSError as listing:  # found by a walk that could not enter it
                reason = f"cannot list the directory: {listing.strerror or listing}"
        report.findings = reports.unreadable(path, f"cannot read: {reason}", 1, 1, settings.enabled_codes(path))
        return report
    return check_bytes(data, path, settings, fix=fix, index=index)
