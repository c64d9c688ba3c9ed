"""What the flake8 plugin costs a flake8 run with flake8's default selection (which includes
ROC), against flake8 with the plugin not registered, in the same run.

    python benchmarks/flake8_cost.py [--repeat N]

Cases, each a fresh ``python -m flake8 --isolated`` process run N times (median CPU time, user
+ system, from ``getrusage(RUSAGE_CHILDREN)``), alternated with its reference (the same
command with rocmport's entry point filtered out of flake8's plugins):

- ``plain``: 20 files that never mention torch, Triton or the rules' other trigger words;
- ``trigger word``: one such file that uses ``re.compile`` (``compile`` is a trigger of the
  ROC1xx rules: the engine and LibCST load, and find nothing);
- ``torch``: one file with a finding.

The target (issue 31): at most 0.05 s over the reference for ``plain``, as with
``--select E``. Nothing is asserted: the figures are printed, with the ratio to the reference.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from startup import _NO_PLUGIN, cpu_time  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PLAIN = ('"""A module of a project that has nothing to do with GPUs."""\n\nimport os\n\n\n'
         "def join_all(parts):\n    return os.path.join(*parts)\n\n\n"
         "class Store:\n    def __init__(self):\n        self.items = {}\n\n"
         "    def put(self, key, value):\n        self.items[key] = value\n")
TRIGGER = 'import re\n\nWORD = re.compile(r"\\w+")\n'
TORCH = 'import torch\n\nmodel = torch.compile(model, mode="reduce-overhead")\n'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    work = Path(tempfile.mkdtemp(prefix="rocmport-flake8-"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")  # .pyc written once, as an install has them
    try:
        version = subprocess.run([py, "-m", "flake8", "--version"], env=env, capture_output=True, text=True).stdout
        if "rocmport" not in version:
            print("the rocmport plugin is not registered with this flake8 (pip install -e . first)", file=sys.stderr)
            return 2
        plain = [f"plain_{i:02d}.py" for i in range(20)]
        for name in plain:
            (work / name).write_text(PLAIN)
        (work / "trigger.py").write_text(TRIGGER)
        (work / "model.py").write_text(TORCH)
        cases = [("plain (20 files)", plain), ("trigger word, no torch (1 file)", ["trigger.py"]),
                 ("torch, 1 finding (1 file)", ["model.py"])]
        print(f"flake8 --isolated (default selection), median CPU of {args.repeat} runs each")
        print(f"{'case':<34} {'plugin s':>9} {'reference s':>12} {'cost s':>8} {'ratio':>6}")
        for name, files in cases:
            on = [py, "-m", "flake8", "--isolated", "-j", "1", *files]
            off = [py, "-c", _NO_PLUGIN, "--isolated", "-j", "1", *files]
            for cmd in (on, off):  # .pyc and the OS file cache
                subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with_plugin, reference = [], []
            for _ in range(args.repeat):  # alternated: a slow moment of the machine hits both
                with_plugin.append(cpu_time(on, work, env))
                reference.append(cpu_time(off, work, env))
            a, b = statistics.median(with_plugin), statistics.median(reference)
            print(f"{name:<34} {a:9.3f} {b:12.3f} {a - b:+8.3f} {a / b:6.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
