"""Configuration: ``[tool.rocmport]`` in the nearest ``pyproject.toml`` (or ``rocmport.toml``).

Command-line flags override the file. Unknown keys are an error naming the key (exit 2).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - 3.9/3.10
    import tomli as tomllib  # type: ignore

from .prelude import PreludeOptions
from .source import read_regular


class ConfigError(Exception):
    """A configuration problem; the message names the file and the key."""


RULE_KEYS = {"select", "ignore", "extend-select", "extend-ignore", "per-file-ignores", "exclude",
             "extend-exclude", "prelude", "unsafe-fixes", "respect-gitignore", "force-exclude",
             "cache-dir", "entry-points", "cuda-graphs-on-rocm", "reason-comments", "scope"}
# The rules that turn inductor's CUDA graphs off on ROCm (or, ROC106, put them back by hand):
# silent where ``cuda-graphs-on-rocm = true`` says the project measured them working there.
CUDA_GRAPH_CODES = frozenset({"ROC101", "ROC102", "ROC103", "ROC104", "ROC105", "ROC106", "ROC201", "ROC202",
                              "ROC602"})
SCOPES = ("all", "source", "tests")
PRELUDE_KEYS = {"style": ("auto", "inline", "module"), "profile": ("safe", "tuned"),
                "inference-only": bool, "compile-guard": bool, "rng-patch": bool,
                "inductor-setup": bool, "module-name": str}


@dataclass(frozen=True)
class Settings:
    select: Optional[Tuple[str, ...]] = None  # None: every rule enabled by default
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    exclude: Optional[Tuple[str, ...]] = None  # None: the default excludes
    extend_exclude: Tuple[str, ...] = ()
    prelude: PreludeOptions = PreludeOptions()
    unsafe_fixes: bool = False
    respect_gitignore: bool = True
    force_exclude: bool = False
    cache_dir: Optional[str] = None
    # files (globs relative to the root) where a program starts: `fix` gives them the
    # process-wide ROCm set-up; nothing else ever gets it
    entry_points: Tuple[str, ...] = ()
    # `cuda-graphs-on-rocm = true`: the project keeps inductor's CUDA graphs on ROCm (it measured
    # them working on its stack): the CUDA-graph rules (CUDA_GRAPH_CODES) say nothing
    cuda_graphs_on_rocm: bool = False
    # `reason-comments = true`: `fix` puts a one-line comment above each statement it gates,
    # naming the rule and `rocmport rule CODE`
    reason_comments: bool = False
    root: str = "."  # directory of the configuration file (or the working directory)
    config_file: Optional[str] = None
    # which findings a run reports and fixes: "all", "source" (modules that are not tests) or
    # "tests" (test modules, as their code proves them: rocmport.analysis.testing), so the
    # source pull request and the tests pull request can be made apart
    scope: str = "all"
    # the evidence that the repository already runs its tests on ROCm (a CI workflow, a pytest
    # marker), found at load: its tests are then not ports (a fix leaves them alone)
    rocm_ci: Optional[str] = None

    def with_overrides(self, **changes) -> "Settings":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def is_entry_point(self, path: str) -> bool:
        if not self.entry_points or path in ("", "-"):
            return False
        rel = _relative(path, self.root)
        return any(_glob_match(rel, pattern) for pattern in self.entry_points)

    # -- rule selection --------------------------------------------------------------------
    def enabled_codes(self, path: Optional[str] = None) -> FrozenSet[str]:
        ignores = self.ignore + (self.file_ignores(path) if path else ())
        if self.cuda_graphs_on_rocm:
            ignores += tuple(sorted(CUDA_GRAPH_CODES))
        return _enabled_codes(self.select, self.extend_select, ignores)

    def file_ignores(self, path: str) -> Tuple[str, ...]:
        if not self.per_file_ignores:
            return ()
        rel = _relative(path, self.root)
        codes: List[str] = []
        for pattern, pattern_codes in self.per_file_ignores:
            if _glob_match(rel, pattern):
                codes.extend(pattern_codes)
        return tuple(codes)


def _relative(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    except ValueError:  # pragma: no cover - other drive on Windows
        rel = path
    return rel.replace(os.sep, "/")


def _glob_match(rel: str, pattern: str) -> bool:
    pattern = pattern.replace(os.sep, "/")
    if "/" not in pattern:
        return fnmatch.fnmatch(rel.rsplit("/", 1)[-1], pattern) or fnmatch.fnmatch(rel, pattern)
    return fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern.rstrip("/") + "/*")


def _matches(code: str, selector: str) -> bool:
    selector = selector.upper()
    return selector == "ALL" or code.startswith(selector)


@functools.lru_cache(maxsize=256)
def _enabled_codes(select, extend_select, ignore) -> FrozenSet[str]:
    from .registry import rule_infos

    rules = rule_infos()
    enabled = set()
    for code, rule in rules.items():
        if select is None:
            chosen = rule.DEFAULT_ENABLED
        else:
            # A rule that is off by default needs its full code, as ruff's preview rules do.
            chosen = any(_matches(code, s) for s in select) if rule.DEFAULT_ENABLED else code in {
                s.upper() for s in select}
        if not chosen:
            chosen = any((_matches(code, s) if rule.DEFAULT_ENABLED else code == s.upper())
                         for s in extend_select)
        if chosen and not any(_matches(code, s) for s in ignore):
            enabled.add(code)
    return frozenset(enabled)


def validate_selectors(selectors: Sequence[str], where: str) -> None:
    from .registry import rule_infos

    codes = rule_infos()
    for selector in selectors:
        s = selector.upper()
        if s == "ALL":
            continue
        if not s.startswith("ROC") or not any(code.startswith(s) for code in codes):
            raise ConfigError(f"{where}: unknown rule selector {selector!r}")


# ------------------------------------------------------------------------------------------
# Files
# ------------------------------------------------------------------------------------------

def find_config(start: Path) -> Optional[Tuple[Path, dict]]:
    """The nearest ``rocmport.toml`` or ``pyproject.toml`` with ``[tool.rocmport]``."""
    start = start.resolve()
    if start.is_file():
        start = start.parent
    for directory in (start, *start.parents):
        for name in ("rocmport.toml", ".rocmport.toml", "pyproject.toml"):
            candidate = directory / name
            if not candidate.is_file():
                continue
            data = _read_toml(candidate)
            if name == "pyproject.toml":
                table = _tool_table(data, candidate)
                if table is None:
                    continue
                return candidate, table
            table = _tool_table(data, candidate)
            return candidate, _must_be_table(data if table is None else table, "[tool.rocmport]", candidate)
    return None


def _must_be_table(value, what: str, path: Path) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: `{what.strip('[]')}` must be a table, not {type(value).__name__}")
    return value


def _tool_table(data: dict, path: Path) -> Optional[dict]:
    """``[tool.rocmport]`` of a TOML document (None when absent); a clear error for the wrong shape."""
    tool = data.get("tool")
    if tool is None:
        return None
    table = _must_be_table(tool, "tool", path).get("rocmport")
    return None if table is None else _must_be_table(table, "tool.rocmport", path)


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(read_regular(str(path)).decode("utf-8"))  # never a FIFO, bounded
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (byte 0x{exc.object[exc.start]:02x}"
                          f" at offset {exc.start})") from None
    except (RecursionError, ValueError) as exc:  # nesting too deep; an integer too long for str
        raise ConfigError(f"{path}: invalid TOML: {type(exc).__name__}: {str(exc).splitlines()[0]}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def load_settings(start: Path, config_file: Optional[Path] = None) -> Settings:
    if config_file is not None:
        data = _read_toml(config_file)
        table = _tool_table(data, config_file)
        if table is None:
            table = data if config_file.name != "pyproject.toml" else {}
        found: Optional[Tuple[Path, dict]] = (config_file, table)
    else:
        found = find_config(start)
    if found is None:
        root = Path.cwd()
        return Settings(root=str(root), rocm_ci=rocm_ci(str(root)))
    path, table = found
    settings = settings_from_table(table, path)
    return replace(settings, rocm_ci=rocm_ci(settings.root))


def _string_list(value, key: str, where: str) -> Tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return tuple(value)


def settings_from_table(table: dict, path: Path) -> Settings:
    where = str(path)
    unknown = sorted(set(table) - RULE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key `{unknown[0]}` in [tool.rocmport]"
                          f" (known keys: {', '.join(sorted(RULE_KEYS))})")
    kwargs: Dict[str, object] = {"root": str(path.parent), "config_file": where}
    for key in ("select", "ignore", "extend-select", "extend-ignore"):
        if key in table:
            values = _string_list(table[key], key, where)
            validate_selectors(values, f"{where}: `{key}`")
            kwargs[key.replace("-", "_")] = values
    if "extend_ignore" in kwargs:
        kwargs["ignore"] = tuple(kwargs.get("ignore", ())) + tuple(kwargs.pop("extend_ignore"))  # type: ignore
    for key in ("exclude", "extend-exclude", "entry-points"):
        if key in table:
            kwargs[key.replace("-", "_")] = _string_list(table[key], key, where)
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
        items = []
        for pattern, codes in pfi.items():
            codes = _string_list(codes, f"per-file-ignores.{pattern}", where)
            validate_selectors(codes, f"{where}: `per-file-ignores`")
            items.append((pattern, codes))
        kwargs["per_file_ignores"] = tuple(items)
    for key in ("unsafe-fixes", "respect-gitignore", "force-exclude", "cuda-graphs-on-rocm", "reason-comments"):
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{where}: `{key}` must be true or false")
            kwargs[key.replace("-", "_")] = table[key]
    if "scope" in table:
        if table["scope"] not in SCOPES:
            raise ConfigError(f"{where}: `scope` must be one of {', '.join(SCOPES)}")
        kwargs["scope"] = table["scope"]
    if "cache-dir" in table:
        if not isinstance(table["cache-dir"], str):
            raise ConfigError(f"{where}: `cache-dir` must be a string")
        kwargs["cache_dir"] = str((path.parent / table["cache-dir"]))
    if "prelude" in table:
        kwargs["prelude"] = prelude_options(table["prelude"], where)
    return Settings(**kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# The repository: does it already run its tests on ROCm?
# ------------------------------------------------------------------------------------------

_ROCM_CI_WORD = re.compile(r"(?i)\brocm\b|rocm[/_:.-]|\bmi[23]\d\d[a-z]?\b|\bgfx9\d\w*\b|amd-?gpu|\bhip\b")
_RUNS_TESTS = re.compile(r"(?i)\bpytest\b|-m\s+unittest\b|\brun_tests?\b|\bctest\b|\btests?\.sh\b|\btests?/\S"
                         r"|\bmake\s+test|\btox\b|\bnox\b")
# Where a CI job says it runs on ROCm: its runner, its container or image, its name.
_ROCM_RUNNER = re.compile(r"(?im)^[ \t-]*(?:runs-on|container|image|name)\s*:.*(?:rocm|\bmi[23]\d\d|gfx9\d|\bamd\b)")
_MARKER = re.compile(r"(?im)^\s*[\"']?(rocm|hip|amd(?:_gpu)?)\s*[:\"']")


@functools.lru_cache(maxsize=32)
def rocm_ci(root: str) -> Optional[str]:
    """Where the repository around ``root`` says it runs its tests on ROCm, or None: a CI job
    (of ``.github/workflows/*.yml``, ``.gitlab-ci.yml``) whose runner, container, image or name
    says ROCm (``rocm``, ``MI300``, ``gfx942``, ``amd``) and that runs tests (pytest, unittest,
    ``make test``, tox), or a pytest marker registered for ROCm (``markers = rocm: ...`` in
    pytest.ini, setup.cfg, tox.ini or pyproject.toml). A workflow that builds ROCm wheels in one
    job and tests on CPU in another is not. Looked for from ``root`` up to the git work tree's
    top."""
    directory = Path(root).resolve()
    for base in (directory, *directory.parents):
        candidates = sorted((base / ".github" / "workflows").glob("*.y*ml")) if (base / ".github").is_dir() else []
        candidates += [base / ".gitlab-ci.yml"]
        # a workflow named for ROCm first (amd-ci.yml, fbgemm_gpu_ci_rocm.yml)
        candidates.sort(key=lambda p: not _ROCM_CI_WORD.search(p.stem.replace("_", " ").replace("-", " ")))
        for workflow in candidates:
            text = _small_text(workflow)
            if text and any(_ROCM_RUNNER.search(job) and _RUNS_TESTS.search(job) for job in _jobs(text)):
                return f"{workflow.relative_to(base).as_posix()} runs tests on ROCm"
        for name in ("pytest.ini", "setup.cfg", "tox.ini", "pyproject.toml"):
            text = _small_text(base / name)
            if text and "markers" in text and _MARKER.search(text.split("markers", 1)[1][:4000]):
                return f"{name} registers a pytest marker for ROCm"
        if (base / ".git").exists():
            break
    return None


_JOB = re.compile(r"(?m)^  [\w.-]+:[ \t]*$")


def _jobs(text: str) -> List[str]:
    """The jobs of a CI workflow, each as its text (GitHub's ``jobs:`` map, two-space
    indented); the whole text when it has none (a GitLab file, an odd layout). A job that
    names ROCm and runs tests is a ROCm test job; a workflow that builds ROCm wheels in one
    job and runs CPU tests in another is not."""
    head, sep, body = text.partition("\njobs:")
    if not sep:
        return [text]
    starts = [m.start() for m in _JOB.finditer(body)]
    if not starts:
        return [text]
    return [body[a:b] for a, b in zip(starts, starts[1:] + [len(body)])]


def _small_text(path: Path) -> Optional[str]:
    try:
        if not path.is_file() or path.stat().st_size > 1_000_000:
            return None
        return read_regular(str(path)).decode("utf-8", "replace")
    except OSError:
        return None


def prelude_options(table, where: str, base: PreludeOptions = PreludeOptions()) -> PreludeOptions:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: `prelude` must be a table")
    changes = {}
    for key, value in table.items():
        if key not in PRELUDE_KEYS:
            raise ConfigError(f"{where}: unknown key `prelude.{key}` in [tool.rocmport]"
                              f" (known: {', '.join(sorted(PRELUDE_KEYS))})")
        kind = PRELUDE_KEYS[key]
        if isinstance(kind, tuple):
            if value not in kind:
                raise ConfigError(f"{where}: `prelude.{key}` must be one of {', '.join(kind)}")
        elif not isinstance(value, kind):
            raise ConfigError(f"{where}: `prelude.{key}` must be a {kind.__name__}")
        if key == "module-name" and not value.isidentifier():
            raise ConfigError(f"{where}: `prelude.module-name` must be a Python identifier")
        changes[key.replace("-", "_")] = value
    return replace(base, **changes)
