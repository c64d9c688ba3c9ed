"""The result cache: findings of a file, keyed by its content, its path, rocmport's version
and the settings that shape findings. Kept like ruff's: ``.rocmport_cache/`` at the project
root with a ``CACHEDIR.TAG`` (backup tools skip it) and a ``.gitignore``. Each entry is its
own file, written atomically, so runs that share the cache never see a half-written entry
and never corrupt one another."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import List, Optional

from . import __version__
from .config import Settings
from .findings import Finding, finding_from_data, finding_to_data

CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag created by rocmport.\n"
                "# For information about cache directory tags see https://bford.info/cachedir/\n")
FORMAT = 1


def settings_fingerprint(settings: Settings) -> str:
    """Everything in the settings that can change a file's findings."""
    data = asdict(settings)
    for key in ("root", "config_file", "cache_dir", "force_exclude", "exclude", "extend_exclude",
                "respect_gitignore"):
        data.pop(key, None)
    blob = json.dumps(data, sort_keys=True, default=str)
    return hashlib.blake2b(f"{__version__}/{FORMAT}/{blob}".encode(), digest_size=16).hexdigest()


class Cache:
    def __init__(self, directory: Path, settings: Settings):
        self.directory = Path(directory)
        self.fingerprint = settings_fingerprint(settings)
        self._ready = False

    def key(self, path: str, data: bytes, dependencies: str = "") -> str:
        """``dependencies``: the digest of the summaries of the project modules the file
        imports (``ProjectIndex.dependency_digest``): a changed wrapper re-lints its callers."""
        digest = hashlib.blake2b(data, digest_size=20)
        if dependencies:
            digest.update(b"\0deps:" + dependencies.encode())
        digest.update(b"\0" + os.path.abspath(path).encode("utf-8", "surrogateescape"))
        digest.update(b"\0" + self.fingerprint.encode())
        return digest.hexdigest()

    # A file's findings also depend on the summaries of the project modules its lint
    # consulted (codemods._index): recorded per file content, they join its key.
    def lookup_key(self, path: str, data: bytes, index) -> Optional[str]:
        """The key of ``path``'s entry given the current summaries of the modules its last
        lint consulted (none recorded: the plain key); None when a record is unreadable."""
        base = self.key(path, data)
        record = self._read_json(self._record(base))
        if record is None:
            return base
        try:
            return self.key(path, data, index.dependency_digest(record))
        except (TypeError, ValueError):
            return None

    def put_with_dependencies(self, path: str, data: bytes, index, record, findings: List[Finding]) -> None:
        base = self.key(path, data)
        target = self._record(base)
        if record or target.exists():
            self._write_json(target, record or {})
        self.put(self.key(path, data, index.dependency_digest(record)) if record else base, findings)

    def _record(self, key: str) -> Path:
        return self.directory / f"v{FORMAT}" / "deps" / key[:2] / f"{key}.json"

    @staticmethod
    def _read_json(path: Path):
        try:
            with open(path, "rb") as handle:
                return json.loads(handle.read())
        except (OSError, ValueError):
            return None

    def _write_json(self, entry: Path, value) -> None:
        try:
            self._prepare()
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(value, handle, separators=(",", ":"))
            os.replace(tmp, entry)
        except OSError:
            pass

    def _entry(self, key: str) -> Path:
        return self.directory / f"v{FORMAT}" / key[:2] / f"{key}.json"

    def get(self, key: str, path: str) -> Optional[List[Finding]]:
        try:
            with open(self._entry(key), "rb") as handle:
                data = json.loads(handle.read())
            return [finding_from_data(d, path) for d in data]
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or unreadable: a miss, never an error

    def put(self, key: str, findings: List[Finding]) -> None:
        entry = self._entry(key)
        try:
            self._prepare()
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump([finding_to_data(f) for f in findings], handle, separators=(",", ":"))
            os.replace(tmp, entry)
        except OSError:
            pass  # a read-only or full disk only costs speed

    def _prepare(self) -> None:
        if self._ready:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, content in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "# Created by rocmport\n*\n")):
            target = self.directory / name
            if not target.exists():
                try:
                    target.write_text(content)
                except OSError:
                    pass
        self._ready = True


def default_cache_dir(settings: Settings) -> Path:
    if settings.cache_dir:
        return Path(settings.cache_dir)
    env = os.environ.get("ROCMPORT_CACHE_DIR")
    if env:
        return Path(env)
    return Path(settings.root) / ".rocmport_cache"
