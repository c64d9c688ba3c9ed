#!/usr/bin/env python3
"""Regenerate every file that is generated from the rules, after changing or adding one.

    python scripts/regenerate.py           # write the stale ones
    python scripts/regenerate.py --check   # change nothing; list the stale ones, exit 1 if any

The files: the rule index ``rocmport/_rule_index.py`` (``python -m rocmport.registry
--write``), ``docs/rules.md`` (``python scripts/gen_rule_docs.py``) and the reviewed
snapshots ``tests/snapshots/<CODE>.md`` (``tests/rule_snapshots.py``; a snapshot of a rule
that no longer exists is removed). Tests fail while any of them is stale; the snapshot test
shows the difference, which is what a reviewer reads.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rocmport import docs, registry  # noqa: E402
from tests import rule_snapshots  # noqa: E402


def generated() -> Dict[Path, str]:
    """Every generated file and the text it must hold now."""
    files = {registry.INDEX_FILE: registry.render_index(), ROOT / docs.RULES_DOC: docs.render()}
    files.update(rule_snapshots.snapshots())
    return files


def _current(path: Path) -> Optional[str]:
    if not path.is_file():
        return None
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--check"]):
        print("usage: python scripts/regenerate.py [--check]", file=sys.stderr)
        return 2
    check = args == ["--check"]
    files = generated()
    stale = [path for path, text in files.items() if _current(path) != text]
    orphans = rule_snapshots.orphans(files)
    for path in stale + orphans:
        name = path.relative_to(ROOT)
        if check:
            what = "is not a rule's" if path in orphans else ("is missing" if not path.exists() else "is stale")
            print(f"{name} {what}", file=sys.stderr)
        elif path in orphans:
            path.unlink()
            print(f"removed {name}", file=sys.stderr)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(files[path])
            print(f"wrote {name}", file=sys.stderr)
    if check and (stale or orphans):
        print("run `python scripts/regenerate.py` to regenerate them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
