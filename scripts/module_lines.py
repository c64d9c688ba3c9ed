"""Lines per module of the rocmport package and its subpackages, now and at a git revision.

    python scripts/module_lines.py               # the working tree
    python scripts/module_lines.py --rev main    # the working tree beside the revision `main`

Lines are physical lines (``wc -l``). Modules present on one side only show ``-`` on the other.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rocmport",)


def _name(relative: str) -> str:
    return relative[:-len(".py")].replace("/", ".").replace(".__init__", "")


def tree_lines() -> Dict[str, int]:
    counts = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            counts[_name(relative)] = len(path.read_bytes().splitlines())
    return counts


def rev_lines(rev: str) -> Dict[str, int]:
    listing = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "--", *PACKAGES], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    counts = {}
    for relative in listing:
        if relative.endswith(".py"):
            data = subprocess.run(["git", "show", f"{rev}:{relative}"], cwd=ROOT, capture_output=True,
                                  check=True).stdout
            counts[_name(relative)] = len(data.splitlines())
    return counts


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision to compare with (before)")
    args = parser.parse_args(argv)
    after = tree_lines()
    before = rev_lines(args.rev) if args.rev else None
    width = max(len(name) for name in list(after) + list(before or ()))
    if before is None:
        for name in sorted(after):
            print(f"{name:<{width}}  {after[name]:>6}")
        print(f"{'total':<{width}}  {sum(after.values()):>6}")
        return 0
    print(f"{'module':<{width}}  {'before':>6}  {'after':>6}  {'change':>6}")
    for name in sorted(set(after) | set(before)):
        old, new = before.get(name), after.get(name)
        change = (new or 0) - (old or 0)
        print(f"{name:<{width}}  {old if old is not None else '-':>6}  {new if new is not None else '-':>6}"
              f"  {change:>+6}")
    total_old, total_new = sum(before.values()), sum(after.values())
    print(f"{'total':<{width}}  {total_old:>6}  {total_new:>6}  {total_new - total_old:>+6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
