#!/usr/bin/env python3
"""rocmport's speed on a real tree, against a reference run in the same process tree.

    python benchmarks/bench.py                 # the installed torch package
    python benchmarks/bench.py --path SRC      # any directory
    python benchmarks/bench.py --vs-torchfix   # also time TorchFix, when installed

It copies the corpus's .py files to a scratch directory (so one file can be changed), then
times, each in a fresh process: the baseline (libcst.parse_module of every file, one
process), `rocmport lint` cold (empty cache), warm (nothing changed), after one file
changed, and `rocmport fix` (diff mode, cold). It prints wall time, files/s, lines/s, the
peak RSS of the largest process, and every ratio to the baseline. Nothing is built by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WRAPPER = r"""
import resource, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the whole process tree, workers included
sys.stdout.write(f"{wall} {usage.ru_maxrss} {proc.returncode} {usage.ru_utime + usage.ru_stime}\n")
sys.stderr.write(proc.stderr.decode(errors="replace")[-2000:])
"""

BASELINE = r"""
import sys, libcst
from pathlib import Path
for path in Path(sys.argv[1]).rglob("*.py"):
    try:
        libcst.parse_module(path.read_bytes())
    except Exception:
        pass
"""


def measure(cmd, cwd):
    """(wall seconds, peak RSS MiB of the largest process, exit code, stderr, CPU seconds:
    user + system of the whole process tree) of ``cmd``, run in ``cwd``: not where this script
    was started, whose ``rocmport/`` (a checkout's root) ``python -m`` would import before the
    ``PYTHONPATH`` of the version being measured. CPU seconds are what to compare on a
    machine shared with other work; wall time only on an idle one."""
    out = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True, cwd=cwd)
    wall, rss, code, cpu = out.stdout.split()
    return float(wall), int(rss) / 1024, int(code), out.stderr, float(cpu)


def torch_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        sys.exit("torch is not installed: pass --path DIR")
    return Path(spec.origin).parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", help="corpus directory (default: the installed torch package)")
    parser.add_argument("--jobs", type=int, default=None, help="rocmport --jobs (default: one per CPU)")
    parser.add_argument("--vs-torchfix", action="store_true", help="also time TorchFix (torchfix --select ALL)")
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--lint-only", action="store_true",
                        help="only lint cold, warm and one file changed (no fix, no uncached lint)")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()

    source = Path(args.path) if args.path else torch_dir()
    scratch = Path(tempfile.mkdtemp(prefix="rocmport-bench-"))
    corpus = scratch / "corpus"
    files = sorted(p for p in source.rglob("*.py") if p.is_file())
    lines = 0
    for path in files:
        target = corpus / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        lines += path.read_bytes().count(b"\n")
    (corpus / "pyproject.toml").write_text("[tool.rocmport]\n")
    cache = scratch / "cache"
    rocmport = [sys.executable, "-m", "rocmport"]
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    print(f"corpus: {source} ({len(files)} files, {lines} lines), copied to {corpus}")
    print("rocmport from " + subprocess.run([sys.executable, "-c", "import rocmport; print(rocmport.__file__)"],
                                            capture_output=True, text=True, cwd=scratch).stdout.strip())
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")

    runs = []
    if not args.skip_baseline:
        runs.append(("baseline: libcst.parse_module, 1 process", [sys.executable, "-c", BASELINE, str(corpus)]))
    lint = [*rocmport, "lint", "--cache-dir", str(cache), *jobs, str(corpus)]
    runs += [("rocmport lint, cold", lint), ("rocmport lint, warm", lint)]
    results = []
    for name, cmd in runs:
        wall, rss, code, err, cpu = measure(cmd, scratch)
        results.append({"run": name, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss, "exit": code})
        print(f"  {name:44} {wall:8.2f} s wall {cpu:8.2f} s CPU", flush=True)
    candidates = sorted(corpus.rglob("*.py"))
    changed = next((p for p in candidates if p.stat().st_size > 2000), max(candidates, key=lambda p: p.stat().st_size))
    changed.write_bytes(changed.read_bytes() + b"\n# changed by the benchmark\n")
    later = [("rocmport lint, one file changed", lint)]
    if not args.lint_only:
        later += [("rocmport fix (diff), cold", [*rocmport, "fix", "--no-cache", *jobs, str(corpus)]),
                  ("rocmport lint, cold, no cache", [*rocmport, "lint", "--no-cache", *jobs, str(corpus)])]
    for name, cmd in later:
        wall, rss, code, err, cpu = measure(cmd, scratch)
        results.append({"run": name, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss, "exit": code})
        print(f"  {name:44} {wall:8.2f} s wall {cpu:8.2f} s CPU", flush=True)
    if args.vs_torchfix:
        if shutil.which("torchfix"):
            wall, rss, code, err, cpu = measure(["torchfix", "--select", "ALL", str(corpus)], scratch)
            results.append({"run": "TorchFix --select ALL", "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss,
                            "exit": code})
        else:
            print("  TorchFix is not installed (pip install torchfix): skipped")

    base = results[0]["wall_s"] if not args.skip_baseline else None
    print()
    print(f"{'run':46} {'wall s':>8} {'CPU s':>8} {'files/s':>9} {'lines/s':>10} {'peak RSS MiB':>13} {'vs baseline':>12}")
    for r in results:
        ratio = f"{r['wall_s'] / base:.3f}x" if base else "-"
        print(f"{r['run']:46} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {len(files) / r['wall_s']:9.0f} {lines / r['wall_s']:10.0f}"
              f" {r['peak_rss_mib']:13.0f} {ratio:>12}")
    by = {r["run"]: r["wall_s"] for r in results}
    if not args.lint_only:
        print(f"\nfix (diff) / lint, both cold without cache: "
              f"{by['rocmport fix (diff), cold'] / by['rocmport lint, cold, no cache']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"corpus": str(source), "files": len(files), "lines": lines,
                                               "cpus": os.cpu_count(), "results": results}, indent=2))
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
