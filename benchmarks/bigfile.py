"""Fix one very large file: seconds and peak memory (issue 18: 100,000 lines in under 30 s
and 1 GB).

    python benchmarks/bigfile.py [--lines 100000] [--hazards 200] [--profile OUT.prof]

Generates a module of ``--lines`` lines (functions, classes, a share of them holding a
hazard that ``fix`` rewrites), runs ``check_bytes(..., fix=True)`` in a child process and
prints its wall time, CPU time (user + system) and peak RSS, the LibCST work it did
(``parse``: parses, ``positions:statement``: statements whose positions were generated,
``resolve:*``: whole-module metadata resolutions), then checks that the output parses and
that a second fix changes nothing. A reference run in another child of the same process
tree does only ``libcst.parse_module`` of the same text (the least any fix can cost); the
``*_ratio`` figures are the fix's over it, so a loaded machine shifts both alike.
``--profile`` writes a cProfile of the fix instead.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make(lines: int, hazards: int, layout: str = "blocks") -> str:
    if layout == "flat":
        return make_flat(lines, hazards)
    out = ['"""A generated module."""', "import torch", "import torch.nn as nn", ""]
    n = 0
    every = max(1, (lines // 12) // max(1, hazards))
    while True:
        block = [f"class Block{n}(nn.Module):",
                 f"    def __init__(self, width={n % 97 + 1}):",
                 "        super().__init__()",
                 "        self.width = width",
                 "",
                 "    def forward(self, x):",
                 f"        y = x * {n} + self.width  # a comment",
                 "        return y if y is not None else x",
                 ""]
        if n % every == 0:
            block.append(f'compiled_{n} = torch.compile(Block{n}(), mode="reduce-overhead")')
        block += [f"def helper_{n}(a, b):", f"    return (a + b) * {n}", ""]
        if len(out) + len(block) > lines:
            break
        out += block
        n += 1
    # whole blocks only (a cut block would not parse), then comment lines up to ``lines``
    out += [f"# padding {i}" for i in range(lines - len(out))]
    return "\n".join(out) + "\n"


def make_flat(lines: int, hazards: int) -> str:
    """Module-level statements only, no function or class (a generated table, a long script):
    no indented block anywhere, no blank line between statements."""
    out = ['"""A generated module."""', "import torch", ""]
    every = max(1, (lines // 3) // max(1, hazards))
    n = 0
    while len(out) + 3 <= lines:
        out.append(f"value_{n} = {n} * 2 + len(out_{n % 7}) if {n} % 3 else -{n}  # row {n}")
        out.append(f'table_{n} = {{"name": "row{n}", "scale": value_{n} / 3, "tags": [{n}, {n + 1}]}}')
        if n % every == 0:
            out.append(f'compiled_{n} = torch.compile(model_{n}, mode="reduce-overhead")')
        else:
            out.append(f"print(value_{n}, table_{n}['name'])")
        n += 1
    out += [f"# padding {i}" for i in range(lines - len(out))]
    return "\n".join(out) + "\n"


CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from rocmport.config import Settings
from rocmport.engine import check_bytes
try:  # what `rocmport fix` does: its run is rocmport's own process (rocmport.process)
    from rocmport import process
    process.own().__enter__()
except ImportError:  # a checkout from before it
    pass
data = open(sys.argv[2], "rb").read()
profile = sys.argv[3] if len(sys.argv) > 3 else None
t0, c0 = time.perf_counter(), time.process_time()
if profile:
    import cProfile
    cProfile.run("report = check_bytes(data, 'big.py', Settings(), fix=True)", profile)
else:
    report = check_bytes(data, "big.py", Settings(), fix=True)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
try:
    from rocmport.analysis.metadata import STATS
except ImportError:
    STATS = {}
work = dict(sorted(STATS.items()))
out = report.fixed or data
compile(out, "big.py", "exec")
again = check_bytes(out, "big.py", Settings(), fix=True)
print(json.dumps({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(rss),
                  "fixes": report.fixes_applied, "internal_error": report.internal_error,
                  "idempotent": again.fixed is None, "work": work}))
"""

REFERENCE = r"""
import json, resource, sys, time
import libcst
text = open(sys.argv[1], encoding="utf-8").read()
t0, c0 = time.perf_counter(), time.process_time()
libcst.parse_module(text)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(rss)}))
"""


def child(cmd):
    """(last stdout line as JSON, CPU seconds of the child's process tree) or (None, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        return None, result.stderr
    tree_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(result.stdout.splitlines()[-1]), round(tree_cpu, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--hazards", type=int, default=200)
    parser.add_argument("--layout", choices=["blocks", "flat"], default="blocks",
                        help="blocks: classes and functions (default); flat: module-level statements only")
    parser.add_argument("--profile", default=None)
    parser.add_argument("--no-reference", action="store_true", help="skip the parse-only reference run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.py")
        Path(path).write_text(make(args.lines, args.hazards, args.layout))
        cmd = [sys.executable, "-c", CHILD, str(ROOT), path] + ([args.profile] if args.profile else [])
        start = time.perf_counter()
        figures, tree_cpu = child(cmd)
        if figures is None:
            print(tree_cpu, file=sys.stderr)
            return 1
        figures["lines"] = args.lines
        figures["layout"] = args.layout
        figures["child_total_s"] = round(time.perf_counter() - start, 2)
        figures["child_tree_cpu_s"] = tree_cpu  # the fix, the idempotency check and start-up
        if not args.no_reference and not args.profile:
            reference, _ = child([sys.executable, "-c", REFERENCE, path])
            if reference is not None:
                figures["reference_parse"] = reference
                figures["cpu_ratio"] = round(figures["cpu_s"] / max(reference["cpu_s"], 0.01), 2)
                figures["wall_ratio"] = round(figures["wall_s"] / max(reference["wall_s"], 0.01), 2)
                figures["rss_ratio"] = round(figures["peak_rss_mib"] / max(reference["peak_rss_mib"], 1), 2)
        print(json.dumps(figures))
        ok = figures["internal_error"] is None and figures["idempotent"]
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
