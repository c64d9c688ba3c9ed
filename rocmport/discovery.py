"""Which files to check: paths and directories, ``.gitignore`` (pathspec), default excludes
like ruff's (but ``build`` is checked), ``exclude`` / ``extend-exclude`` patterns. Files named
explicitly are always checked unless ``force_exclude`` is set (pre-commit passes names)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import pathspec

from . import filekinds
from .config import Settings
from .filekinds import HEAD_BYTES
from .source import read_head, read_regular

# ruff's default excludes, without "build" (build/ often holds real sources).
DEFAULT_EXCLUDES = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".rocmport_cache", ".svn",
    ".tox", ".venv", ".vscode", "__pypackages__", "_build", "buck-out", "dist", "node_modules",
    "site-packages", "venv",
)


def file_kind(path: "str | Path") -> Optional[str]:
    """"python" (or "notebook", "shell", "dockerfile", "yaml", "dotenv") for files rocmport
    checks when it walks a directory, else None: rocmport.filekinds decides, from the name
    and, for a file without a suffix, its ``#!`` line (read without blocking on a FIFO).
    A walk asks it of every entry, as text: no ``Path`` is made."""
    path = os.fspath(path)
    name = os.path.basename(path)
    dot = name.rfind(".")
    has_suffix = 0 < dot < len(name) - 1  # PurePath.suffix's rule
    head = read_head(path, HEAD_BYTES) if not has_suffix else b""
    return filekinds.file_kind(path, head)


class Excluder:
    def __init__(self, settings: Settings):
        patterns = list(settings.exclude if settings.exclude is not None else DEFAULT_EXCLUDES)
        patterns += list(settings.extend_exclude)
        self.root = Path(settings.root).resolve()
        self.spec = pathspec.GitIgnoreSpec.from_lines(patterns)
        self.respect_gitignore = settings.respect_gitignore
        self._gitignores: Dict[Path, Optional[pathspec.GitIgnoreSpec]] = {}
        # directory -> the .gitignore specs that apply in it, with the directory they are in
        self._specs: Dict[Path, List[Tuple[Path, pathspec.GitIgnoreSpec]]] = {}

    def _gitignore(self, directory: Path) -> Optional[pathspec.GitIgnoreSpec]:
        if directory not in self._gitignores:
            spec = None
            candidate = directory / ".gitignore"
            if candidate.is_file():
                try:
                    text = read_regular(str(candidate)).decode("utf-8", "replace")
                    spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
                except OSError:
                    spec = None
            self._gitignores[directory] = spec
        return self._gitignores[directory]

    def excluded(self, path: Path, is_dir: bool) -> bool:
        absolute = path.absolute()
        try:
            rel = absolute.relative_to(self.root).as_posix()
        except ValueError:
            rel = None
        name = absolute.name + ("/" if is_dir else "")
        if self.spec.match_file(name) or (rel and self.spec.match_file(rel + ("/" if is_dir else ""))):
            return True
        if self.respect_gitignore:
            for directory, spec in self._specs_for(absolute.parent):
                relative = absolute.relative_to(directory).as_posix() + ("/" if is_dir else "")
                if spec.match_file(relative):
                    return True
        return False

    def _specs_for(self, directory: Path) -> List[Tuple[Path, pathspec.GitIgnoreSpec]]:
        """The .gitignore files of ``directory`` and its parents up to the repository's root
        (found once per directory: a walk asks for every file in it)."""
        found = self._specs.get(directory)
        if found is None:
            found = self._specs[directory] = [(d, spec) for d in _ancestors_within_repo(directory)
                                              if (spec := self._gitignore(d)) is not None]
        return found


def _ancestors_within_repo(directory: Path) -> List[Path]:
    """``directory`` and its parents up to the enclosing git repository's root."""
    out = []
    for d in (directory, *directory.parents):
        out.append(d)
        if (d / ".git").exists():
            return out
    return [directory]


def discover(paths: Sequence[str], settings: Settings) -> Tuple[List[str], List[str]]:
    """(files to check, paths that do not exist). Explicit files keep their spelling."""
    excluder = Excluder(settings)
    files: List[str] = []
    missing: List[str] = []
    seen = set()

    def add(p: str) -> None:
        key = os.path.abspath(p)
        if key not in seen:
            seen.add(key)
            files.append(p)

    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            missing.append(raw)
            continue
        if path.is_dir():
            if settings.force_exclude and excluder.excluded(path, True):
                continue
            for found in _walk(path, excluder):
                add(found)
        else:
            if settings.force_exclude and excluder.excluded(path, False):
                continue
            add(raw)  # named explicitly: checked whatever its suffix or ignore status
    return files, missing


def _walk(root: Path, excluder: Excluder) -> Iterator[str]:
    """Files to check under ``root``. A directory that cannot be listed is yielded itself (the
    engine reports it as ROC001, so a run never passes silently over it). Never yielded: a
    FIFO, device or socket (reading could block or never end), a directory link (it can
    loop), a file link whose target lies outside ``root`` (a fix would write there)."""
    real_root = os.path.realpath(root)
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            yield str(directory)
            continue
        subdirs = []
        here = str(directory) == os.curdir
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows symlinks
            except OSError:
                is_dir = False
            if is_dir:
                if entry.is_symlink():
                    continue  # never follow directory links: they can loop
                path = Path(entry.path)
                if not excluder.excluded(path, True):
                    subdirs.append(path)
                continue
            try:
                if not stat.S_ISREG(entry.stat().st_mode):
                    continue  # a FIFO, device or socket: never read
            except OSError:
                pass  # a broken or looping link: checked, so it is reported
            else:
                if entry.is_symlink() and not _inside(os.path.realpath(entry.path), real_root):
                    continue
            if file_kind(entry.path) and not excluder.excluded(Path(entry.path), False):
                # a walk of "." names its files "a.py", not "./a.py", as ruff does (pathlib
                # already drops the "./" below); a name starting with "-" keeps it
                yield entry.name if here and not entry.name.startswith("-") else entry.path
        stack.extend(reversed(subdirs))


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # pragma: no cover - other drive on Windows
        return False
