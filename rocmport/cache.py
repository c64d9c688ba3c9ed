"""The result cache of ``lint``: findings of a file, keyed by its content, its path, the
code of rocmport and its rules, and the settings (with the configuration's root) that shape
findings. ``fix`` never uses it. Kept like ruff's: ``.rocmport_cache/`` at the project
root with a ``CACHEDIR.TAG`` (backup tools skip it) and a ``.gitignore``.

Entries are lines of packs (``v3/packs/*.pack``): a run reads every pack once, and writes
what it learnt as one new pack (one per :data:`PACK_LINES` entries), atomically, so runs
that share the cache never see a half-written pack and never corrupt one another. Past
:data:`MAX_PACKS` packs, a run merges them into one, keeping for each file and settings the
latest entry only, so the cache holds about one entry per file. An entry whose findings read
other project modules holds what it read and the digest of their summaries then: it is a
hit only while they are the same. (A file per entry cost a file created, written and renamed
per source file: 2,200 of them, 1.7 s of system time, in a cold lint of the torch package.)

What a clone cannot forge: every key is a keyed digest (BLAKE2b) under a secret of this user
on this machine, 32 random bytes kept outside any work tree (``$XDG_CACHE_HOME/rocmport/secret``,
else ``~/.cache/rocmport/secret``, mode 0600). Entries written anywhere else (a
``.rocmport_cache`` committed to a repository, another machine's cache) never match, so they
can never hide a finding. Where that secret cannot be kept, each run draws its own: the cache
then helps within the run only.

Writes never go through a symbolic link: the cache directory and its subdirectories are
opened with ``O_NOFOLLOW`` and used through their descriptors, files are created with
``O_CREAT | O_EXCL | O_NOFOLLOW`` and renamed over the entry (a rename replaces a link, it
does not follow it), so a link planted in the cache makes ``lint`` write nothing elsewhere.
A write that fails (a full disk) removes its temporary file."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import stat
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Dict, List, Optional

from . import __version__
from .config import Settings
from .findings import Finding, finding_from_data, finding_to_data
from .source import read_regular

CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag created by rocmport.\n"
                "# For information about cache directory tags see https://bford.info/cachedir/\n")
FORMAT = 3
MAX_PACK_BYTES = 512 * 1024 * 1024  # a larger pack is not read (not one this code wrote)
MAX_PACKS = 16  # packs kept before they are merged into one
PACK_LINES = 4096  # entries a run holds before it writes them


# The package holding the rules, found without importing it (importing costs start-up time).
RULE_PACKAGE = "rocmport.rules"


@functools.lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """A digest of the sources of rocmport and its rule package, once per process (a few
    milliseconds): a changed rule gives new answers even when the version string is the same."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{__version__}/{FORMAT}/{sys.version_info[:2]}".encode())
    directories = [os.path.dirname(os.path.abspath(__file__))]
    spec = importlib.util.find_spec(RULE_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        directories.extend(spec.submodule_search_locations)
    for directory in directories:
        for root, dirs, names in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    try:
                        with open(path, "rb") as handle:
                            data = handle.read()
                    except OSError:
                        data = b"?"
                    digest.update(os.path.relpath(path, directory).encode("utf-8", "surrogateescape") + b"\0")
                    digest.update(hashlib.blake2b(data, digest_size=16).digest())
    return digest.hexdigest()


def settings_fingerprint(settings: Settings) -> str:
    """Everything that can change a file's findings: the settings (with the configuration's
    root and file: ``per-file-ignores`` match paths relative to the root) and the rule code.
    Only what decides which files are checked is left out."""
    data = asdict(settings)
    for key in ("cache_dir", "force_exclude", "exclude", "extend_exclude", "respect_gitignore"):
        data.pop(key, None)
    data["root"] = os.path.abspath(str(data.get("root") or "."))
    blob = json.dumps(data, sort_keys=True, default=str)
    return hashlib.blake2b(f"{code_fingerprint()}/{blob}".encode(), digest_size=16).hexdigest()


def _is(value, kind) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


def _pair(value, optional: bool = True) -> bool:
    if value is None:
        return optional
    return isinstance(value, list) and len(value) == 2 and all(_is(v, int) for v in value)


def _valid(d) -> bool:
    """Is ``d`` a finding exactly as ``finding_to_data`` writes one?"""
    if not isinstance(d, dict) or set(d) != {"c", "n", "m", "s", "e", "f", "cell", "u", "sp", "rel", "sc", "np"}:
        return False
    if not (all(_is(d[k], str) for k in "cnm") and _pair(d["s"]) and _pair(d["e"]) and _pair(d["sp"], False)
            and (d["cell"] is None or _is(d["cell"], int)) and (d["u"] is None or _is(d["u"], str))
            and d["sc"] in ("source", "tests") and (d["np"] is None or _is(d["np"], str))
            and isinstance(d["rel"], list) and all(isinstance(r, list) and len(r) == 3 and _pair(r[0], False)
                                                   and _pair(r[1], False) and _is(r[2], str) for r in d["rel"])):
        return False
    fix = d["f"]
    if fix is None:
        return True
    return (isinstance(fix, dict) and set(fix) == {"a", "m", "r", "e"} and _is(fix["a"], str)
            and (fix["m"] is None or _is(fix["m"], str)) and isinstance(fix["r"], list)
            and all(_is(r, str) for r in fix["r"]) and isinstance(fix["e"], list)
            and all(isinstance(e, list) and len(e) == 5 and _is(e[0], int) and _is(e[1], int) and _is(e[2], str)
                    and _pair(e[3]) and _pair(e[4]) for e in fix["e"]))


SECRET_BYTES = 32


def secret_path() -> Path:
    """Where this user's cache secret is kept: outside any work tree."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rocmport" / "secret"


@functools.lru_cache(maxsize=None)
def _secret(path: str) -> bytes:
    """This user's secret at ``path``, made on first use; a fresh one for this process alone
    when it cannot be kept there or the file there is not trustworthy (a link, another
    owner's, writable by others, the wrong size)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            pass
        else:
            try:
                _write_all(fd, os.urandom(SECRET_BYTES))
            finally:
                os.close(fd)
        fd = os.open(path, flags)
        try:
            info = os.fstat(fd)
            data = os.read(fd, SECRET_BYTES + 1)
        finally:
            os.close(fd)
        owner_ok = not hasattr(os, "geteuid") or info.st_uid == os.geteuid()
        if (stat.S_ISREG(info.st_mode) and owner_ok and not info.st_mode & 0o022
                and len(data) == SECRET_BYTES):
            return data
    except OSError:
        pass
    return os.urandom(SECRET_BYTES)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# os.replace takes dir_fd where os.rename does (the set lists only rename)
_AT = os.open in os.supports_dir_fd and os.mkdir in os.supports_dir_fd and os.rename in os.supports_dir_fd


class Cache:
    def __init__(self, directory: Path, settings: Settings):
        self.directory = Path(directory)
        self.fingerprint = settings_fingerprint(settings)
        self.secret = _secret(str(secret_path()))
        self._ready = False
        self._writable = True
        self._entries: Optional[Dict[str, str]] = None  # key -> "slot json", from the packs read
        self._packs: List[Path] = []  # the packs read
        self._new: List[str] = []  # this run's lines, not yet written

    def key(self, path: str, data: bytes) -> str:
        digest = hashlib.blake2b(data, digest_size=20, key=self.secret)
        digest.update(b"\0" + os.path.abspath(path).encode("utf-8", "surrogateescape"))
        digest.update(b"\0" + self.fingerprint.encode())
        return digest.hexdigest()

    def _slot(self, path: str) -> str:
        """Which file, under which settings, an entry is of: a merge keeps the latest per slot."""
        digest = hashlib.blake2b(os.path.abspath(path).encode("utf-8", "surrogateescape"), digest_size=10)
        digest.update(b"\0" + self.fingerprint.encode())
        return digest.hexdigest()

    # A file's findings also depend on the summaries of the project modules its lint
    # consulted (rocmport.analysis.index): its entry keeps them, as ``stop_recording`` made
    # them, with the digest ``ProjectIndex.dependency_digest`` gave them when it was written.
    def lookup(self, path: str, data: bytes, index) -> Optional[List[Finding]]:
        """The cached findings of ``path`` holding ``data``, or None: no entry, a malformed
        one, or one whose findings read modules whose summaries changed since."""
        return self.get(self.key(path, data), path, index)

    def put_with_dependencies(self, path: str, data: bytes, index, record, findings: List[Finding]) -> None:
        """Keep ``findings`` of ``path`` holding ``data`` (and ``record``, what they read of
        the project: ``index`` gives its digest); written by :meth:`flush`, or once
        :data:`PACK_LINES` entries wait."""
        items = [finding_to_data(f) for f in findings]
        value = {"deps": record, "digest": index.dependency_digest(record), "findings": items} if record else items
        self._new.append(f"{self.key(path, data)} {self._slot(path)} {json.dumps(value, separators=(',', ':'))}")
        if len(self._new) >= PACK_LINES:
            self.flush()

    def get(self, key: str, path: str, index=None) -> Optional[List[Finding]]:
        """The cached findings, or None: a missing or malformed entry, even valid JSON of
        another shape, is a miss, never an error; so is an entry with dependencies where
        ``index`` (the project index) is not given."""
        line = self._load().get(key)
        if line is None:
            return None
        try:
            data = json.loads(line.partition(" ")[2])
            if isinstance(data, dict):
                if index is None or set(data) != {"deps", "digest", "findings"} or not isinstance(data["deps"], dict):
                    return None
                if index.dependency_digest(data["deps"]) != data["digest"]:
                    return None
                data = data["findings"]
            if not isinstance(data, list):
                return None
            if not all(_valid(d) for d in data):
                return None  # fields of the wrong type: only what put() writes is trusted
            return [finding_from_data(d, path) for d in data]
        except (RecursionError, ValueError, LookupError, TypeError, AttributeError):
            return None

    # -- packs ----------------------------------------------------------------------------------

    def _pack_dir(self) -> Path:
        return self.directory / f"v{FORMAT}" / "packs"

    def _load(self) -> Dict[str, str]:
        """Every entry of the packs, read once (a later pack's entry wins); an unreadable
        pack, a link or a FIFO among them, is passed over."""
        if self._entries is None:
            self._entries = {}
            try:
                with os.scandir(self._pack_dir()) as found:
                    packs = sorted(Path(e.path) for e in found
                                   if e.name.endswith(".pack") and e.is_file(follow_symlinks=False))
            except OSError:
                packs = []
            for pack in packs:
                try:
                    text = read_regular(str(pack), MAX_PACK_BYTES).decode("ascii")
                except (OSError, UnicodeDecodeError):
                    continue
                self._packs.append(pack)
                for line in text.split("\n"):
                    key, _, rest = line.partition(" ")
                    if rest:
                        self._entries.pop(key, None)  # the latest last: a merge keeps it
                        self._entries[key] = rest
        return self._entries

    def flush(self) -> None:
        """Write the entries this run holds as one pack; past :data:`MAX_PACKS` packs, merge
        them all into one, the latest entry of each file and settings kept (a pack another
        run merges away at the same moment only costs speed)."""
        if not self._new:
            return
        entries = self._load()
        lines, self._new = self._new, []
        merge = len(self._packs) >= MAX_PACKS
        if merge:
            latest: Dict[str, str] = {}  # slot -> line
            for key, rest in entries.items():
                latest[rest.partition(" ")[0]] = f"{key} {rest}"
            for line in lines:
                latest[line.split(" ", 2)[1]] = line
            lines = list(latest.values())
        for line in lines:
            key, _, rest = line.partition(" ")
            entries.pop(key, None)
            entries[key] = rest
        name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}.pack"
        self._store(self._pack_dir() / name, ("\n".join(lines) + "\n").encode("ascii"))
        written = self._pack_dir() / name
        if merge and written.is_file():
            for old in self._packs:
                try:
                    os.unlink(old)  # never follows a link: a link is removed, not its target
                except OSError:
                    pass
            self._packs = [written]
        elif written.is_file():
            self._packs.append(written)

    # -- writing: never through a link, nothing left behind ------------------------------------

    def _store(self, entry: Path, data: bytes) -> None:
        """Write ``data`` as ``entry`` (a path under the cache directory) atomically; a
        failure (a read-only or full disk, a link where a directory should be) only costs
        speed."""
        if not self._writable:
            return
        parts = entry.relative_to(self.directory).parts
        try:
            top = self._open_top()
        except OSError:
            self._writable = False  # no cache directory of our own: no writes this run
            return
        try:
            folder = self._descend(top, parts[:-1])
        except OSError:
            os.close(top)
            return
        try:
            self._replace(folder, parts[-1], data)
        except OSError:
            pass
        finally:
            if folder != top:
                os.close(folder)
            os.close(top)

    def _open_top(self) -> int:
        """The cache directory, opened without following a link (made if missing, with its
        CACHEDIR.TAG and .gitignore). Raises OSError, and on a platform without ``*at``
        calls (Windows) ``NotImplementedError`` via OSError: no writes there."""
        if not _AT:
            raise OSError("no openat on this platform")
        try:
            os.mkdir(self.directory)
        except FileExistsError:
            pass
        except FileNotFoundError:
            os.makedirs(self.directory.parent, exist_ok=True)
            os.mkdir(self.directory)
        fd = os.open(self.directory, _DIR_FLAGS)  # ELOOP when the directory is a link
        if not self._ready:
            self._ready = True
            for name, content in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "# Created by rocmport\n*\n")):
                try:
                    self._create(fd, name, content.encode())
                except OSError:
                    pass  # there already, or a link: left alone
        return fd

    @staticmethod
    def _descend(fd: int, names) -> int:
        """The subdirectory ``names`` of ``fd`` (made where missing), each step opened
        without following a link; the caller closes what it gets (``fd`` when ``names`` is
        empty)."""
        current = fd
        for name in names:
            try:
                os.mkdir(name, 0o777, dir_fd=current)
            except FileExistsError:
                pass
            try:
                following = os.open(name, _DIR_FLAGS, dir_fd=current)
            finally:
                if current != fd:
                    os.close(current)
            current = following
        return current

    @staticmethod
    def _create(folder: int, name: str, data: bytes) -> None:
        """A new file ``name`` in ``folder`` holding ``data``; never through a link, never
        over an existing file; removed again when the write fails."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(name, flags, 0o666, dir_fd=folder)
        try:
            _write_all(fd, data)
        except BaseException:
            os.close(fd)
            _unlink(name, folder)
            raise
        os.close(fd)

    def _replace(self, folder: int, name: str, data: bytes) -> None:
        temporary = f".tmp-{os.getpid()}-{os.urandom(6).hex()}"
        self._create(folder, temporary, data)
        try:
            os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)  # replaces a link, never follows it
        except BaseException:
            _unlink(temporary, folder)
            raise


def _unlink(name: str, folder: int) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        pass


def default_cache_dir(settings: Settings) -> Path:
    if settings.cache_dir:
        return Path(settings.cache_dir)
    env = os.environ.get("ROCMPORT_CACHE_DIR")
    if env:
        return Path(env)
    return Path(settings.root) / ".rocmport_cache"
