#!/usr/bin/env python3
"""Recall and false alarms on hand-labelled real ROCm port bugs (issue 27's kinds R1-R5).

    python benchmarks/rocm_bugs_eval.py --repos DIR [--fetch-dir MIRRORS] [--labels FILE]
        [--rocmport-root ROOT ...] [--scope-default file|folder|project] [-v]

Every row of ``benchmarks/results/rocm-bugs-labels.jsonl`` names a public repository, a commit
(for a hazard: the parent of the commit that fixed it), a path and a line. Several commits of one
repository are normal, so ``--repos DIR`` holds one checkout per (repository, commit), named
``<name>@<commit12>``: the last part of the GitHub name and the first 12 hex digits of the
commit (``DIR/FBGEMM@afdeac9bc7f7``, ``DIR/lmdeploy@9b3b1933ee2a``).

Materialising the checkouts from ``fetch``'s bare git directories (``fetch github:OWNER/NAME``
brings ``/work/.mirror/OWNER+NAME/repo``), for each (repo, commit) in the labels:

    mkdir -p DIR/NAME@COMMIT12
    git --git-dir=/work/.mirror/OWNER+NAME/repo archive COMMIT | tar -x -C DIR/NAME@COMMIT12

fetch's snapshots leave out files of 4 MiB and more, so for a commit that has one (DeepSpeed's
blog images) the whole-tree archive fails with "invalid object"; extract the Python sources
only, which is all the labels need:

    git --git-dir=/work/.mirror/OWNER+NAME/repo archive COMMIT -- '*.py' \
        | tar -x -C DIR/NAME@COMMIT12

``--fetch-dir /work/.mirror`` makes this script run exactly those commands (the whole tree,
else the Python sources) for every checkout that is missing from ``--repos`` (it never fetches anything itself; fetch the
repositories first). ``python benchmarks/rocm_bugs_eval.py --list`` prints the (repo, commit,
checkout name) triples.

What is linted. A row's optional ``scope`` is ``"file"`` (the default) or ``"project"``. A
checkout with at least one ``project`` row is linted whole (``rocmport lint .`` in the
checkout), because those hazards cross modules (a package ``__init__`` that imports a module
whose module-level code is CUDA-only, a Triton extent whose value is set by a launcher in
another file) and a rule can only see them with the project's other modules. Other checkouts
are linted as ``--scope-default`` says: ``file`` (default: only the labelled files, the
cheapest, fine for rows whose truth is inside one file), ``folder`` (the labelled files'
folders) or ``project`` (whole checkouts; slow on two cores for DeepSpeed, FBGEMM, Megatron).
Always ``--no-cache --output-format json``, with ``PYTHONPATH=ROOT`` for each
``--rocmport-root`` (give one per version to compare).

Scoring. ``FAMILY`` maps each class to rule-code prefixes. A ``hazard`` row is found when a
finding whose code starts with one of its class's prefixes covers the row's line (between the
finding's start and end rows); a ``clean`` row is a false alarm when one does. Every other
finding in a labelled file is listed apart (``unlabelled``), so a new finding cannot hide.
The third-party code never enters this repository: only the labels do.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# class -> rule-code prefixes whose findings count for it (issue 27). Keep this the only map.
FAMILY = {
    "R1": ("ROC704", "ROC707", "ROC708"),  # CUDA-only code reached on ROCm
    "R2": ("ROC709", "ROC710"),  # names bound only on the CUDA branch; NVIDIA-only fall-through
    "R3": ("ROC702", "ROC705", "ROC706", "ROC711"),  # AMD architectures are not one GPU
    "R4": ("ROC5",),  # Triton shapes and integers decided at run time
    "R5": ("ROC4", "ROC712"),  # compiled code across modules; device queries at import
}


def checkout_name(repo: str, commit: str) -> str:
    return f"{repo.split('/')[1]}@{commit[:12]}"


def materialise(fetch_dir: Path, repos_dir: Path, repo: str, commit: str) -> Path:
    """Extract ``commit`` of ``fetch_dir/OWNER+NAME/repo`` into ``repos_dir/NAME@COMMIT12``."""
    target = repos_dir / checkout_name(repo, commit)
    if target.is_dir():
        return target
    git_dir = fetch_dir / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        raise SystemExit(f"{git_dir}: no bare git directory; run `fetch github:{repo}` first")
    # fetch's snapshots lack blobs of 4 MiB and more, which makes a whole-tree archive fail
    # where a commit has one; then only the Python sources are extracted (all that is labelled).
    for pathspec in ([], ["--", "*.py"]):
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        archive = subprocess.Popen(["git", f"--git-dir={git_dir}", "archive", commit, *pathspec],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        tar = subprocess.run(["tar", "-x", "-C", str(partial)], stdin=archive.stdout, check=False)
        if archive.wait() == 0 and tar.returncode == 0:
            partial.rename(target)
            return target
    shutil.rmtree(partial, ignore_errors=True)
    raise SystemExit(f"git archive {commit} failed for {repo}")


def lint(checkout: Path, root: str, paths: list[str]) -> list:
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("ROCMPORT_CACHE_DIR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "rocmport", "lint", "--no-cache", "--exit-zero", "--output-format", "json", *paths],
        cwd=checkout, capture_output=True, text=True, env=env, check=False)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{checkout}: rocmport gave no JSON (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def norm(path: str) -> str:
    return os.path.normpath(path).replace(os.sep, "/")


def check_line(checkout: Path, row: dict) -> str | None:
    """The labelled line's text, or None when it is not what the label recorded."""
    try:
        lines = (checkout / row["path"]).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    if row["line"] > len(lines):
        return None
    text = lines[row["line"] - 1]
    return text if hashlib.sha1(text.strip().encode()).hexdigest()[:12] == row["line_sha1"] else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", help="directory with one checkout per (repo, commit): NAME@COMMIT12")
    parser.add_argument("--fetch-dir", help="fetch's mirror directory (OWNER+NAME/repo); extracts missing checkouts")
    parser.add_argument("--labels", default=str(ROOT / "benchmarks" / "results" / "rocm-bugs-labels.jsonl"))
    parser.add_argument("--rocmport-root", action="append", help="PYTHONPATH of a rocmport to measure (repeatable)")
    parser.add_argument("--scope-default", choices=("file", "folder", "project"), default="file",
                        help="what to lint in checkouts without project-scope rows (default: the labelled files)")
    parser.add_argument("--list", action="store_true", help="print repo, commit and checkout name, then stop")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    with open(args.labels, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    checkouts = sorted({(r["repo"], r["commit"]) for r in rows})
    if args.list:
        for repo, commit in checkouts:
            print(repo, commit, checkout_name(repo, commit))
        return 0
    if not args.repos:
        parser.error("--repos is required")
    repos_dir = Path(args.repos)
    if args.fetch_dir:
        for repo, commit in checkouts:
            materialise(Path(args.fetch_dir), repos_dir, repo, commit)
    bad = [r["id"] for r in rows if check_line(repos_dir / checkout_name(r["repo"], r["commit"]), r) is None]
    if bad:
        raise SystemExit(f"labelled line missing or changed (wrong checkout?): {', '.join(bad)}")
    roots = args.rocmport_root or [str(ROOT)]
    for root in roots:
        found = {}  # (repo, commit, path) -> {line: [codes]}
        unlabelled = []
        for repo, commit in checkouts:
            mine = [r for r in rows if (r["repo"], r["commit"]) == (repo, commit)]
            labelled_files = sorted({r["path"] for r in mine})
            scope = "project" if any(r.get("scope") == "project" for r in mine) else args.scope_default
            if scope == "project":
                paths = ["."]
            elif scope == "folder":
                paths = sorted({os.path.dirname(p) or "." for p in labelled_files})
            else:
                paths = labelled_files
            labelled_lines = {(r["path"], r["line"]) for r in mine}
            for f in lint(repos_dir / checkout_name(repo, commit), root, paths):
                path = norm(f["filename"])
                if path not in labelled_files:
                    continue
                rows_of = found.setdefault((repo, commit, path), defaultdict(list))
                for line in range(f["location"]["row"], f["end_location"]["row"] + 1):
                    rows_of[line].append(f["code"])
                if not any((path, line) in labelled_lines
                           for line in range(f["location"]["row"], f["end_location"]["row"] + 1)):
                    unlabelled.append(f"{checkout_name(repo, commit)}:{path}:{f['location']['row']}: "
                                      f"{f['code']} {f['message'][:100]}")
        score = defaultdict(lambda: [0, 0, 0, 0])  # hazards, found, clean, false alarms
        for r in rows:
            codes = found.get((r["repo"], r["commit"], r["path"]), {}).get(r["line"], [])
            hit = any(c.startswith(FAMILY[r["class"]]) for c in codes)
            s = score[r["class"]]
            if r["expect"] == "hazard":
                s[0] += 1
                s[1] += hit
            else:
                s[2] += 1
                s[3] += hit
            if args.verbose:
                other = sorted(set(codes))
                print(f"  {r['id']} {r['expect']:6} {'FLAGGED' if hit else '-':7} "
                      f"{checkout_name(r['repo'], r['commit'])}:{r['path']}:{r['line']}"
                      + (f"  (codes on line: {', '.join(other)})" if other else ""))
        print(f"rocmport from {root}")
        print("| class | hazards found | clean rows flagged |")
        print("| --- | --- | --- |")
        total = [0, 0, 0, 0]
        for cls in sorted(score):
            s = score[cls]
            total = [a + b for a, b in zip(total, s)]
            print(f"| {cls} | {s[1]}/{s[0]} | {s[3]}/{s[2]} |")
        print(f"| all | {total[1]}/{total[0]} | {total[3]}/{total[2]} |")
        print(f"unlabelled findings in labelled files: {len(unlabelled)}")
        for line in unlabelled:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
