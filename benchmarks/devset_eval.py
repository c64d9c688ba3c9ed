#!/usr/bin/env python3
"""Score rocmport on the labelled dev set (../shared/devset/labels.jsonl).

The repositories are read from bare git snapshots (the search tool's ``fetch`` puts them
under /work/.mirror/<owner>+<name>/repo); each labelled file is extracted at its pinned
commit into a scratch directory outside this repository (their code never enters the
project), checked with the engine, and scored:

- recall: ``hazard`` rows with a finding of the class's family covering the line;
- false positives: ``clean`` rows with a finding of that family on the line;
- fixes: hazard rows whose line a ``fix`` (safe fixes only) rewrites.

    python benchmarks/devset_eval.py                # every class
    python benchmarks/devset_eval.py --class H1 -v  # one class, each row
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rocmport.config import Settings  # noqa: E402
from rocmport.engine import check_bytes  # noqa: E402

FAMILY = {"H1": ("ROC1",), "H2": ("ROC2", "ROC6"), "H3": ("ROC3",), "H4": ("ROC5",), "H5": ("ROC4",)}


def git_show(mirror: Path, repo: str, commit: str, path: str) -> bytes | None:
    git_dir = mirror / repo.replace("/", "+") / "repo"
    if not git_dir.exists():
        return None
    proc = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", default=str(ROOT.parent / "shared" / "devset" / "labels.jsonl"))
    parser.add_argument("--mirror", default="/work/.mirror")
    parser.add_argument("--class", dest="classes", action="append", help="H1..H5 (repeatable)")
    parser.add_argument("--json", help="write per-row results here")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    rows = [json.loads(line) for line in open(args.labels) if line.strip()]
    if args.classes:
        rows = [r for r in rows if r["class"] in args.classes]
    scratch = Path(tempfile.mkdtemp(prefix="rocmport-devset-"))
    cache: dict = {}
    results = []
    for row in rows:
        key = (row["repo"], row["commit"], row["path"])
        if key not in cache:
            data = git_show(Path(args.mirror), *key)
            if data is None:
                cache[key] = None
            else:
                local = scratch / row["repo"].replace("/", "+") / row["path"]
                local.parent.mkdir(parents=True, exist_ok=True)
                local.write_bytes(data)
                lint = check_bytes(data, str(local), Settings())
                fixed = check_bytes(data, str(local), Settings(), fix=True)
                cache[key] = (data, lint, fixed)
        entry = cache[key]
        result = {"id": row["id"], "class": row["class"], "expect": row["expect"], "status": "missing"}
        if entry is not None:
            data, lint, fixed = entry
            lines = data.decode("utf-8", "replace").splitlines()
            text = lines[row["line"] - 1].strip() if row["line"] <= len(lines) else ""
            sha_ok = hashlib.sha1(text.encode()).hexdigest()[:12] == row["line_sha1"]
            family = FAMILY[row["class"]]
            hits = [f for f in lint.findings if f.code.startswith(family)
                    and f.start.row <= row["line"] <= f.end.row]
            fix_hits = [f for f in hits if f.applies(False)]
            result.update(status="ok", sha_ok=sha_ok, found=[f.code for f in hits],
                          fixable=bool(fix_hits), internal_error=lint.internal_error or fixed.internal_error)
        results.append(result)

    by_class = defaultdict(list)
    for r in results:
        by_class[r["class"]].append(r)
    print(f"{'class':6} {'hazard rows':>11} {'found':>6} {'recall':>7} {'clean rows':>10} {'false +':>8} {'fixed':>6}")
    for cls in sorted(by_class):
        rs = [r for r in by_class[cls] if r["status"] == "ok"]
        hazards = [r for r in rs if r["expect"] == "hazard"]
        clean = [r for r in rs if r["expect"] == "clean"]
        found = sum(1 for r in hazards if r["found"])
        fps = sum(1 for r in clean if r["found"])
        fixed = sum(1 for r in hazards if r["fixable"])
        recall = f"{found / len(hazards):.0%}" if hazards else "-"
        print(f"{cls:6} {len(hazards):>11} {found:>6} {recall:>7} {len(clean):>10} {fps:>8} {fixed:>6}")
    missing = [r["id"] for r in results if r["status"] != "ok"]
    if missing:
        print(f"not scored (repository or file not available): {', '.join(missing)}")
    bad_sha = [r["id"] for r in results if r.get("status") == "ok" and not r["sha_ok"]]
    if bad_sha:
        print(f"line text does not match line_sha1: {', '.join(bad_sha)}")
    errors = [r["id"] for r in results if r.get("internal_error")]
    if errors:
        print(f"internal errors: {', '.join(errors)}")
    if args.verbose:
        for r in results:
            mark = {"hazard": "FOUND" if r.get("found") else "MISSED",
                    "clean": "FALSE+" if r.get("found") else "clean"}.get(r["expect"], "?")
            print(f"  {r['id']:8} {r['expect']:7} {mark:7} {','.join(r.get('found', []))}"
                  f"{'  (fixable)' if r.get('fixable') else ''}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
