"""docs/design.md names every module and layer as they are: each module of the package is
named on the page, and each module the page names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")


def _modules():
    """Each module as the page names it: ``cli.py`` at the top, ``analysis/gates.py``,
    ``rules/base.py``; a rule module is covered by its family package's name."""
    out = {}
    for path in sorted((ROOT / "rocmport").rglob("*.py")):
        parts = path.relative_to(ROOT / "rocmport").parts
        if parts[0] == "rules" and len(parts) == 3:  # rules/<family>/<rule>.py: one rule each
            continue
        if parts[-1] == "__init__.py":  # a package: named by its folder (test_every_package_is_named)
            continue
        out["/".join(parts)] = path
    return out


def test_every_module_is_named():
    missing = []
    for relative in _modules():
        name = relative.rsplit("/", 1)[-1]
        if relative.startswith("analysis/") and relative != "analysis/__init__.py":
            wanted = [f"`{name}`", f"analysis/{name}"]
        elif relative.startswith("rules/"):
            wanted = ["rules/base.py", "rules/__init__.py"] if len(relative.split("/")) == 2 else [relative]
        else:
            wanted = [f"`{name}`", relative]
        if not any(w in PAGE for w in wanted):
            missing.append(relative)
    assert not missing, "docs/design.md does not name: " + ", ".join(missing)


def test_every_package_is_named():
    packages = sorted(p.relative_to(ROOT).as_posix() + "/" for p in (ROOT / "rocmport").iterdir()
                      if (p / "__init__.py").is_file())
    assert packages and all(f"{package}" in PAGE for package in packages), packages


def test_every_family_is_named():
    families = sorted(p.name for p in (ROOT / "rocmport" / "rules").iterdir() if (p / "__init__.py").is_file())
    assert all(f"`{family}`" in PAGE for family in families), families


def test_every_module_the_page_names_exists():
    named = set(re.findall(r"`((?:[a-z_]+/)*[a-z_]+\.py)", PAGE))
    known = set(_modules()) | {path.relative_to(ROOT / "rocmport").as_posix()
                              for path in (ROOT / "rocmport").rglob("*.py")}
    tops = {k.rsplit("/", 1)[-1] for k in known}
    ghosts = sorted(n for n in named if n not in known and n.rsplit("/", 1)[-1] not in tops
                    and not n.startswith(("scripts/", "tests/", "benchmarks/")) and "/" not in n
                    or (n.startswith(("analysis/", "rules/")) and n not in known and not n.startswith("rules/<")))
    assert not ghosts, f"docs/design.md names modules that do not exist: {ghosts}"
