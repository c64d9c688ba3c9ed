#!/usr/bin/env python3
"""Recall and false alarms on hand-labelled lines of public repositories outside the dev set.

    python benchmarks/realworld_eval.py --repos DIR [--labels FILE] [--rocmport-root ROOT ...]

``--repos DIR`` holds one checkout per repository, named after the last part of its
GitHub name (``DIR/peft``, ``DIR/accelerate``), at the commit the labels give. Each
checkout is linted whole (``python -m rocmport lint --no-cache --output-format json .``),
so hazards one module away (a project's wrapper of torch.compile) count, with
``PYTHONPATH=ROOT`` for each ``--rocmport-root`` (give one per version to compare: an
export of an older commit, and this checkout). A ``hazard`` row is found when a finding of
its family covers the line; a ``clean`` row is a false alarm when one does. Every other
finding is listed apart (``unlabelled``), so a new finding cannot hide. Where the rows name a
rule (``code``, as ``false-alarm-labels.jsonl``'s do), a table per rule follows: its findings,
those no row labels, its hazard rows found and its clean rows flagged (by that rule). Their code never
enters this repository: only the labels do (benchmarks/results/realworld-labels.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# H1-H5 as in the dev set (../shared/devset/README.md); H7: code that assumes an NVIDIA GPU
FAMILY = {"H1": ("ROC1",), "H2": ("ROC2", "ROC6"), "H3": ("ROC3",), "H4": ("ROC5",), "H5": ("ROC4",),
          "H7": ("ROC7",)}


def lint(checkout: Path, root: str) -> list:
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("ROCMPORT_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "rocmport", "lint", "--no-cache", "--output-format", "json", "."],
                          cwd=checkout, capture_output=True, text=True, env=env)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{checkout}: rocmport gave no JSON (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", required=True, help="directory with one checkout per repository")
    parser.add_argument("--labels", default=str(ROOT / "benchmarks" / "results" / "realworld-labels.jsonl"))
    parser.add_argument("--rocmport-root", action="append", help="PYTHONPATH of a rocmport to measure (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    rows = [json.loads(line) for line in open(args.labels) if line.strip()]
    roots = args.rocmport_root or [str(ROOT)]
    repos = sorted({r["repo"] for r in rows})
    for root in roots:
        found = {}  # (repo, path) -> {line: [codes]}
        unlabelled = []
        per_rule = defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # findings, unlabelled, hazards, found, clean, flagged
        labelled = {(r["repo"], r["path"], r["line"]) for r in rows}
        for repo in repos:
            checkout = Path(args.repos) / repo.split("/")[1]
            for f in lint(checkout, root):
                # a file at the top of the checkout is reported as "./name"; labels hold repository paths
                filename = os.path.normpath(f["filename"]).replace(os.sep, "/")
                rows_of = found.setdefault((repo, filename), defaultdict(list))
                for line in range(f["location"]["row"], f["end_location"]["row"] + 1):
                    rows_of[line].append(f["code"])
                per_rule[f["code"]][0] += 1
                if (repo, filename, f["location"]["row"]) not in labelled:
                    unlabelled.append(f"{repo}:{filename}:{f['location']['row']}: {f['code']}")
                    per_rule[f["code"]][1] += 1
        score = defaultdict(lambda: [0, 0, 0, 0])  # hazards, found, clean, false alarms
        for r in rows:
            codes = found.get((r["repo"], r["path"]), {}).get(r["line"], [])
            hit = any(c.startswith(FAMILY[r["class"]]) for c in codes)
            s = score[r["class"]]
            if r.get("code"):  # rows of one rule (false-alarm-labels.jsonl): scored by that rule alone
                by_rule = per_rule[r["code"]]
                same = r["code"] in codes
                by_rule[2 if r["expect"] == "hazard" else 4] += 1
                by_rule[3 if r["expect"] == "hazard" else 5] += same
            if r["expect"] == "hazard":
                s[0] += 1
                s[1] += hit
            else:
                s[2] += 1
                s[3] += hit
            if args.verbose:
                print(f"  {r['id']} {r['expect']:6} {'found' if hit else '-':5} {r['repo']}:{r['path']}:{r['line']}")
        print(f"rocmport from {root}")
        print("| family | hazards found | clean rows flagged |")
        print("| --- | --- | --- |")
        total = [0, 0, 0, 0]
        for cls in sorted(score):
            s = score[cls]
            total = [a + b for a, b in zip(total, s)]
            print(f"| {cls} | {s[1]}/{s[0]} | {s[3]}/{s[2]} |")
        print(f"| all | {total[1]}/{total[0]} | {total[3]}/{total[2]} |")
        if any(r.get("code") for r in rows):
            print("| rule | findings | unlabelled | hazards found | clean rows flagged |")
            print("| --- | --- | --- | --- | --- |")
            for code in sorted(per_rule):
                n, u, h, hf, c, cf = per_rule[code]
                print(f"| {code} | {n} | {u} | {hf}/{h} | {cf}/{c} |")
        print(f"unlabelled findings: {len(unlabelled)}")
        for line in unlabelled:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
