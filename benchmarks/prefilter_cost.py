#!/usr/bin/env python3
"""The hand-written prefilters against the ones derived from the rules' NEEDS: time, and what
each lets through to LibCST.

    python benchmarks/prefilter_cost.py                  # /tmp/torchcopy, else the installed torch
    python benchmarks/prefilter_cost.py --path SRC       # any directory
    python benchmarks/prefilter_cost.py --rules ROC503,ROC712

A rule may replace the ``may_match`` and ``reach`` that ``Rule`` derives from its ``NEEDS`` by
its own (docs/adding-a-rule.md asks that such a one be timed against the derived form). For
each rule named (by default the rules of issue 27 that keep one: ROC401-405, ROC503,
ROC707-712, those of them whose class, or a base below ``Rule``, defines either), over every
``.py`` file of the directory, in one process and with the project index of the whole
directory (as a lint has it), this prints:

- ``may_match``: the CPU time of the hand-written one and of the derived one (``NEEDS`` on the
  prescan facts, ``Rule.may_match``) on the files whose text passes the rule's text prefilter,
  and how many files each lets through. Each call gets facts of its own (built from the same
  CPython tree, not timed), so no answer one variant memoises serves the other, and each is
  charged everything it asks of the facts and of the index.
- what that changes for a lint: the files that would reach LibCST only because of the derived
  one (no other rule's prefilter, as the engine runs them, passes them) and their MB.
- ``reach`` (for a rule with a hand-written one): the MB that LibCST parses, on the files that
  reach it and where the rule runs, with the rule's own ``reach`` and with the derived one
  (``NEEDS.spelled`` for a ``LOCAL`` rule, else every definition), the other rules' as they are,
  and the CPU time of the two.

No LibCST parse, no lint: prefilters only. The ratios are hand-written / derived.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ISSUE_27 = ("ROC401", "ROC402", "ROC403", "ROC404", "ROC405", "ROC503", "ROC707", "ROC708", "ROC709", "ROC710",
            "ROC711", "ROC712")


def _own(rule, name: str) -> bool:
    """Does ``rule`` (or a base of it below ``Rule``) define ``name`` itself?"""
    from rocmport.rules.base import Rule

    for klass in rule.__mro__:
        if klass is Rule:
            return False
        if name in vars(klass):
            return True
    return False


def _root(path) -> Path:
    if path:
        return Path(path)
    copy = Path("/tmp/torchcopy")
    if (copy / "__init__.py").is_file():
        return copy
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        sys.exit("no /tmp/torchcopy and torch is not installed: pass --path DIR")
    return Path(spec.origin).parent


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else ("-" if not a else "inf")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", help="corpus directory (default: /tmp/torchcopy, else the installed torch)")
    parser.add_argument("--rules", help="comma-separated codes (default: issue 27's rules with a hand-written one)")
    args = parser.parse_args()
    from rocmport import linting, parsing, registry
    from rocmport.analysis import opaque as _opaque
    from rocmport.analysis import prescan as _prescan
    from rocmport.analysis.index import ProjectIndex
    from rocmport.config import load_settings
    from rocmport.rules.base import Rule
    from rocmport.source import LineIndex

    root = _root(args.path)
    wanted = tuple(args.rules.split(",")) if args.rules else ISSUE_27
    by_code = {r.CODE: r for r in registry.visitor_rules()}
    rules = [by_code[c] for c in wanted if c in by_code and (_own(by_code[c], "may_match") or _own(by_code[c], "reach"))]
    if not rules:
        sys.exit("none of those rules has a hand-written may_match or reach")
    settings = load_settings(root)
    files = sorted(p for p in root.rglob("*.py") if p.is_file())
    index = ProjectIndex([str(p) for p in files])
    clock = time.process_time_ns
    # per rule: [files to may_match, hand ns, derived ns, hand passed, derived passed, added files, added bytes,
    #            reach: hand bytes, derived bytes, hand ns, derived ns, files]
    stats = {r.CODE: [0] * 12 for r in rules}
    total_files = total_reached = 0
    start = clock()

    def facts_of(tree, path):
        facts = _prescan.Facts.of(tree)
        facts.index, facts.path = index, path
        return facts

    def kept(text, tree, facts, matching, swap=None):
        """Bytes a lint parses of ``text`` when ``matching`` rules run (``swap``: (rule, its
        words) in place of the rule's own ``reach``)."""
        words = set()
        for rule in matching:
            reach = swap[1] if swap is not None and rule is swap[0] else rule.reach(facts)
            if reach is None:
                return len(text), 0
            words |= reach
        holes = _opaque.holes(text, LineIndex(text), tree, words, facts.bindings,
                              facts.nodes(*_opaque.BINDS_ELSEWHERE))
        return len(text) - sum(h.end - h.start for h in holes), len(holes)

    for number, path in enumerate(files):
        text = path.read_bytes().decode("utf-8", "replace")
        _, enabled = linting.select_rules(settings, str(path))
        triggered = registry.text_triggered(enabled, text, index)
        if not triggered:
            continue
        tree, deep = parsing.cpython_parse(text)
        if tree is None or deep is not None:
            continue
        total_files += 1
        engine = facts_of(tree, str(path))
        matching = [r for r in triggered if r.may_match(engine)]  # as a lint runs them
        total_reached += bool(matching)
        for rule in rules:
            if rule not in triggered:
                continue
            s = stats[rule.CODE]
            s[0] += 1
            answers = {}
            # alternate which variant runs first: neither always finds the machine warm
            for variant in (("hand", "derived") if number % 2 else ("derived", "hand")):
                facts = facts_of(tree, str(path))
                t = clock()
                if variant == "hand":
                    answers[variant] = bool(rule.may_match(facts))
                else:
                    answers[variant] = bool(Rule.may_match.__func__(rule, facts))
                t = clock() - t
                s[1 if variant == "hand" else 2] += t
            s[3] += answers["hand"]
            s[4] += answers["derived"]
            others = [r for r in matching if r is not rule]
            if answers["derived"] and not answers["hand"] and not others:
                s[5] += 1
                s[6] += len(text)
            if _own(rule, "reach") and answers["hand"] and rule in matching:
                facts = facts_of(tree, str(path))
                t = clock()
                rule.reach(facts)
                s[9] += clock() - t
                facts = facts_of(tree, str(path))
                t = clock()
                derived_words = Rule.reach.__func__(rule, facts)
                s[10] += clock() - t
                s[7] += kept(text, tree, engine, matching)[0]
                s[8] += kept(text, tree, engine, matching, (rule, derived_words))[0]
                s[11] += 1
    cpu = (clock() - start) / 1e9
    print(f"{root}: {len(files)} files, {total_files} pass some rule's text prefilter, {total_reached} reach LibCST"
          f" in a lint; this run {cpu:.1f} CPU s")
    print()
    print("| rule | files asked | may_match ms, hand-written | derived | ratio | files through, hand-written"
          " | derived | ratio | files the derived adds to LibCST (MB) | reach: MB parsed, hand-written | derived"
          " | ratio | reach ms, hand-written | derived |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for rule in rules:
        s = stats[rule.CODE]
        hand_ms, derived_ms = s[1] / 1e6, s[2] / 1e6
        if s[11]:
            reach = (f"{s[7] / 1e6:.2f} | {s[8] / 1e6:.2f} | {_ratio(s[7], s[8])} | {s[9] / 1e6:.0f} |"
                     f" {s[10] / 1e6:.0f}")
        elif _own(rule, "reach"):
            reach = "0 | 0 | - | 0 | 0"
        else:
            reach = "(derived) | | | |"
        may = (f"{hand_ms:.0f} | {derived_ms:.0f} | {_ratio(hand_ms, derived_ms)} | {s[3]} | {s[4]} |"
               f" {_ratio(s[3], s[4])}" if _own(rule, "may_match") else "(derived) | | | | |")
        print(f"| {rule.CODE} | {s[0]} | {may} | {s[5]} ({s[6] / 1e6:.2f}) | {reach} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
