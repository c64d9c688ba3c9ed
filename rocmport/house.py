"""What the repository being fixed says about its own code: formatter settings, the torch
versions it declares, the license header its files share.

Read from the files a maintainer keeps (``pyproject.toml``'s ``[tool.ruff]``/``[tool.black]``/
``[tool.isort]``, ``ruff.toml``/``.ruff.toml``, ``setup.cfg``, requirements files), found from
the fixed file upwards to the repository root; cached per directory. Nothing here is
rocmport's own configuration (that is ``config``); it only shapes generated code so the
repository's own tools leave it as it is.
"""

from __future__ import annotations

import configparser
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Tuple

from .source import read_head, read_regular

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - 3.9/3.10
    import tomli as tomllib  # type: ignore

DEFAULT_LINE_LENGTH = 88  # black's and ruff's


@dataclass(frozen=True)
class Style:
    quote: str = '"'
    line_length: int = DEFAULT_LINE_LENGTH
    formatter: Optional[str] = None  # "ruff" | "black" | None
    magic_trailing_comma: bool = True
    lines_after_imports: int = 1  # blank lines between the import block and the gate line
    force_single_line: bool = False  # isort's force-single-line: one imported name a statement


def load_toml(path: Path) -> dict:
    try:
        return tomllib.loads(read_regular(str(path)).decode("utf-8"))
    except (OSError, tomllib.TOMLDecodeError, ValueError):
        return {}


def table(data, *keys) -> dict:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _root_markers(directory: Path) -> bool:
    return (directory / ".git").exists() or (directory / ".hg").exists()


def _parents(start: Path) -> Iterable[Path]:
    for directory in (start, *start.parents):
        yield directory
        if _root_markers(directory):
            return


@functools.lru_cache(maxsize=512)
def _style_for_dir(directory: Path) -> Style:
    for folder in _parents(directory):
        for name in ("ruff.toml", ".ruff.toml"):
            candidate = folder / name
            if candidate.is_file():
                data = load_toml(candidate)
                return _ruff_style(data, data)
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            data = load_toml(pyproject)
            ruff = table(data, "tool", "ruff")
            black = table(data, "tool", "black")
            if ruff:
                return _ruff_style(ruff, data)
            isort = table(data, "tool", "isort")
            after = _lines_after(isort.get("lines_after_imports", isort.get("lines-after-imports")))
            single = isort.get("force_single_line", isort.get("force-single-line")) is True \
                or isort.get("profile") == "google"
            if black:
                length = black.get("line-length", DEFAULT_LINE_LENGTH)
                return Style('"', length if isinstance(length, int) else DEFAULT_LINE_LENGTH, "black",
                             not black.get("skip-magic-trailing-comma", False), after, single)
            if isort:
                length = isort.get("line_length", isort.get("line-length", DEFAULT_LINE_LENGTH))
                return Style(line_length=length if isinstance(length, int) else DEFAULT_LINE_LENGTH,
                             lines_after_imports=after, force_single_line=single)
        setup_cfg = folder / "setup.cfg"
        if setup_cfg.is_file():
            length = _flake8_length(setup_cfg)
            if length:
                return Style(line_length=length)
    return Style()


def _lines_after(value) -> int:
    return value if isinstance(value, int) and 0 <= value <= 3 else 1  # -1 (the default): 1 before code


def _ruff_style(ruff: dict, data: dict) -> Style:
    length = ruff.get("line-length", DEFAULT_LINE_LENGTH)
    fmt = table(ruff, "format")
    quote = "'" if fmt.get("quote-style") == "single" else '"'
    isort = table(ruff, "lint", "isort") or table(ruff, "isort")
    return Style(quote, length if isinstance(length, int) else DEFAULT_LINE_LENGTH, "ruff",
                 not fmt.get("skip-magic-trailing-comma", False), _lines_after(isort.get("lines-after-imports")),
                 isort.get("force-single-line") is True)


def _flake8_length(path: Path) -> Optional[int]:
    parser = configparser.ConfigParser()
    try:
        parser.read_string(read_regular(str(path)).decode("utf-8"))
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    for section in ("flake8", "pycodestyle"):
        if parser.has_option(section, "max-line-length"):
            try:
                return int(parser.get(section, "max-line-length"))
            except ValueError:
                return None
    return None


def style_for(path: str) -> Style:
    """The formatter style that governs ``path`` (a file name; "-" means the working directory)."""
    try:
        directory = (Path.cwd() if path in ("", "-") else Path(path).resolve().parent)
    except OSError:  # pragma: no cover - the working directory was removed
        return Style()
    return _style_for_dir(directory)


# ------------------------------------------------------------------------------------------
# The declared torch requirement
# ------------------------------------------------------------------------------------------

_TORCH_REQ_RE = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)", re.I)
_CLAUSE_RE = re.compile(r"(?P<op>>=|>|==|~=)\s*(?P<major>\d+)\.(?P<minor>\d+)")


def _lowest(spec: str) -> Optional[Tuple[int, int]]:
    """The lowest torch (major, minor) a specifier admits; None when it has no lower bound."""
    best = None
    for clause in spec.split(","):
        m = _CLAUSE_RE.search(clause)
        if m is None:
            continue
        version = (int(m.group("major")), int(m.group("minor")))
        best = version if best is None or version > best else best
    return best


def _requirement_lines(folder: Path) -> Iterable[str]:
    data = load_toml(folder / "pyproject.toml") if (folder / "pyproject.toml").is_file() else {}
    project = table(data, "project")
    for dep in project.get("dependencies", []) or []:
        if isinstance(dep, str):
            yield dep
    for deps in (table(project, "optional-dependencies") or {}).values():
        if isinstance(deps, list):
            yield from (d for d in deps if isinstance(d, str))
    for name in sorted(p.name for p in folder.glob("requirements*.txt")):
        try:
            yield from read_regular(str(folder / name)).decode("utf-8", "replace").splitlines()
        except OSError:
            continue
    setup_cfg = folder / "setup.cfg"
    if setup_cfg.is_file():
        parser = configparser.ConfigParser()
        try:
            parser.read_string(read_regular(str(setup_cfg)).decode("utf-8"))
            if parser.has_option("options", "install_requires"):
                yield from parser.get("options", "install_requires").splitlines()
        except (configparser.Error, OSError, UnicodeDecodeError):
            pass


@functools.lru_cache(maxsize=128)
def lowest_torch(directory: Path) -> Optional[Tuple[int, int]]:
    """The lowest torch version the project around ``directory`` declares it runs on; None
    when it declares none (then any version is possible)."""
    for folder in _parents(directory):
        lows = []
        found = False
        for line in _requirement_lines(folder):
            m = _TORCH_REQ_RE.match(line)
            if m is None or not re.match(r"^\s*torch\b(?![-_.\w])", line, re.I):
                continue
            found = True
            low = _lowest(m.group("spec"))
            if low is None:
                return None
            lows.append(low)
        if found:
            return min(lows)
    return None


def may_run_on_torch_before(directory: Path, version: Tuple[int, int]) -> bool:
    low = lowest_torch(directory)
    return low is None or low < version


# ------------------------------------------------------------------------------------------
# License header of a package's files
# ------------------------------------------------------------------------------------------

def _leading_comments(text: str) -> str:
    lines = []
    for line in text.splitlines(keepends=True):
        if line.startswith("#!") and not lines:
            continue
        if line.startswith("#"):
            lines.append(line if line.endswith("\n") else line + "\n")
        else:
            break
    return "".join(lines)


def license_header(package: Path) -> str:
    """The comment block every ``.py`` file of ``package`` starts with ('' if they differ)."""
    headers = set()
    try:
        files = sorted(package.glob("*.py"))[:50]
    except OSError:
        return ""
    for path in files:
        head = read_head(str(path), 4096).decode("utf-8", "replace")  # "" for what cannot be read
        headers.add(_leading_comments(head))
        if len(headers) > 1:
            return ""
    header = headers.pop() if len(headers) == 1 else ""
    return header if re.search(r"(?i)copyright|license|spdx", header) else ""
