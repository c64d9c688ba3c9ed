#!/usr/bin/env python3
"""Which files reach LibCST, and for which rules: the number that decides a cold lint.

    python benchmarks/reach.py                # the installed torch package
    python benchmarks/reach.py --path SRC     # any directory

For every .py file it runs the two prefilters the engine runs (each rule's text triggers and
words, then ``Rule.may_match`` on CPython's tree) and prints how many files CPython parses, how
many files and bytes are left for LibCST (and how many bytes a lint parses once the definitions
no rule reads are left out, ``Rule.reach``), per rule, most bytes first, and the largest files.
No LibCST parse is done.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", help="corpus directory (default: the installed torch package)")
    parser.add_argument("--top", type=int, default=15, help="how many of the largest files to list")
    args = parser.parse_args()
    from rocmport import linting, parsing, registry
    from rocmport.analysis import opaque as _opaque
    from rocmport.analysis import prescan as _prescan
    from rocmport.source import LineIndex
    from rocmport.config import load_settings

    if args.path:
        root = Path(args.path)
    else:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.origin:
            sys.exit("torch is not installed: pass --path DIR")
        root = Path(spec.origin).parent
    settings = load_settings(root)
    files = sorted(p for p in root.rglob("*.py") if p.is_file())
    per_rule = collections.Counter()
    per_rule_bytes = collections.Counter()
    reached = []
    parsed = 0
    kept = 0  # bytes LibCST parses in a lint: less the definitions no rule run on the file reads
    start = time.process_time()
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        _, rules = linting.select_rules(settings, str(path))
        rules = registry.text_triggered(rules, text)
        if not rules:
            continue
        tree, deep = parsing.cpython_parse(text)
        parsed += 1
        if tree is None:  # LibCST (or the depth check) decides: it counts as reached
            reached.append((path, len(text), ["(no CPython tree)"]))
            kept += len(text)
            continue
        facts = _prescan.Facts.of(tree)
        facts.path = str(path)
        matching = [r for r in rules if r.may_match(facts)]
        codes = [r.CODE for r in matching]
        if codes:
            reached.append((path, len(text), codes))
            words = set()
            for rule in matching:
                reach = rule.reach(facts)
                if reach is None:
                    words = None
                    break
                words |= reach
            holes = [] if words is None else _opaque.holes(text, LineIndex(text), tree, words, facts.bindings,
                                                          facts.nodes(*_opaque.BINDS_ELSEWHERE))
            kept += len(text) - sum(hole.end - hole.start for hole in holes)
            for code in codes:
                per_rule[code] += 1
                per_rule_bytes[code] += len(text)
    cpu = time.process_time() - start
    total = sum(size for _, size, _ in reached)
    print(f"{root}: {len(files)} files; {parsed} parsed by CPython; {len(reached)} reach LibCST"
          f" ({total / 1e6:.2f} MB, {kept / 1e6:.2f} MB of it parsed in a lint); prefilters {cpu:.1f} CPU s")
    print(f"\n{'rule':8} {'files':>6} {'MB':>6}")
    for code, size in per_rule_bytes.most_common():
        print(f"{code:8} {per_rule[code]:6} {size / 1e6:6.2f}")
    print("\nlargest files that reach LibCST:")
    for path, size, codes in sorted(reached, key=lambda r: -r[1])[:args.top]:
        print(f"{size:9} {path.relative_to(root)}  {' '.join(codes)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
