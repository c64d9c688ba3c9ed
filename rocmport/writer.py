"""Atomic writes: a temporary file in the same directory, then ``os.replace``.

What a careful user expects (docs/reliability.md):

* the file is whole at every moment (killed mid-write: the old or the new bytes);
* a file that someone changed or deleted after rocmport read it is left alone (the bytes
  read are compared with the disk just before the replace, under a lock on the directory
  that concurrent rocmport runs share), never overwritten or brought back;
* owner, group and mode are kept (as root too); a symbolic link stays a link (its target is
  rewritten); a file with several hard links is refused, since replacing it would split them.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from typing import Optional

from .source import read_regular


class ChangedOnDisk(OSError):
    """The file is no longer what rocmport read; the message is user-facing."""


def write_atomic(path: str, data: bytes, expected: Optional[bytes] = None) -> None:
    """Replace ``path`` with ``data`` atomically. Only call when changed.

    ``expected``: the bytes the fix was computed from; when the file now holds anything
    else (or is gone) nothing is written and :class:`ChangedOnDisk` is raised. Raises
    OSError (for example on a read-only directory); the original is then untouched and no
    temporary file is left behind."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    directory = os.path.dirname(os.path.abspath(target))
    lock = _lock(directory)
    try:
        try:
            info = os.stat(target)
        except FileNotFoundError:
            if expected is not None:
                raise ChangedOnDisk(errno.ENOENT, "deleted while rocmport ran; not recreated", path) from None
            info = None
        if expected is not None:
            try:
                current = read_regular(target)
            except FileNotFoundError:
                raise ChangedOnDisk(errno.ENOENT, "deleted while rocmport ran; not recreated", path) from None
            if current == data:
                return  # another run already wrote exactly this
            if current != expected:
                raise ChangedOnDisk(errno.EAGAIN, "changed on disk while rocmport ran; left as it is"
                                                  " (run rocmport again)", path)
        if info is not None:
            if not stat.S_ISREG(info.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", path)
            if info.st_nlink > 1:
                raise OSError(errno.EMLINK, f"has {info.st_nlink} hard links; not rewritten (replacing it would"
                                            " split them: break the link first to fix it)", path)
            if not os.access(target, os.W_OK):
                raise PermissionError(13, "Permission denied (the file is read-only)", path)
            mode = stat.S_IMODE(info.st_mode)
        else:
            mode = 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(prefix=".rocmport-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if info is not None:
                _keep_owner(tmp, info, path)
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    finally:
        if lock is not None:
            os.close(lock)  # releases the lock


def _keep_owner(tmp: str, info: os.stat_result, path: str) -> None:
    mine = os.stat(tmp)
    if (mine.st_uid, mine.st_gid) == (info.st_uid, info.st_gid):
        return
    try:
        os.chown(tmp, info.st_uid, info.st_gid)
    except PermissionError:
        raise PermissionError(errno.EPERM, "cannot keep the file's owner and group; not rewritten", path) from None


def _lock(directory: str) -> Optional[int]:
    """An exclusive ``flock`` on ``directory`` (shared by every rocmport run), or None."""
    try:
        import fcntl

        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except (ImportError, OSError):  # pragma: no cover - not POSIX, or no read access
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # pragma: no cover - a filesystem without flock
        pass
    return fd


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
