#!/usr/bin/env python3
"""Would a maintainer merge what ``rocmport fix`` writes? Measured on real repositories.

    python benchmarks/mergeable.py PATH... [--rocmport-root DIR] [--json OUT] [--keep]

Each PATH is a repository, or a directory inside one (for large repositories: the Python
package). The script never touches PATH: it works in a scratch copy (``git clone --local`` of
the repository's HEAD, or a copy plus ``git init`` for a directory that is not in a git
repository) and, from the repository root, for the part named by PATH:

1. ``rocmport lint`` (JSON): findings before.
2. ``rocmport fix`` (diff): ``git apply --check`` of that diff from the root (git's default
   ``-p1``, the way a user applies a patch, and ``-p0``); the files it names, names printed
   more than once, absolute names.
3. ``rocmport fix --write``, committed in the scratch copy: files changed, net lines added per
   changed file (max and mean), files created (and whether the summary names them);
   ``rocmport lint`` again: findings after; a second ``rocmport fix`` straight away (should
   change nothing).
4. The repository's own checks, on the changed files, before (HEAD) and after, run the way
   pre-commit runs them (explicit file names, ``--force-exclude``): ``ruff check`` with the
   repository's ruff configuration, counting only new violations (per file and code) and
   listing those that sit on lines the fix added; files that ``ruff format --check`` (or
   ``black --check``) passed before and fails after; ``isort --check-only`` where the
   repository sorts imports with isort/usort and has no ruff configuration.
5. Formatting peace: the repository's own fixers on the changed files (``ruff check --fix``
   and ``ruff format``, or ``isort`` and ``black``), then ``rocmport fix`` again: it should
   change nothing.
6. Nothing lost: after those fixers moved imports, ``rocmport fix --write`` with a setting that
   asks for more generated code (``--prelude-profile tuned`` by default, ``--more``): every
   import statement of every file must survive.

It prints a table (one row per PATH) and, with ``--json``, writes everything it saw, the
merge-blockers with file and line included. ``--rocmport-root DIR`` runs ``python -m
rocmport`` with ``PYTHONPATH=DIR`` (the default is the ``rocmport`` on PATH), so the same
script measures main today and a branch later. The tools (ruff, black, isort) are the ones
next to this Python, else on PATH.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

GIT_ID = ["-c", "user.name=mergeable", "-c", "user.email=mergeable@localhost", "-c", "commit.gpgsign=false"]
RUFF_CONFIGS = ("ruff.toml", ".ruff.toml")


# ---------------------------------------------------------------------------------------------
# Pure helpers (tested on their own in tests/test_mergeable.py)


def diff_file_headers(diff: str) -> List[Tuple[str, str]]:
    """The (old, new) names of every file section of a unified diff, in order."""
    pairs = []
    old = None
    for line in diff.splitlines():
        if line.startswith("--- ") and old is None:
            old = line[4:].split("\t")[0].strip()
        elif line.startswith("+++ ") and old is not None:
            pairs.append((old, line[4:].split("\t")[0].strip()))
            old = None
        else:
            old = None
    return pairs


def added_lines(diff: str) -> Dict[str, set]:
    """For a ``git diff`` (a/ b/ names): the line numbers, in the new file, of added lines."""
    result: Dict[str, set] = {}
    current = None
    row = 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            current = None if name == "/dev/null" else re.sub(r"^b/", "", name)
            if current is not None:
                result.setdefault(current, set())
        elif line.startswith("@@"):
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
            row = int(m.group(1)) if m else 0
        elif current is None or line.startswith("--- "):
            continue
        elif line.startswith("+"):
            result[current].add(row)
            row += 1
        elif line.startswith(" "):
            row += 1
    return result


def new_violations(before: Sequence[dict], after: Sequence[dict]) -> Dict[str, int]:
    """How many more violations of each code ``after`` has than ``before``, file by file
    (positions move when lines are added, so violations are matched by file and code)."""
    count_before = collections.Counter((v["filename"], v["code"]) for v in before)
    count_after = collections.Counter((v["filename"], v["code"]) for v in after)
    per_code: Dict[str, int] = collections.Counter()
    for (filename, code), n in count_after.items():
        extra = n - count_before.get((filename, code), 0)
        if extra > 0:
            per_code[code or "?"] += extra
    return dict(sorted(per_code.items()))


def import_statements(source: str) -> Optional[collections.Counter]:
    """Every import statement in ``source`` (any scope), normalised, with multiplicity; None
    when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: collections.Counter = collections.Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")] += 1
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                found[f"from {module} import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")] += 1
    return found


def lost_imports(before: str, after: str, original: Optional[str] = None) -> List[str]:
    """Import statements of ``before`` that ``after`` no longer has (a file that stopped
    parsing loses all of them); with ``original`` (the file before rocmport first wrote to it),
    only the user's own: imports rocmport generated may come and go."""
    old = import_statements(before)
    if old is None:
        return []
    new = import_statements(after) or collections.Counter()
    lost = old - new
    if original is not None:
        lost &= import_statements(original) or collections.Counter()
    return sorted(lost.elements())


def numstat(text: str) -> Dict[str, Tuple[int, int]]:
    """``git diff --numstat`` -> {path: (added, removed)} (binary files are left out)."""
    result = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            result[parts[2]] = (int(parts[0]), int(parts[1]))
    return result


# ---------------------------------------------------------------------------------------------
# Running things


def run(cmd: Sequence[str], cwd: Path, env: Optional[dict] = None, timeout: float = 3600,
        stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(cmd), cwd=str(cwd), env=env, capture_output=True, text=True,
                              errors="replace", timeout=timeout, input=stdin)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(list(cmd), 124, exc.stdout or "", f"timed out after {timeout} s")


def tool(name: str) -> Optional[str]:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def git(root: Path, *args: str, check: bool = True) -> str:
    proc = run(["git", *GIT_ID, *args], root)
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


@dataclass
class Rocmport:
    root: Optional[str]
    timeout: float

    def cmd(self) -> List[str]:
        if self.root:
            return [sys.executable, "-m", "rocmport"]
        exe = shutil.which("rocmport") or tool("rocmport")
        return [exe] if exe else [sys.executable, "-m", "rocmport"]

    def env(self) -> dict:
        env = dict(os.environ)
        if self.root:
            env["PYTHONPATH"] = os.pathsep.join([str(Path(self.root).resolve())]
                                                + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        return env

    def __call__(self, root: Path, *args: str) -> subprocess.CompletedProcess:
        return run([*self.cmd(), *args], root, env=self.env(), timeout=self.timeout)


# ---------------------------------------------------------------------------------------------
# Issue 29: the repository's own pre-commit formatters, ruff's defaults, imports that moved,
# gate lines per package (pure helpers first; tested in tests/test_mergeable.py)

# Formatter and linter hooks this script knows how to run the way pre-commit runs them, in
# check mode: hook id -> tool. Other hooks (flake8, yapf, mypy, ...) are listed as not run.
HOOK_TOOLS = {"black": "black", "isort": "isort", "usort": "usort", "ufmt": "ufmt", "ruff": "ruff-check",
              "ruff-check": "ruff-check", "ruff-format": "ruff-format"}


@dataclass
class Hook:
    id: str
    args: List[str] = field(default_factory=list)
    rev: str = ""
    additional_dependencies: List[str] = field(default_factory=list)


def precommit_hooks(text: str) -> List[Hook]:
    """The hooks of a ``.pre-commit-config.yaml``, in order (those of ``local`` repositories
    too); an unreadable file gives none."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML is in the project venv
        return []
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return []
    hooks = []
    for repo in data.get("repos", []) if isinstance(data, dict) else []:
        if not isinstance(repo, dict):
            continue
        for hook in repo.get("hooks", []) or []:
            if isinstance(hook, dict) and isinstance(hook.get("id"), str):
                hooks.append(Hook(hook["id"], [str(a) for a in hook.get("args", []) or []], str(repo.get("rev", "")),
                                  [str(d) for d in hook.get("additional_dependencies", []) or []]))
    return hooks


_IMPORT_KINDS = (ast.Import, ast.ImportFrom)


def _module_statements(source: str) -> Optional[List[Tuple[str, bool]]]:
    """(normalised text, is an import) of each module-level statement, the docstring and
    ``from __future__`` left out; imports inside ``try``/``if`` blocks at module level count as
    imports of the module."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    out = []
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            continue
        is_import = isinstance(stmt, _IMPORT_KINDS) or (
            isinstance(stmt, (ast.Try, ast.If)) and all(isinstance(s, _IMPORT_KINDS) for s in stmt.body))
        out.append((ast.dump(stmt, include_attributes=False), is_import))
    return out


def moved_imports(before: str, after: str) -> List[str]:
    """Module-level import statements of ``after`` that sit above a statement of the file
    (not an import) that every import of theirs sat below in ``before``: an import moved
    above a late-import section, a module-level ``pytest.skip`` or set-up code. For an import
    the fix added, the bound is the first non-import statement of ``before`` that some
    import of ``before`` follows (the start of a late-import section), and the statement
    only counts when it is still in the file. Also an import of ``before`` that now comes
    before another import it followed. Returns one line per import that moved."""
    old, new = _module_statements(before), _module_statements(after)
    if old is None or new is None:
        return []
    old_texts = [t for t, _ in old]
    kept = {t for t, imp in old if not imp} & {t for t, imp in new if not imp}
    # a non-import statement that some later import of the original follows: a late-import boundary
    boundaries = [t for i, (t, imp) in enumerate(old) if not imp and any(im for _, im in old[i + 1:])]
    moved = []
    old_imports = [t for t, imp in old if imp]
    for position, (text, imp) in enumerate(new):
        if not imp:
            continue
        above = {t for t, i in new[position + 1:] if not i} & kept  # statements now after it
        if text in old_texts:
            at = old_texts.index(text)
            was_below = {t for t, i in old[:at] if not i}
            if above & was_below:
                moved.append(_short(text))
        elif above & set(boundaries):
            moved.append(_short(text))
    # imports of the original that swapped order with each other
    order = [t for t, imp in new if imp and t in old_imports]
    expected = [t for t in old_imports if t in order]
    if order != expected and not moved:
        moved += [_short(t) for t, e in zip(order, expected) if t != e][:1]
    return moved


def _short(dumped: str) -> str:
    """A readable name for an ``ast.dump`` of an import statement."""
    names = re.findall(r"alias\(name='([^']+)'", dumped)
    module = re.search(r"module='([^']+)'", dumped)
    return (f"from {module.group(1)} import " if module else "import ") + ", ".join(names)


GATE_LINE = re.compile(r"""^\+\s*[A-Za-z_]\w*\s*(?::[^=]+)?=\s*(?:getattr\(\s*(?:getattr\()?[\w.]*(?:version)?\b.*["']hip["']"""
                       r"""|[\w.]*version\.hip\s+is\s+not\s+None|bool\([\w.]*version\.hip\))""")


def gate_lines(diff: str, root: Path) -> Dict[str, int]:
    """Lines a ``git diff`` adds that bind a ROCm test (``is_rocm = getattr(torch.version,
    "hip", None) is not None`` and its spellings), per package: the top-level package
    directory of the file (its first directory holding an ``__init__.py``, from the root),
    else the file's directory."""
    per: Dict[str, int] = collections.Counter()
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].strip()
            current = None if name == "/dev/null" else re.sub(r"^b/", "", name)
        elif current and line.startswith("+") and not line.startswith("+++") and GATE_LINE.match(line):
            per[_package(current, root)] += 1
    return dict(sorted(per.items()))


GATED = re.compile(r"(?i)(?<![\w.])(?:_rocmport_)?(?:is_)?(?:rocm|hip)\w*|version\.hip|[\"']hip[\"']")
_IMPORT_LINE = re.compile(r"^\+\s*(?:from\s+\S+\s+)?import\s")


def gated_expressions(diff: str) -> int:
    """Lines a ``git diff`` adds that test the ROCm gate (``"default" if is_rocm else ...``,
    ``not is_rocm``, ``torch.version.hip is None``, a mapping's ``if is_rocm`` line), not
    counting the lines that bind a gate or import one: how many places the fix gated."""
    count = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++") and not GATE_LINE.match(line) \
                and not _IMPORT_LINE.match(line) and GATED.search(line[1:].split("#", 1)[0]):
            count += 1
    return count


def _package(rel: str, root: Path) -> str:
    parts = Path(rel).parts[:-1]
    for i in range(1, len(parts) + 1):
        if (root.joinpath(*parts[:i]) / "__init__.py").is_file():
            return "/".join(parts[:i])
    return "/".join(parts) or "."


_FIXING_ARGS = {"--fix", "--exit-non-zero-on-fix", "--show-fixes", "--unsafe-fixes", "--no-fix", "-q", "--quiet",
                "--check", "--diff", "--check-only", "-c"}
TOOL_DIRS: List[str] = []  # --tool-dir: where tools not beside this Python are looked for first


def hook_tool(hook: Hook) -> Tuple[Optional[str], str]:
    """(executable, why not) for a known formatter or linter hook."""
    kind = HOOK_TOOLS.get(hook.id)
    if kind is None:
        return None, "not a formatter or linter this script runs"
    name = {"ruff-check": "ruff", "ruff-format": "ruff"}.get(kind, kind)
    for folder in TOOL_DIRS:
        candidate = Path(folder) / name
        if candidate.exists():
            return str(candidate), ""
    exe = tool(name)
    return (exe, "") if exe else (None, f"{name} is not installed here")


def hook_failures(root: Path, hook: Hook, exe: str, files: Sequence[str]) -> Tuple[object, Optional[str]]:
    """What ``hook`` says of ``files`` in check mode: the files it would change (formatters
    and import sorters), or for ``ruff`` / ``ruff-check`` the violations as (file, code)
    pairs; and an error, if it failed to run."""
    files = [f for f in files if f.endswith((".py", ".pyi"))]
    if not files:
        return [], None
    kind = HOOK_TOOLS[hook.id]
    args = [a for a in hook.args if a not in _FIXING_ARGS]
    if kind == "ruff-check":
        proc = run([exe, "check", "--no-cache", "--force-exclude", "--exit-zero", "--output-format", "json", *args,
                    *files], root)
        try:
            return [(os.path.relpath(v["filename"], root), v.get("code") or "syntax-error")
                    for v in json.loads(proc.stdout or "[]")], None
        except (ValueError, KeyError, TypeError):
            return [], (proc.stderr.strip() or proc.stdout.strip())[:300]
    if kind == "ruff-format":
        proc = run([exe, "format", "--no-cache", "--force-exclude", "--check", *args, *files], root)
        found = [line.split(":", 1)[1].strip() for line in proc.stdout.splitlines() if line.startswith("Would reformat:")]
    elif kind == "black":
        proc = run([exe, "--check", *args, *files], root)
        found = [line[len("would reformat "):].strip() for line in proc.stderr.splitlines()
                 if line.startswith("would reformat ")]
    elif kind == "isort":
        proc = run([exe, "--check-only", *args, *files], root)
        found = [m.group(1).strip() for m in re.finditer(r"ERROR: (.*?) Imports are incorrectly sorted", proc.stderr)]
    else:  # usort / ufmt: "Would sort <file>" / "Would format <file>"
        proc = run([exe, "check", *args, *files], root)
        found = [m.group(1).strip() for m in re.finditer(r"(?m)^Would (?:sort|format) (.+)$",
                                                         proc.stdout + proc.stderr)]
    ok = proc.returncode in (0, 1) or (kind in ("usort", "ufmt") and proc.returncode == 2 and found)
    error = None if ok else (proc.stderr.strip() or proc.stdout.strip())[:300]
    return sorted({os.path.relpath(root / f, root) for f in found}), error


def default_ruff(root: Path, files: Sequence[str]) -> Tuple[List[dict], Optional[str]]:
    """``ruff check --isolated`` (ruff's own default rules, no configuration) on ``files``."""
    files = [f for f in files if f.endswith((".py", ".pyi"))]
    ruff = tool("ruff")
    if not files or ruff is None:
        return [], None if files else None
    proc = run([ruff, "check", "--isolated", "--no-cache", "--exit-zero", "--output-format", "json", *files], root)
    try:
        data = json.loads(proc.stdout or "[]")
    except ValueError:
        return [], (proc.stderr.strip() or proc.stdout.strip())[:300]
    return [{"filename": os.path.relpath(v.get("filename", ""), root), "code": v.get("code") or "syntax-error",
             "row": v["location"]["row"], "message": v.get("message", "")} for v in data], None


# ---------------------------------------------------------------------------------------------
# The repository's own checks


@dataclass
class Checks:
    """Which of the repository's tools apply, read from its configuration."""

    ruff_lint: bool = False  # a ruff configuration exists
    formatter: Optional[str] = None  # "ruff", "black" or None
    isort: bool = False  # imports sorted by isort/usort, and ruff does not do it
    isort_profile_black: bool = False  # no [tool.isort]: usort approximated by isort's black profile

    def describe(self) -> str:
        parts = []
        if self.ruff_lint:
            parts.append("ruff")
        if self.isort:
            parts.append("isort" + (" (black profile, for usort)" if self.isort_profile_black else ""))
        if self.formatter:
            parts.append(f"{self.formatter}-format" if self.formatter == "ruff" else self.formatter)
        return " + ".join(parts) or "none"


def detect_checks(root: Path) -> Checks:
    checks = Checks()
    pyproject = {}
    try:
        pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    tools = pyproject.get("tool", {}) if isinstance(pyproject, dict) else {}
    precommit = ""
    for name in (".pre-commit-config.yaml", ".pre-commit-config.yml"):
        try:
            precommit += (root / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            pass
    # Hooks named in the pre-commit file, commented-out lines left out.
    hooks = " ".join(line.split("#", 1)[0] for line in precommit.splitlines())
    checks.ruff_lint = "ruff" in tools or any((root / n).is_file() for n in RUFF_CONFIGS)
    ruff_table = tools.get("ruff", {}) if isinstance(tools.get("ruff"), dict) else {}
    uses_black = "black" in tools or re.search(r"\bid:\s*(black|ufmt)\b", hooks) is not None
    uses_ruff_format = (re.search(r"\bid:\s*ruff-format", hooks) is not None or "format" in ruff_table
                        or re.search(r"ruff\s+format", hooks) is not None)
    if uses_ruff_format and not re.search(r"\bid:\s*(black|ufmt)\b", hooks):
        checks.formatter = "ruff"
    elif uses_black:
        checks.formatter = "black"
    elif uses_ruff_format:
        checks.formatter = "ruff"
    sorts_with_isort = ("isort" in tools or "usort" in tools
                        or re.search(r"\bid:\s*(isort|usort|ufmt)\b", hooks) is not None)
    ruff_sorts = checks.ruff_lint and _ruff_selects_isort(ruff_table)
    if sorts_with_isort and not ruff_sorts:
        checks.isort = True
        checks.isort_profile_black = "isort" not in tools
    return checks


def _ruff_selects_isort(table: dict) -> bool:
    lint = table.get("lint", {}) if isinstance(table.get("lint"), dict) else {}
    selected = []
    for t in (table, lint):
        for key in ("select", "extend-select"):
            value = t.get(key)
            if isinstance(value, list):
                selected.extend(str(v) for v in value)
    return any(s == "ALL" or s == "I" or s.startswith("I0") for s in selected)


def ruff_violations(root: Path, files: Sequence[str]) -> Tuple[List[dict], Optional[str]]:
    """``ruff check`` on ``files`` with the repository's configuration: (violations, error)."""
    if not files:
        return [], None
    ruff = tool("ruff")
    if ruff is None:
        return [], "ruff not found"
    proc = run([ruff, "check", "--no-cache", "--force-exclude", "--exit-zero", "--output-format", "json",
                *files], root)
    try:
        data = json.loads(proc.stdout or "[]")
    except ValueError:
        return [], (proc.stderr.strip() or proc.stdout.strip())[:500]
    out = []
    for v in data:
        filename = os.path.relpath(v.get("filename", ""), root)
        out.append({"filename": filename, "code": v.get("code") or "syntax-error", "row": v["location"]["row"],
                    "message": v.get("message", "")})
    return out, (proc.stderr.strip()[:500] if proc.returncode not in (0, 1) else None)


def unformatted(root: Path, checks: Checks, files: Sequence[str]) -> Tuple[List[str], Optional[str]]:
    """The files among ``files`` that the repository's formatter would change: (files, error)."""
    files = [f for f in files if f.endswith((".py", ".pyi"))]
    if not files or not checks.formatter:
        return [], None
    if checks.formatter == "ruff":
        exe = tool("ruff")
        if exe is None:
            return [], "ruff not found"
        proc = run([exe, "format", "--no-cache", "--force-exclude", "--check", "--output-format", "json", *files],
                   root)
        try:
            found = sorted({v["filename"] for v in json.loads(proc.stdout)})
        except (ValueError, KeyError, TypeError):  # a ruff without --output-format for format
            proc = run([exe, "format", "--no-cache", "--force-exclude", "--check", *files], root)
            found = [line.split(":", 1)[1].strip() for line in proc.stdout.splitlines()
                     if line.startswith("Would reformat:")]
    else:
        exe = tool("black")
        if exe is None:
            return [], "black not found"
        proc = run([exe, "--check", *files], root)
        found = [line[len("would reformat "):].strip() for line in proc.stderr.splitlines()
                 if line.startswith("would reformat ")]
    error = None
    if proc.returncode not in (0, 1):
        error = (proc.stderr.strip() or proc.stdout.strip())[:500]
    return sorted(os.path.relpath(root / f, root) for f in found), error


def unsorted(root: Path, checks: Checks, files: Sequence[str]) -> Tuple[List[str], Optional[str]]:
    """The files among ``files`` whose imports isort would re-sort (repositories that sort
    imports with isort/usort rather than ruff)."""
    files = [f for f in files if f.endswith((".py", ".pyi"))]
    if not files or not checks.isort:
        return [], None
    exe = tool("isort")
    if exe is None:
        return [], "isort not found"
    args = [exe, "--check-only", "--settings-path", str(root)]
    if checks.isort_profile_black:
        args += ["--profile", "black"]
    proc = run([*args, *files], root)
    found = []
    for line in proc.stderr.splitlines():
        m = re.match(r"ERROR: (.*) Imports are incorrectly sorted", line)
        if m:
            found.append(os.path.relpath(Path(m.group(1).strip()), root) if os.path.isabs(m.group(1).strip())
                         else m.group(1).strip())
    error = None if proc.returncode in (0, 1) else (proc.stderr.strip()[:500])
    return sorted(found), error


def apply_own_fixers(root: Path, checks: Checks, files: Sequence[str]) -> List[str]:
    """What the repository's pre-commit would do to ``files``: ruff's fixes (isort included) and
    ruff format, or isort and black. Returns the tools run."""
    files = [f for f in files if f.endswith((".py", ".pyi")) and (root / f).exists()]
    ran = []
    if not files:
        return ran
    if checks.ruff_lint and tool("ruff"):
        run([tool("ruff"), "check", "--no-cache", "--force-exclude", "--fix", "--exit-zero", *files], root)
        ran.append("ruff check --fix")
    if checks.isort and tool("isort"):
        args = [tool("isort"), "--settings-path", str(root)] + (["--profile", "black"] if checks.isort_profile_black
                                                               else [])
        run([*args, *files], root)
        ran.append("isort")
    if checks.formatter == "ruff" and tool("ruff"):
        run([tool("ruff"), "format", "--no-cache", "--force-exclude", *files], root)
        ran.append("ruff format")
    elif checks.formatter == "black" and tool("black"):
        run([tool("black"), "--quiet", *files], root)
        ran.append("black")
    return ran


# ---------------------------------------------------------------------------------------------
# One repository


@dataclass
class Result:
    path: str
    repo_root: str = ""
    target: str = "."
    commit: str = ""
    checks: str = ""
    seconds: float = 0.0
    error: Optional[str] = None
    findings_before: int = 0
    findings_before_by_code: Dict[str, int] = field(default_factory=dict)
    findings_after: int = 0
    findings_after_by_code: Dict[str, int] = field(default_factory=dict)
    fix_exit: Optional[int] = None
    fix_summary: str = ""
    diff_bytes: int = 0
    diff_files: List[str] = field(default_factory=list)
    diff_repeated_files: List[str] = field(default_factory=list)
    diff_absolute_paths: List[str] = field(default_factory=list)
    git_apply_check: Optional[bool] = None
    git_apply_error: str = ""
    git_apply_check_p0: Optional[bool] = None
    git_apply_p0_error: str = ""
    write_exit: Optional[int] = None
    write_summary: str = ""
    files_changed: List[str] = field(default_factory=list)
    files_created: List[str] = field(default_factory=list)
    created_named_in_summary: Dict[str, bool] = field(default_factory=dict)
    files_deleted: List[str] = field(default_factory=list)
    net_lines: Dict[str, int] = field(default_factory=dict)  # changed (not created) files
    lines_added: int = 0
    lines_removed: int = 0
    created_lines: Dict[str, int] = field(default_factory=dict)
    net_lines_max: int = 0
    net_lines_mean: float = 0.0
    refix_after_write_clean: Optional[bool] = None
    new_ruff_violations: Dict[str, int] = field(default_factory=dict)
    new_ruff_violations_on_added_lines: List[str] = field(default_factory=list)
    ruff_error: Optional[str] = None
    format_clean_broken: List[str] = field(default_factory=list)
    format_diff: Dict[str, str] = field(default_factory=dict)
    format_error: Optional[str] = None
    isort_clean_broken: List[str] = field(default_factory=list)
    isort_error: Optional[str] = None
    own_fixers: List[str] = field(default_factory=list)
    refix_after_fixers_clean: Optional[bool] = None
    refix_after_fixers_files: List[str] = field(default_factory=list)
    refix_after_fixers_diff: str = ""
    more_setting: str = ""
    more_exit: Optional[int] = None
    more_files_changed: List[str] = field(default_factory=list)
    lost_imports: List[str] = field(default_factory=list)
    broken_after_more: List[str] = field(default_factory=list)
    broken_after_write: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    # issue 29
    hooks_run: List[str] = field(default_factory=list)  # "id (tool version)"
    hooks_not_run: List[str] = field(default_factory=list)  # "id (why)"
    hooks_broken: Dict[str, List[str]] = field(default_factory=dict)  # hook id -> files clean before, not after
    hooks_new_violations: Dict[str, Dict[str, int]] = field(default_factory=dict)  # ruff hooks: code -> count
    hooks_error: List[str] = field(default_factory=list)
    ruff_default_new: Dict[str, int] = field(default_factory=dict)
    ruff_default_new_on_added_lines: List[str] = field(default_factory=list)
    imports_moved: List[str] = field(default_factory=list)
    gate_lines_per_package: Dict[str, int] = field(default_factory=dict)
    gated_expressions: int = 0  # added lines that test the gate: the places the fix gated
    fixes_applied: int = 0  # findings `fix --write` fixed: the decisions it gated


def lint_findings(rp: Rocmport, root: Path, targets: Sequence[str]) -> Tuple[List[Tuple[str, str]], Optional[str]]:
    """``rocmport lint`` on ``targets``: ([(file, code)], error)."""
    proc = rp(root, "lint", "--no-cache", "--output-format", "json", *targets)
    try:
        if proc.returncode not in (0, 1) or not proc.stdout.strip():
            raise ValueError
        data = json.loads(proc.stdout)
    except ValueError:
        return [], f"lint exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[:500]}"
    return [(os.path.normpath(f.get("filename", "")), f.get("code", "?")) for f in data], None


def by_code(findings: Iterable[Tuple[str, str]]) -> Dict[str, int]:
    return dict(sorted(collections.Counter(code for _, code in findings).items()))


def changed_since(root: Path, base: str, head: str = "HEAD") -> Tuple[List[str], List[str], List[str]]:
    """(modified, added, deleted) files between two commits."""
    modified, added, deleted = [], [], []
    for line in git(root, "diff", "--name-status", "--no-renames", base, head).splitlines():
        status, _, name = line.partition("\t")
        {"A": added, "D": deleted}.get(status[:1], modified).append(name)
    return modified, added, deleted


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "--no-verify", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def unpin_ruff(root: Path) -> List[str]:
    """Comment out ``required-version`` in the root's ruff configuration; the files changed."""
    changed = []
    for name in ("pyproject.toml", *RUFF_CONFIGS):
        path = root / name
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        new = re.sub(r"(?m)^(\s*required-version\s*=)", r"# \1", text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(name)
    return changed


def scratch_copy(path: Path, into: Path) -> Tuple[Path, str]:
    """A git work tree at ``into`` holding ``path``'s repository (HEAD) or ``path`` itself;
    returns (root, PATH relative to that root)."""
    top = run(["git", "rev-parse", "--show-toplevel"], path if path.is_dir() else path.parent)
    if top.returncode == 0:
        repo = Path(top.stdout.strip())
        rel = os.path.relpath(path, repo)
        proc = run(["git", "clone", "--quiet", "--local", "--no-hardlinks", str(repo), str(into)], into.parent)
        if proc.returncode != 0:
            raise RuntimeError(f"git clone failed: {proc.stderr.strip()[:500]}")
        return into, rel.replace(os.sep, "/")
    shutil.copytree(path, into, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    git(into, "init", "-q")
    commit_all(into, "scratch copy")
    return into, "."


def python_files(files: Iterable[str]) -> List[str]:
    return [f for f in files if f.endswith((".py", ".pyi"))]


def parses(path: Path) -> bool:
    try:
        ast.parse(path.read_bytes())
        return True
    except (SyntaxError, ValueError, OSError):
        return False


def measure(path: Path, rp: Rocmport, scratch: Path, more: Sequence[str], keep: bool) -> Result:
    start = time.perf_counter()
    result = Result(path=str(path))
    try:
        root, target = scratch_copy(path, scratch / "repo")
        _measure(root, target, rp, result, more, scratch)
    except RuntimeError as exc:
        result.error = str(exc)
    result.seconds = round(time.perf_counter() - start, 1)
    if keep:
        result.repo_root = str(scratch / "repo")
    return result


def _measure(root: Path, target: str, rp: Rocmport, r: Result, more: Sequence[str], scratch: Path) -> None:
    r.target = target
    r.commit = git(root, "rev-parse", "HEAD").strip()
    base = r.commit
    checks = detect_checks(root)
    r.checks = checks.describe()
    pinned = unpin_ruff(root)
    if pinned:
        # The repository asks for another ruff than the one installed, and ruff refuses to run:
        # the scratch copy's pin is commented out (and committed) so its configuration is used.
        r.notes.append(f"ruff's required-version commented out in {', '.join(pinned)}")
        base = commit_all(root, "scratch: run the installed ruff")

    # 1. Findings before.
    before_findings, error = lint_findings(rp, root, [target])
    if error:
        raise RuntimeError(error)
    r.findings_before, r.findings_before_by_code = len(before_findings), by_code(before_findings)

    # 2. The diff, as a patch.
    proc = rp(root, "fix", "--no-cache", target)
    r.fix_exit = proc.returncode
    r.fix_summary = proc.stderr.strip()[-1000:]
    diff = proc.stdout
    r.diff_bytes = len(diff.encode())
    headers = diff_file_headers(diff)
    names = [new if new != "/dev/null" else old for old, new in headers]
    r.diff_files = names
    r.diff_repeated_files = sorted(n for n, c in collections.Counter(names).items() if c > 1)
    r.diff_absolute_paths = sorted({n for pair in headers for n in pair if n != "/dev/null" and os.path.isabs(n)})
    if diff.strip():
        patch = scratch / "fix.diff"
        patch.write_text(diff, encoding="utf-8")
        p1 = run(["git", "apply", "--check", str(patch)], root)
        r.git_apply_check, r.git_apply_error = p1.returncode == 0, p1.stderr.strip()[:1000]
        p0 = run(["git", "apply", "--check", "-p0", str(patch)], root)
        r.git_apply_check_p0, r.git_apply_p0_error = p0.returncode == 0, p0.stderr.strip()[:1000]

    # 3. fix --write.
    proc = rp(root, "fix", "--no-cache", "--write", target)
    r.write_exit = proc.returncode
    r.write_summary = (proc.stderr.strip().splitlines() or [""])[-1][:1000]
    write_output = proc.stdout + proc.stderr
    fixed = commit_all(root, "rocmport fix --write")
    modified, added, deleted = changed_since(root, base, fixed)
    r.files_changed, r.files_created, r.files_deleted = modified, added, deleted
    r.created_named_in_summary = {f: (f in write_output or Path(f).name in write_output) for f in added}
    stats = numstat(git(root, "diff", "--numstat", "--no-renames", base, fixed))
    r.net_lines = {f: stats[f][0] - stats[f][1] for f in modified if f in stats}
    r.created_lines = {f: stats[f][0] for f in added if f in stats}
    r.lines_added = sum(a for a, _ in stats.values())
    r.lines_removed = sum(d for _, d in stats.values())
    if r.net_lines:
        r.net_lines_max = max(r.net_lines.values())
        r.net_lines_mean = round(sum(r.net_lines.values()) / len(r.net_lines), 1)
    r.broken_after_write = [f for f in python_files(modified + added) if not parses(root / f)]
    # From here on rocmport runs on the changed files only (the others are as they were: their
    # findings are those of the first lint), which keeps large repositories affordable.
    touched = python_files(modified + added)
    after_findings, error = lint_findings(rp, root, touched) if touched else ([], None)
    if error:
        r.error = error
    after_findings += [f for f in before_findings if f[0] not in set(touched)]
    r.findings_after, r.findings_after_by_code = len(after_findings), by_code(after_findings)
    r.refix_after_write_clean = not touched or not rp(root, "fix", "--no-cache", *touched).stdout.strip()

    # 4. The repository's own checks, before and after, on the changed Python files.
    files_after = python_files(modified + added)
    files_before = python_files(modified)
    after_violations, r.ruff_error = ruff_violations(root, files_after) if checks.ruff_lint else ([], None)
    after_unformatted, r.format_error = unformatted(root, checks, files_after)
    after_unsorted, r.isort_error = unsorted(root, checks, files_after)
    for f in after_unformatted[:5]:  # what the formatter would change, for the first few files
        if checks.formatter == "ruff":
            out = run([tool("ruff"), "format", "--no-cache", "--diff", f], root).stdout
        else:
            out = run([tool("black"), "--diff", "--quiet", f], root).stdout
        r.format_diff[f] = out[:4000]
    hooks = []
    for name in (".pre-commit-config.yaml", ".pre-commit-config.yml"):
        try:
            hooks += precommit_hooks((root / name).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            pass
    runnable = []
    for hook in hooks:
        exe, why = hook_tool(hook)
        if exe is None:
            r.hooks_not_run.append(f"{hook.id} ({why})")
            continue
        version = run([exe, "--version"], root).stdout.strip().splitlines()
        r.hooks_run.append(f"{hook.id} ({(version or ['?'])[0]}; pinned {hook.rev or '-'})")
        runnable.append((hook, exe))
    hooks_after = {}
    for hook, exe in runnable:
        hooks_after[hook.id], error = hook_failures(root, hook, exe, files_after)
        if error:
            r.hooks_error.append(f"{hook.id}: {error}")
    default_after, _ = default_ruff(root, files_after)
    if files_before:
        git(root, "checkout", base, "--", *files_before)
    hooks_before = {}
    for hook, exe in runnable:
        hooks_before[hook.id], _ = hook_failures(root, hook, exe, files_before)
    default_before, _ = default_ruff(root, files_before)
    r.imports_moved = [f"{f}: {imp}" for f in files_before
                       for imp in moved_imports((root / f).read_text(encoding="utf-8", errors="replace"),
                                                git(root, "show", f"{fixed}:{f}"))]
    before_violations, error = ruff_violations(root, files_before) if checks.ruff_lint else ([], None)
    r.ruff_error = r.ruff_error or error
    before_unformatted, error = unformatted(root, checks, files_before)
    r.format_error = r.format_error or error
    before_unsorted, error = unsorted(root, checks, files_before)
    r.isort_error = r.isort_error or error
    if files_before:
        git(root, "checkout", fixed, "--", *files_before)
    r.new_ruff_violations = new_violations(before_violations, after_violations)
    added_rows = added_lines(git(root, "diff", "--no-renames", "-U0", base, fixed))
    before_keys = collections.Counter((v["filename"], v["code"]) for v in before_violations)
    after_keys = collections.Counter((v["filename"], v["code"]) for v in after_violations)
    r.new_ruff_violations_on_added_lines = [
        f"{v['filename']}:{v['row']}: {v['code']} {v['message']}"
        for v in after_violations
        if v["row"] in added_rows.get(v["filename"], ())
        and after_keys[(v["filename"], v["code"])] > before_keys.get((v["filename"], v["code"]), 0)
    ]
    r.format_clean_broken = sorted(set(after_unformatted) - set(before_unformatted))
    r.format_clean_broken = [f for f in r.format_clean_broken if f in files_after]
    r.format_diff = {f: d for f, d in r.format_diff.items() if f in r.format_clean_broken}
    r.isort_clean_broken = sorted(set(after_unsorted) - set(before_unsorted))
    for hook, _exe in runnable:
        after, before = hooks_after.get(hook.id, []), hooks_before.get(hook.id, [])
        if HOOK_TOOLS[hook.id] == "ruff-check":
            pairs = lambda found: [{"filename": f, "code": c} for f, c in found]  # noqa: E731
            r.hooks_new_violations[hook.id] = new_violations(pairs(before), pairs(after))
        else:
            r.hooks_broken[hook.id] = sorted(set(after) - set(before))
    r.ruff_default_new = new_violations(default_before, default_after)
    default_before_keys = collections.Counter((v["filename"], v["code"]) for v in default_before)
    default_after_keys = collections.Counter((v["filename"], v["code"]) for v in default_after)
    r.ruff_default_new_on_added_lines = [
        f"{v['filename']}:{v['row']}: {v['code']} {v['message']}"
        for v in default_after
        if v["row"] in added_rows.get(v["filename"], ())
        and default_after_keys[(v["filename"], v["code"])] > default_before_keys.get((v["filename"], v["code"]), 0)
    ]
    r.gate_lines_per_package = gate_lines(git(root, "diff", "--no-renames", "-U0", base, fixed), root)
    r.gated_expressions = gated_expressions(git(root, "diff", "--no-renames", "-U0", base, fixed))
    found = re.search(r"Fixed (\d+) finding", r.write_summary or "")
    r.fixes_applied = int(found.group(1)) if found else 0

    # 5. The repository's fixers, then rocmport fix again.
    r.own_fixers = apply_own_fixers(root, checks, files_after)
    formatted = commit_all(root, "own fixers")
    proc = rp(root, "fix", "--no-cache", *touched) if touched else None
    r.refix_after_fixers_clean = proc is None or not proc.stdout.strip()
    if proc is None:
        return
    r.refix_after_fixers_files = [n if n != "/dev/null" else o for o, n in diff_file_headers(proc.stdout)]
    r.refix_after_fixers_diff = proc.stdout[:6000]

    # 6. A later fix that needs more generated code: every import survives.
    r.more_setting = " ".join(more)
    proc = rp(root, "fix", "--no-cache", "--write", *more, *touched)
    r.more_exit = proc.returncode
    later = commit_all(root, "rocmport fix --write " + r.more_setting)
    modified2, added2, _ = changed_since(root, formatted, later)
    r.more_files_changed = modified2 + added2
    for f in python_files(modified2):
        if f in added:  # a file rocmport created holds no import of the user's
            continue
        before_text = git(root, "show", f"{formatted}:{f}")
        after_text = git(root, "show", f"{later}:{f}")
        original = git(root, "show", f"{base}:{f}", check=False)
        r.lost_imports += [f"{f}: {imp}" for imp in lost_imports(before_text, after_text, original)]
        if not parses(root / f):
            r.broken_after_more.append(f)


# ---------------------------------------------------------------------------------------------
# Output


def _yes(value: Optional[bool]) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def table(results: Sequence[Result]) -> str:
    head = ["repository (target)", "checks", "files changed", "created (named)", "net +lines/file max/mean",
            "git apply -p1/-p0", "new lint violations", "fmt-clean files broken", "2nd fix clean (direct/after fmt)",
            "imports lost", "findings before→after"]
    rows = []
    for r in results:
        where = f"{_repo_name(r)} ({r.target})"
        if r.error and not r.diff_files and not r.files_changed:
            rows.append([where, r.checks or "-", "error: " + (r.error or "")[:60]] + [""] * (len(head) - 3))
            continue
        created = ", ".join(f"{Path(f).name} ({'yes' if r.created_named_in_summary.get(f) else 'no'})"
                            for f in r.files_created) or "0"
        violations = sum(r.new_ruff_violations.values()) + len(r.isort_clean_broken)
        codes = ", ".join(f"{c}×{n}" for c, n in r.new_ruff_violations.items())
        if r.isort_clean_broken:
            codes = ", ".join(filter(None, [codes, f"isort×{len(r.isort_clean_broken)}"]))
        lint = f"{violations}" + (f" ({codes})" if codes else "") + (" [ruff error]" if r.ruff_error else "")
        rows.append([
            where, r.checks, str(len(r.files_changed) + len(r.files_created)), created,
            f"{r.net_lines_max} / {r.net_lines_mean}" if r.net_lines else "-",
            f"{_yes(r.git_apply_check)} / {_yes(r.git_apply_check_p0)}",
            lint,
            f"{len(r.format_clean_broken)}" + (" [fmt error]" if r.format_error else ""),
            f"{_yes(r.refix_after_write_clean)} / {_yes(r.refix_after_fixers_clean)}",
            (str(len(r.lost_imports)) if r.more_exit in (0, 1)
             else "-" if r.more_exit is None else f"- (exit {r.more_exit})"),
            f"{r.findings_before} → {r.findings_after}",
        ])
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def table29(results: Sequence[Result]) -> str:
    """The issue-29 measures: the repository's own pre-commit hooks, ruff's default rules on the
    lines the fix added, imports that moved, gate lines per package."""
    head = ["repository (target)", "pre-commit hooks run (not run)", "hook-clean files broken / new hook violations",
            "ruff defaults: new on added lines", "imports moved", "gate lines per package (max, packages)",
            "fixes / gated lines", "lines +/-"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in results:
        where = f"{_repo_name(r)} ({r.target})"
        ran = ", ".join(h.split(" (")[0] for h in r.hooks_run) or "none"
        not_run = [h for h in r.hooks_not_run if "not installed" in h]
        if not_run:
            ran += " (" + ", ".join(h.split(" (")[0] + ": not installed" for h in not_run) + ")"
        broken = sum(len(v) for v in r.hooks_broken.values())
        violations = sum(sum(v.values()) for v in r.hooks_new_violations.values())
        codes = ", ".join(f"{c}×{n}" for v in r.hooks_new_violations.values() for c, n in v.items())
        gates = r.gate_lines_per_package
        gate_text = f"{max(gates.values())} ({len(gates)})" if gates else "0"
        lines.append("| " + " | ".join([
            where, ran, f"{broken} / {violations}" + (f" ({codes})" if codes else "")
            + (" [hook error]" if r.hooks_error else ""),
            str(len(r.ruff_default_new_on_added_lines)), str(len(r.imports_moved)), gate_text,
            f"{r.fixes_applied} / {r.gated_expressions}", f"+{r.lines_added} / -{r.lines_removed}"]) + " |")
    return "\n".join(lines)


def _repo_name(r: Result) -> str:
    path = Path(r.path)
    if r.target not in (".", ""):
        for _ in Path(r.target).parts:
            path = path.parent
    return path.name


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a repository, or a directory inside one")
    parser.add_argument("--rocmport-root", metavar="DIR",
                        help="run `python -m rocmport` with PYTHONPATH=DIR (default: rocmport on PATH)")
    parser.add_argument("--json", metavar="OUT", help="write the raw results here")
    parser.add_argument("--more", default="--prelude-profile tuned",
                        help="options of the later fix that asks for more generated code (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per rocmport run (default: 3600)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies and print where they are")
    parser.add_argument("--tool-dir", action="append", default=[], metavar="DIR",
                        help="a folder of tools (ufmt, usort, black, ...) looked in first for pre-commit hooks")
    args = parser.parse_args(argv)
    if threading.current_thread() is threading.main_thread():  # a kill still removes the scratch copy
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rp = Rocmport(args.rocmport_root, args.timeout)
    TOOL_DIRS[:] = args.tool_dir
    results = []
    for raw in args.paths:
        path = Path(raw).resolve()
        if not path.exists():
            results.append(Result(path=str(path), error="no such file or directory"))
            continue
        scratch = Path(tempfile.mkdtemp(prefix="mergeable-"))
        print(f"{path}: measuring in {scratch} ...", file=sys.stderr, flush=True)
        try:
            results.append(measure(path, rp, scratch, args.more.split(), args.keep))
        finally:
            if not args.keep:
                shutil.rmtree(scratch, ignore_errors=True)
        r = results[-1]
        print(f"{path}: {r.seconds} s" + (f" (error: {r.error})" if r.error else ""), file=sys.stderr, flush=True)
        if args.json:  # after each repository, so a long run can be read as it goes
            Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n", encoding="utf-8")
    print(table(results))
    print()
    print(table29(results))
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
