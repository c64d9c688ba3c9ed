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
from pathlib import Path
from typing import Iterable, List, Optional

from .house import load_toml, table
from .prelude import PreludeOptions, settings_for
from .source import read_head

_MAIN_RE = re.compile(rb"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.M)


def console_scripts(root: Path) -> List[str]:
    """``module:function`` targets of ``[project.scripts]`` in the root's pyproject.toml."""
    data = load_toml(root / "pyproject.toml") if (root / "pyproject.toml").is_file() else {}
    scripts = table(data, "project", "scripts")
    return [v for v in scripts.values() if isinstance(v, str)]


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


def candidates(files: Iterable[str], root: Path) -> List[str]:
    """Files among ``files`` that look like program starts, then console-script targets."""
    found = []
    for name in files:
        if not name.endswith(".py"):
            continue
        head = read_head(name, 1 << 20)  # b"" for what cannot be read
        if _MAIN_RE.search(head) or os.path.basename(name) == "__main__.py":
            found.append(os.path.normpath(name))
    for target in console_scripts(root):
        path = resolve(target, root)
        if path is not None:
            found.append(f"{target} ({path})")
    return found


def _env_value(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def shell_exports(options: PreludeOptions) -> str:
    """The set-up that environment variables can carry, as ``export`` lines (a Dockerfile
    takes the same pairs as ``ENV``). Settings without a variable (fusion knobs, the
    recompile limit, the RNG patch) need the Python set-up."""
    lines = ["# ROCm only: inductor settings rocmport's set-up applies (`rocmport setup --shell`)"]
    for _name, env, value in settings_for(options):
        if env is not None:
            lines.append(f"export {env}={_env_value(value)}")
    return "\n".join(lines) + "\n"
