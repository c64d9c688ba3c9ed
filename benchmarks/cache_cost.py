"""What the result cache costs a cold run, and what it saves a warm one, on many empty files
(the worst case for a cache: nothing to save, an entry to write per file), against
``--no-cache`` in the same run.

    python benchmarks/cache_cost.py [--files N] [--repeat R] [--jobs J]

Each figure is the median over R rounds of the wall time and CPU time (user + system, from
``getrusage(RUSAGE_CHILDREN)``) of one ``rocmport lint`` process; a round runs, in turn,
``--no-cache``, a cold cached run (a fresh cache directory) and a warm one (the same
directory again). The target (issue 31): the cold cached run no slower than ``--no-cache``.
Nothing is asserted: the figures and the ratios are printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(cmd, cwd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=None, help="rocmport's -j (default: its own)")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("ROCMPORT_CACHE_DIR", None)
    work = Path(tempfile.mkdtemp(prefix="rocmport-cache-"))
    try:
        tree = work / "tree"
        for i in range(args.files):
            folder = tree / f"pkg{i // 500:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"m{i:06d}.py").write_bytes(b"")
        (tree / "pyproject.toml").write_text("[tool.rocmport]\n")
        lint = [sys.executable, "-m", "rocmport", "lint", "-q", "."] + (["-j", str(args.jobs)] if args.jobs else [])
        timed(lint + ["--no-cache"], tree, env)  # .pyc files and the OS file cache
        rows = {"--no-cache": [], "cold cache": [], "warm cache": []}
        for round_ in range(args.repeat):
            cache = work / f"cache{round_}"
            rows["--no-cache"].append(timed(lint + ["--no-cache"], tree, env))
            rows["cold cache"].append(timed(lint + ["--cache-dir", str(cache)], tree, env))
            rows["warm cache"].append(timed(lint + ["--cache-dir", str(cache)], tree, env))
            shutil.rmtree(cache, ignore_errors=True)
        base_wall = statistics.median(w for w, _ in rows["--no-cache"])
        base_cpu = statistics.median(c for _, c in rows["--no-cache"])
        print(f"{args.files} empty files, median of {args.repeat} rounds")
        print(f"{'run':<12} {'wall s':>8} {'x no-cache':>10} {'CPU s':>8} {'x no-cache':>10}")
        for name, values in rows.items():
            wall = statistics.median(w for w, _ in values)
            cpu = statistics.median(c for _, c in values)
            print(f"{name:<12} {wall:8.2f} {wall / base_wall:10.2f} {cpu:8.2f} {cpu / base_cpu:10.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
