"""The result cache of ``lint``: findings of a file, keyed by its content, its path, the
code of rocmport and its rules, and the settings (with the configuration's root) that shape
findings. ``fix`` never uses it. Kept like ruff's: ``.rocmport_cache/`` at the project
root with a ``CACHEDIR.TAG`` (backup tools skip it) and a ``.gitignore``. Each entry is its
own file, written atomically, so runs that share the cache never see a half-written entry
and never corrupt one another."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import List, Optional

from . import __version__
from .config import Settings
from .findings import Finding, finding_from_data, finding_to_data
from .source import read_regular

CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                "# This file is a cache directory tag created by rocmport.\n"
                "# For information about cache directory tags see https://bford.info/cachedir/\n")
FORMAT = 2
MAX_ENTRY_BYTES = 16 * 1024 * 1024


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
    if not isinstance(d, dict) or set(d) != {"c", "n", "m", "s", "e", "f", "cell", "u", "sp"}:
        return False
    if not (all(_is(d[k], str) for k in "cnm") and _pair(d["s"]) and _pair(d["e"]) and _pair(d["sp"], False)
            and (d["cell"] is None or _is(d["cell"], int)) and (d["u"] is None or _is(d["u"], str))):
        return False
    fix = d["f"]
    if fix is None:
        return True
    return (isinstance(fix, dict) and set(fix) == {"a", "m", "r", "e"} and _is(fix["a"], str)
            and (fix["m"] is None or _is(fix["m"], str)) and isinstance(fix["r"], list)
            and all(_is(r, str) for r in fix["r"]) and isinstance(fix["e"], list)
            and all(isinstance(e, list) and len(e) == 5 and _is(e[0], int) and _is(e[1], int) and _is(e[2], str)
                    and _pair(e[3]) and _pair(e[4]) for e in fix["e"]))


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
    # consulted (rocmport.analysis.index): recorded per file content, they join its key.
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
            return json.loads(read_regular(str(path), MAX_ENTRY_BYTES))
        except (OSError, ValueError, RecursionError):
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
        """The cached findings, or None: a missing, unreadable, non-regular (a FIFO) or
        malformed entry, even valid JSON of another shape, is a miss, never an error."""
        try:
            data = json.loads(read_regular(str(self._entry(key)), MAX_ENTRY_BYTES))
            if not isinstance(data, list):
                return None
            if not all(_valid(d) for d in data):
                return None  # fields of the wrong type: only what put() writes is trusted
            return [finding_from_data(d, path) for d in data]
        except (OSError, RecursionError, ValueError, LookupError, TypeError, AttributeError):
            return None

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
