"""Atomic writes: a temporary file in the same directory, then ``os.replace``."""

from __future__ import annotations

import os
import stat
import tempfile


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically, keeping its mode. Only call when changed.

    Raises OSError (for example on a read-only directory); the original is then untouched
    and no temporary file is left behind."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise PermissionError(13, "Permission denied (the file is read-only)", path)
    fd, tmp = tempfile.mkstemp(prefix=".rocmport-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
