"""Start-up cost of rocmport's light commands, against a bare interpreter in the same run.

    python benchmarks/startup.py [--repeat N]

Each case runs N times in a fresh process; the figure is the median CPU time (user + system,
from ``getrusage(RUSAGE_CHILDREN)``) of one run, then the same minus a bare ``python -c pass``
measured in the same run, and the ratio between the two. The targets (issue 17): rocmport's
``--version``, ``rules``, ``rule CODE`` and a cache-hit lint of one file within 0.15 s of CPU
over the bare interpreter; the flake8 plugin at most 0.05 s over flake8 without it, for a
run that does not select ROC. Nothing is asserted: the numbers are printed.
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SOURCE = 'import torch\n\nmodel = torch.compile(model, mode="reduce-overhead")\n'
CLEAN = "def add(a, b):\n    return a + b\n"


def cpu_time(cmd, cwd, env) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(cmd, cwd, env, repeat: int) -> float:
    return statistics.median(cpu_time(cmd, cwd, env) for _ in range(repeat))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("ROCMPORT_CACHE_DIR", None)
    work = Path(tempfile.mkdtemp(prefix="rocmport-startup-"))
    # Bytecode as an installed package has it (pip compiles it at install): written once, into
    # a folder of the run's own, even where PYTHONDONTWRITEBYTECODE is set, so that the figures
    # are start-up, not the compilation of rocmport's sources on every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    try:
        (work / "model.py").write_text(SOURCE)
        (work / "clean.py").write_text(CLEAN)
        (work / "setup.cfg").write_text("[flake8]\n")
        rocmport = [py, "-m", "rocmport"]
        subprocess.run(rocmport + ["lint", "model.py"], cwd=work, env=env, stdout=subprocess.DEVNULL)  # warm cache
        for _ in range(2):  # warm the OS file cache and the .pyc files
            subprocess.run([py, "-c", "pass"], cwd=work, env=env)
        bare = median_cpu([py, "-c", "pass"], work, env, args.repeat)
        cases = [
            ("rocmport --version", rocmport + ["--version"]),
            ("rocmport rules", rocmport + ["rules"]),
            ("rocmport rule ROC101", rocmport + ["rule", "ROC101"]),
            ("rocmport lint (cache hit, 1 file)", rocmport + ["lint", "model.py"]),
            ("rocmport lint --no-cache (1 file)", rocmport + ["lint", "--no-cache", "model.py"]),
        ]
        print(f"median CPU of {args.repeat} runs; bare `python -c pass`: {bare:.3f} s")
        print(f"{'case':<42} {'CPU s':>7} {'over bare':>10} {'x bare':>7}")
        for name, cmd in cases:
            subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # .pyc
            t = median_cpu(cmd, work, env, args.repeat)
            print(f"{name:<42} {t:7.3f} {t - bare:10.3f} {t / bare:7.1f}")
        flake8 = ["--select", "E", "clean.py"]
        for cmd in ([py, "-m", "flake8", *flake8], [py, "-c", _NO_PLUGIN, *flake8]):  # their .pyc too
            subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with_plugin = median_cpu([py, "-m", "flake8", *flake8], work, env, args.repeat)
        without = median_cpu([py, "-c", _NO_PLUGIN, *flake8], work, env, args.repeat)
        print(f"{'flake8 --select E, rocmport plugin on':<42} {with_plugin:7.3f} {with_plugin - bare:10.3f} "
              f"{with_plugin / bare:7.1f}")
        print(f"{'flake8 --select E, plugin not registered':<42} {without:7.3f} {without - bare:10.3f} "
              f"{without / bare:7.1f}")
        print(f"plugin cost on a run that does not select ROC: {with_plugin - without:+.3f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


# flake8 with the rocmport entry point filtered out of the installed plugins, to compare.
_NO_PLUGIN = """
import sys
import flake8.plugins.finder as finder
_find = finder._find_importlib_plugins
def _without_rocmport():
    for plugin in _find():
        if plugin.package != "rocmport":
            yield plugin
finder._find_importlib_plugins = _without_rocmport
from flake8.main.cli import main
sys.exit(main(sys.argv[1:]))
"""

if __name__ == "__main__":
    sys.exit(main())
