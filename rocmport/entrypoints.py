"""Where a program starts, for ``rocmport setup``: the files that get the process-wide ROCm
set-up (a ``__main__`` script, a console-script target) and the shell form of it for launch
scripts and Dockerfiles.

Set-up is process-wide: inductor's environment defaults, Dynamo's recompile limit, the RNG
patch on old torch, the optional compile guard. A library module that did it on import
would change every program and every test that imports it, so rocmport puts it only where
the user says a program starts (``rocmport setup PATH`` or ``entry-points`` in the
configuration), never as a side effect of a fix.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from .house import load_toml, table
from .prelude import PreludeOptions, settings_for
from .source import read_head

_MAIN_RE = re.compile(rb"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.M)


_SCRIPT_SPEC = re.compile(r"""["']?\s*[\w.-]+\s*=\s*(?P<target>[A-Za-z_][\w.]*:[A-Za-z_][\w.]*)""")


def console_scripts(root: Path) -> List[str]:
    """``module:function`` targets of the root's console scripts: ``[project.scripts]`` and
    ``[project.gui-scripts]`` in pyproject.toml, ``console_scripts`` in setup.cfg's
    ``[options.entry_points]`` or in setup.py."""
    data = load_toml(root / "pyproject.toml") if (root / "pyproject.toml").is_file() else {}
    targets = [v for key in ("scripts", "gui-scripts") for v in table(data, "project", key).values()
               if isinstance(v, str)]
    for name in ("setup.cfg", "setup.py"):
        text = read_head(str(root / name), 1 << 20).decode("utf-8", "replace")
        at = text.find("console_scripts")
        if at < 0:
            continue
        section = text[at:at + 4000]
        if name == "setup.cfg":
            section = re.split(r"\n\S", section.split("\n", 1)[-1], maxsplit=1)[0]
        else:
            section = section.split("]", 1)[0]
        targets += [m.group("target") for m in _SCRIPT_SPEC.finditer(section)]
    return list(dict.fromkeys(t.split("[", 1)[0].strip() for t in targets))


def script_names(root: Path) -> List[str]:
    """The command names of ``[project.scripts]`` (``tune`` for ``tune = "pkg._cli:main"``)."""
    data = load_toml(root / "pyproject.toml") if (root / "pyproject.toml").is_file() else {}
    return [k for k in table(data, "project", "scripts") if isinstance(k, str) and re.fullmatch(r"[\w.-]+", k)]


def resolve(spec: str, root: Path) -> Optional[Path]:
    """A path, or a ``module:function`` console-script target, as a file under ``root``."""
    if ":" in spec and not os.path.exists(spec):
        module = spec.split(":", 1)[0].strip()
        parts = module.split(".")
        for base in (root, root / "src"):
            for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__main__.py"),
                              base.joinpath(*parts, "__init__.py")):
                if candidate.is_file():
                    return candidate
        return None
    path = Path(spec)
    return path if path.is_file() else None


@dataclass
class Candidate:
    """A file that may start a program, with the evidence that it does."""

    path: str  # relative to the root, forward slashes
    score: int = 0
    evidence: List[str] = field(default_factory=list)
    target: Optional[str] = None  # a console-script target naming it
    unrelated: bool = False  # imports neither torch nor the project: after every other candidate

    def add(self, points: int, why: str) -> None:
        if why not in self.evidence:
            self.score += points
            self.evidence.append(why)


# `python x.py`, `python -m pkg.mod`, `torchrun ... x.py`, `accelerate launch x.py`, `deepspeed x.py`
_LAUNCH = re.compile(
    r"(?:\bpython[0-9.]*|\btorchrun|\baccelerate\s+launch|\bdeepspeed|\buv\s+run|\bsrun|\bmpirun|"
    r"torch\.distributed\.(?:run|launch))\b(?P<args>[^\n;|&`]*)")
_ARG_SCRIPT = re.compile(r"(?:^|\s)(?P<path>[\w./${}-]+\.py)\b")
_ARG_MODULE = re.compile(r"(?:^|\s)-m\s+(?P<module>[A-Za-z_][\w.]*)")
_CLI_LIBS = re.compile(rb"\b(?:argparse|ArgumentParser|click|typer|fire\.Fire|hydra|HfArgumentParser|jsonargparse|"
                       rb"tyro|absl\.app|simple_parsing)\b")
_LAUNCH_NAMES = re.compile(r"(?i)(?:\.(?:sh|bash|zsh|slurm|sbatch|ya?ml|toml|cfg|ini|mk)$|^(?:makefile|dockerfile.*|"
                           r"containerfile|procfile|justfile|.*\.dockerfile)$)")
_DOC_NAMES = re.compile(r"(?i)\.(?:md|rst|txt)$")
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "site-packages", "__pycache__", ".tox", ".mypy_cache",
              ".rocmport_cache", "build", "dist"}
_TORCH_IMPORT = re.compile(rb"(?m)^\s*(?:import torch\b|from torch\b)")
_TEST_PATH = re.compile(r"(?:^|/)(?:tests?|testing)/|(?:^|/)(?:test_[^/]*|[^/]*_test|conftest)\.py$")
_MAX_TEXT_FILES = 2000
SHOWN = 10


def _text_files(root: Path):
    """(relative path, text) of launch scripts, CI files, Dockerfiles, Makefiles and docs."""
    count = 0
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and (not d.startswith(".") or d == ".github"))
        for name in sorted(names):
            kind = "launch" if _LAUNCH_NAMES.search(name) else "doc" if _DOC_NAMES.search(name) else None
            if kind is None or name in ("pyproject.toml", "requirements.txt") or name.startswith("requirements"):
                continue
            path = os.path.join(directory, name)
            try:
                data = read_head(path, 1 << 20)
            except OSError:
                continue
            count += 1
            if count > _MAX_TEXT_FILES:
                return
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            yield rel, kind, data.decode("utf-8", "replace")


def _launched(text: str) -> Iterable[Tuple[str, str]]:
    """("script", path) or ("module", dotted) for each program a text launches."""
    for match in _LAUNCH.finditer(text):
        args = re.sub(r"[\"',\[\]]", " ", match.group("args"))  # a Dockerfile's exec form: ["python", "-m", "x"]
        module = _ARG_MODULE.search(args)
        if module and module.group("module") not in ("torch.distributed.run", "torch.distributed.launch", "pip",
                                                     "pytest", "venv", "build", "twine", "black", "ruff", "isort"):
            yield "module", module.group("module")
            continue
        script = _ARG_SCRIPT.search(args)
        if script:
            yield "script", script.group("path")


def _resolve_script(spelled: str, origin: str, known: Dict[str, Candidate]) -> Optional[str]:
    spelled = re.sub(r"^\$\{?\w+\}?/", "", spelled).lstrip("./")
    for base in ("", os.path.dirname(origin)):
        rel = os.path.normpath(os.path.join(base, spelled)).replace(os.sep, "/")
        if rel in known:
            return rel
    tail = [p for p in known if p == spelled or p.endswith("/" + spelled)]
    return tail[0] if len(tail) == 1 else None


def _resolve_module(dotted: str, root: Path, known: Dict[str, Candidate]) -> Optional[str]:
    for base in ("", "src/"):
        stem = base + dotted.replace(".", "/")
        for rel in (stem + ".py", stem + "/__main__.py"):
            if rel in known:
                return rel
    return None


def rank(files: Iterable[str], root: Path) -> List[Candidate]:
    """Files that may start a program, best evidence first: a console script of the project
    (100), run by a launch script, Makefile, Dockerfile or CI file (50 each, up to 3), run in
    the README or docs (30 each, up to 2), named by a command of the project (30 each, up to
    2), a package's ``__main__.py`` (20), a ``__main__`` guard (10) with a command-line parser
    (10); a program that imports torch (20) or the project's own packages (10). One that does
    neither (a release or CI tool) comes after all the others; tests lose 40. A name alone (``train.py``) is
    worth 2, to break ties."""
    known: Dict[str, Candidate] = {}
    for name in files:
        if not name.endswith(".py"):
            continue
        rel = os.path.relpath(os.path.abspath(name), root).replace(os.sep, "/")
        if rel.startswith("../") or os.path.basename(rel) == "setup.py":
            continue
        known[rel] = Candidate(rel)
    found: Dict[str, Candidate] = {}

    def mark(rel: Optional[str], points: int, why: str) -> None:
        if rel is not None:
            found.setdefault(rel, known[rel]).add(points, why)

    for target in console_scripts(root):
        path = resolve(target, root)
        if path is not None:
            rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
            if rel in known:
                mark(rel, 100, f"console script `{target}`")
                found[rel].target = target
    per_source: Dict[Tuple[str, str], int] = {}
    commands = script_names(root)
    command_re = (re.compile(r"(?m)^[ \t>$]*(?:" + "|".join(map(re.escape, commands)) + r")[ \t]+(?P<rest>[^\n]*)")
                  if commands else None)
    stems: Dict[str, List[str]] = {}
    for rel in known:
        stem = os.path.basename(rel)[:-3]
        if len(stem) >= 8 and stem != "__main__":
            stems.setdefault(stem, []).append(rel)
    for origin, kind, text in _text_files(root):
        if command_re is not None:  # `tune run lora_finetune_single_device`: the project's command names a file
            for match in command_re.finditer(text):
                for word in re.findall(r"[A-Za-z_][\w]*", match.group("rest")):
                    if len(stems.get(word, ())) == 1:
                        rel = stems[word][0]
                        key = (rel, "command")
                        if per_source.get(key, 0) < 2 and f"named by a command in {origin}" not in known[rel].evidence:
                            mark(rel, 30, f"named by a command in {origin}")
                            per_source[key] = per_source.get(key, 0) + 1
        for what, spelled in _launched(text):
            rel = (_resolve_module(spelled, root, known) if what == "module"
                   else _resolve_script(spelled, origin, known))
            if rel is None:
                continue
            key = (rel, kind)
            if per_source.get(key, 0) >= (3 if kind == "launch" else 2):
                continue
            before = len(known[rel].evidence)
            mark(rel, 50 if kind == "launch" else 30, f"{'run by' if kind == 'launch' else 'in'} {origin}")
            if len(known[rel].evidence) > before:
                per_source[key] = per_source.get(key, 0) + 1
    packages = {rel.split("/")[-2] for rel in known if rel.endswith("/__init__.py") and rel.count("/") >= 1}
    first_party = re.compile(rb"(?m)^\s*(?:from|import)\s+(?:" + b"|".join(
        re.escape(p.encode()) for p in sorted(packages)) + rb")\b") if packages else None
    for rel, candidate in known.items():
        head = read_head(str(root / rel), 1 << 20)
        main_guard = _MAIN_RE.search(head) is not None
        if rel in found or main_guard or os.path.basename(rel) == "__main__.py":
            # a program of this port uses torch, itself or through the project's own modules
            if _TORCH_IMPORT.search(head):
                mark(rel, 20, "imports torch")
            elif first_party is not None and first_party.search(head):
                mark(rel, 10, "imports the project")
            else:
                mark(rel, 0, "neither torch nor the project")
                known[rel].unrelated = True
        if os.path.basename(rel) == "__main__.py":
            mark(rel, 20, "a package's __main__")
        if main_guard:
            mark(rel, 10, "__main__ guard")
            if _CLI_LIBS.search(head):
                mark(rel, 10, "command-line parser")
    for rel, candidate in found.items():
        if _TEST_PATH.search(rel):
            candidate.score -= 40
        if re.search(r"(?:pre)?train|finetune|main", os.path.basename(rel)):
            candidate.score += 2
    return sorted(found.values(), key=lambda c: (c.unrelated, -c.score, c.path))


def candidates(files: Iterable[str], root: Path) -> List[str]:
    """The ranked candidates' paths (console-script targets as ``target (path)``)."""
    return [f"{c.target} ({c.path})" if c.target else c.path for c in rank(files, root)]


def _env_value(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def program_exports(options: PreludeOptions) -> str:
    """The short set-up of one program (``rocmport setup --shell ENTRY``) as ``export`` lines:
    the settings that change something for it and have a variable."""
    from .prelude import lean_settings

    pairs = [(env, value) for _name, env, value, _why in lean_settings(options) if env is not None]
    if not pairs:
        return "# nothing to set up for this program (`rocmport setup ENTRY` says why)\n"
    lines = ["# ROCm only: inductor settings this program needs (`rocmport setup --shell ENTRY`)"]
    lines += [f"export {env}={_env_value(value)}" for env, value in pairs]
    return "\n".join(lines) + "\n"


def shell_exports(options: PreludeOptions) -> str:
    """The set-up that environment variables can carry, as ``export`` lines (a Dockerfile
    takes the same pairs as ``ENV``). Settings without a variable (fusion knobs, the
    recompile limit, the RNG patch) need the Python set-up."""
    lines = ["# ROCm only: inductor settings rocmport's set-up applies (`rocmport setup --shell`)"]
    for _name, env, value in settings_for(options):
        if env is not None:
            lines.append(f"export {env}={_env_value(value)}")
    return "\n".join(lines) + "\n"
