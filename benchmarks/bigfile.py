"""Fix one very large file: seconds and peak memory (issue 18: 100,000 lines in under 30 s
and 1 GB).

    python benchmarks/bigfile.py [--lines 100000] [--hazards 200] [--profile OUT.prof]

Generates a module of ``--lines`` lines (functions, classes, a share of them holding a
hazard that ``fix`` rewrites), runs ``check_bytes(..., fix=True)`` in a child process and
prints its wall time, CPU time and peak RSS, then checks that the output parses and that a
second fix changes nothing. ``--profile`` writes a cProfile of the fix instead.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make(lines: int, hazards: int) -> str:
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


CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from rocmport.config import Settings
from rocmport.engine import check_bytes
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
out = report.fixed or data
compile(out, "big.py", "exec")
again = check_bytes(out, "big.py", Settings(), fix=True)
print(json.dumps({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(rss),
                  "fixes": report.fixes_applied, "internal_error": report.internal_error,
                  "idempotent": again.fixed is None}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--hazards", type=int, default=200)
    parser.add_argument("--profile", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.py")
        Path(path).write_text(make(args.lines, args.hazards))
        cmd = [sys.executable, "-c", CHILD, str(ROOT), path] + ([args.profile] if args.profile else [])
        start = time.perf_counter()
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
            return 1
        figures = json.loads(result.stdout.splitlines()[-1])
        figures["lines"] = args.lines
        figures["child_total_s"] = round(time.perf_counter() - start, 2)
        print(json.dumps(figures))
        ok = figures["internal_error"] is None and figures["idempotent"]
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
