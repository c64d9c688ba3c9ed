"""Long fuzzing runs of rocmport's fix properties (issue 8).

    python benchmarks/fuzz.py --examples 5000 [--jobs 2] [--spliced 0.5] [--full-prelude 0.1]
                              [--seed N] [--save DIR] [--time-limit SECONDS]

Generates modules with hypothesmith (by grammar and by LibCST node), splices hazard snippets
of every rule family into a share of them, varies line endings, BOM and form feeds, and
checks every example with ``tests.fuzzing.check`` (the properties of
``tests/test_properties.py``: no exception or internal error, the fixed output parses, a
second fix changes nothing, bytes outside the fixed spans are kept). Prints counts; with
``--save`` writes each failing input to DIR. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _TimeUp(BaseException):
    """Raised inside the test body when --time-limit is reached: hypothesis lets a
    BaseException through without shrinking, and the counts so far are reported."""


def _worker(args):
    index, examples, seed, spliced_share, full_share, save, deadline = args
    from hypothesis import HealthCheck, given, seed as hseed, settings
    from hypothesis import strategies as st

    from tests.fuzzing import CATEGORIES, check, encoded, generated_modules, spliced_modules

    counts = Counter()
    plain = encoded(generated_modules())
    spliced = encoded(spliced_modules())
    samples = []

    @hseed(seed + index)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck), phases=["generate"])
    @given(st.data(), st.sampled_from(range(1000)), st.sampled_from(range(1000)))
    def run(data, a, b):
        if deadline and time.time() > deadline:
            raise _TimeUp()
        is_spliced = a < spliced_share * 1000
        prelude_name = "default" if b < full_share * 1000 else "slim"
        source = data.draw(spliced if is_spliced else plain)
        counts["examples"] += 1
        if counts["examples"] % 250 == 0:
            print(f"worker {index}: {counts['examples']}/{examples} {dict(counts)}", file=sys.stderr, flush=True)
        counts["spliced" if is_spliced else "plain"] += 1
        counts[f"prelude-{prelude_name}"] += 1
        failure = check(source, prelude=prelude_name)
        if failure is None:
            return
        counts[failure.category] += 1
        if save:  # at once: a failure must survive whatever stops the run later
            out = Path(save)
            out.mkdir(parents=True, exist_ok=True)
            stem = f"w{index}-{counts['examples']}-{failure.category}"
            (out / f"{stem}.py").write_bytes(source)
            (out / f"{stem}.txt").write_text(failure.detail)
        if len(samples) < 20:
            samples.append((failure.category, failure.detail[:2000]))

    try:
        run()
    except BaseException as exc:  # noqa: BLE001 - _TimeUp, or hypothesis's complaint about it
        if deadline is None or time.time() <= deadline or isinstance(exc, KeyboardInterrupt):
            raise
        counts["stopped-by-time-limit"] += 1
    return dict(counts), samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--spliced", type=float, default=0.5, help="share of examples with hazards spliced in")
    parser.add_argument("--full-prelude", type=float, default=0.1,
                        help="share of examples fixed with the default (large) prelude; the rest use a slim one")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--save", default=None, help="directory for failing inputs")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="stop after this many seconds and report the examples checked so far")
    ns = parser.parse_args()

    from tests.fuzzing import CATEGORIES

    jobs = max(1, ns.jobs)
    shares = [ns.examples // jobs + (1 if i < ns.examples % jobs else 0) for i in range(jobs)]
    deadline = time.time() + ns.time_limit if ns.time_limit else None
    tasks = [(i, n, ns.seed, ns.spliced, ns.full_prelude, ns.save, deadline) for i, n in enumerate(shares) if n]
    start = time.perf_counter()
    if jobs == 1:
        results = [_worker(t) for t in tasks]
    else:
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = pool.map(_worker, tasks)
    elapsed = time.perf_counter() - start
    total = Counter()
    samples = []
    for counts, found in results:
        total.update(counts)
        samples.extend(found)
    figures = {"examples": total["examples"], "plain": total["plain"], "spliced": total["spliced"],
               "prelude-default": total["prelude-default"], "prelude-slim": total["prelude-slim"]}
    figures.update({c: total[c] for c in CATEGORIES})
    figures["stopped_by_time_limit"] = bool(total["stopped-by-time-limit"])
    figures["seconds"] = round(elapsed, 1)
    figures["seed"] = ns.seed
    if ns.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:>18}: {value}")
    for category, detail in samples[:5]:
        print(f"\n[{category}] {detail[:600]}", file=sys.stderr)
    return 1 if any(total[c] for c in CATEGORIES) else 0


if __name__ == "__main__":
    sys.exit(main())
