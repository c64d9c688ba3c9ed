"""Torture run (issue 8): rocmport over every ``.py`` file of a real tree, on a copy.

    python benchmarks/torture.py [DIR ...] [--jobs N] [--limit N] [--keep] [--json]

DIR defaults to the installed torch package's directory (found without importing torch).
The ``.py`` files (and only those) are copied, keeping their layout, to a temporary
directory; the originals are only read. Then, on the copy:

1. ``fix`` in diff mode (the engine, as the CLI calls it, in a process pool): crashes and
   internal errors, fixed outputs that do not parse (LibCST; CPython's compiler too when the
   input compiled), ROC001 (unparseable input) and ROC002 (fix not applied) counts;
2. ``fix --write``: the engine and the atomic writer (what the CLI does) on the files phase 1
   changed, in the pool; or with ``--cli-write`` the CLI itself (``python -m rocmport fix
   --write``, with ``--jobs`` when the CLI has it) over the whole copy. Every written file
   must equal what diff mode computed, every other file its original;
3. idempotence: ``fix`` again on each written file must change nothing.

Targets: zero crashes, zero non-parsing outputs, zero non-idempotent files. Exit status 1
when any is not zero.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def default_dirs() -> List[str]:
    spec = importlib.util.find_spec("torch")  # locates the package; does not import it
    if spec is None or not spec.origin:
        sys.exit("torch is not installed: name a directory")
    return [os.path.dirname(spec.origin)]


def copy_tree(sources: List[str], dest: Path, limit: Optional[int]) -> List[str]:
    """Copy the .py files of each source (regular files only, links not followed)."""
    copied: List[str] = []
    for n, src in enumerate(sources):
        src_path = Path(src).resolve()
        base = dest / f"{n}-{src_path.name}"
        for directory, dirnames, filenames in os.walk(src_path):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                path = Path(directory) / name
                if path.is_symlink() or not path.is_file():
                    continue
                target = base / path.relative_to(src_path)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                copied.append(str(target))
                if limit and len(copied) >= limit:
                    return copied
    return copied


def _compiles(data: bytes) -> bool:
    from rocmport.source import SourceError, SourceText

    try:
        compile(SourceText.from_bytes(data).text, "<torture>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _parses(data: bytes) -> Optional[str]:
    import libcst as cst

    from rocmport.source import SourceError, SourceText

    try:
        cst.parse_module(SourceText.from_bytes(data).text)
    except (cst.ParserSyntaxError, SourceError, RecursionError) as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


_SETTINGS = None


def _settings():
    global _SETTINGS
    if _SETTINGS is None:
        from rocmport.config import Settings

        _SETTINGS = Settings()
    return _SETTINGS


def check_one(task: Tuple[str, str]) -> Dict:
    """Phase 1 (mode "diff") or 3 (mode "again") for one file, or "write" with the engine."""
    path, mode = task
    from rocmport.inputs import check_path

    out: Dict = {"path": path, "mode": mode}
    start = time.perf_counter()
    try:
        report = check_path(path, _settings(), fix=True)
    except BaseException as exc:  # noqa: BLE001 - any escape is a crash
        out["crash"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        out["seconds"] = time.perf_counter() - start
        return out
    out["seconds"] = time.perf_counter() - start
    if report.internal_error:
        out["crash"] = report.internal_error
    codes = Counter(f.code for f in report.findings)
    out["roc001"] = codes.get("ROC001", 0)
    out["roc002"] = codes.get("ROC002", 0)
    out["findings"] = sum(codes.values())
    out["fixes"] = report.fixes_applied
    out["changed"] = report.fixed is not None
    out["extra"] = sorted(report.extra_files)
    if report.fixed is not None:
        error = _parses(report.fixed)
        if error is None and report.original is not None and _compiles(report.original) \
                and not _compiles(report.fixed):
            error = "CPython cannot compile the fixed output (the input compiled)"
        if error:
            out["non_parsing"] = error
        out["fixed_hash"] = hashlib.sha256(report.fixed).hexdigest()
        if mode == "write":
            from rocmport.writer import write_atomic

            try:
                for extra, data in report.extra_files.items():
                    write_atomic(extra, data)
                write_atomic(path, report.fixed)
            except OSError as exc:
                out["write_error"] = str(exc)
    return out


def _cli_has_jobs() -> bool:
    proc = subprocess.run([sys.executable, "-m", "rocmport", "fix", "--help"], capture_output=True, text=True,
                          cwd=str(ROOT))
    return "--jobs" in proc.stdout


def run_pool(tasks, jobs: int, progress: str):
    results = []
    if jobs <= 1:
        for n, t in enumerate(tasks, 1):
            results.append(check_one(t))
            _progress(progress, n, len(tasks))
        return results
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for n, r in enumerate(pool.imap_unordered(check_one, tasks, chunksize=4), 1):
            results.append(r)
            _progress(progress, n, len(tasks))
    return results


def _progress(label: str, n: int, total: int) -> None:
    if sys.stderr.isatty() or n == total or n % 250 == 0:
        print(f"\r{label}: {n}/{total}", end="" if n < total else "\n", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="*")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=int, default=None, help="copy at most this many files (a subset)")
    parser.add_argument("--cli-write", action="store_true",
                        help="phase 2 runs the CLI (`rocmport fix --write`) over the whole copy instead of "
                             "the engine and the atomic writer on the files phase 1 changed")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    parser.add_argument("--json", action="store_true")
    ns = parser.parse_args()
    dirs = ns.dirs or default_dirs()

    tmp = Path(tempfile.mkdtemp(prefix="rocmport-torture-"))
    timing: Dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        files = copy_tree(dirs, tmp, ns.limit)
        timing["copy"] = time.perf_counter() - t0
        total_bytes = sum(os.path.getsize(f) for f in files)
        originals = {f: Path(f).read_bytes() for f in files}

        # 1. fix, diff mode
        t0 = time.perf_counter()
        first = run_pool([(f, "diff") for f in files], ns.jobs, "fix (diff)")
        timing["fix_diff"] = time.perf_counter() - t0
        by_path = {r["path"]: r for r in first}
        unchanged_on_disk = [f for f in files if Path(f).read_bytes() != originals[f]]

        # 2. fix --write
        t0 = time.perf_counter()
        cli = None
        if not ns.cli_write:
            written = run_pool([(f, "write") for f in files if by_path[f].get("changed")], ns.jobs, "fix --write")
            write_errors = [r for r in written if r.get("write_error") or r.get("crash")]
        else:
            # check every copied file, as phase 1 did: no default excludes
            (tmp / "rocmport.toml").write_text("exclude = []\n")
            cmd = [sys.executable, "-m", "rocmport", "fix", "--write", "--no-respect-gitignore",
                   "--config", str(tmp / "rocmport.toml")]
            if _cli_has_jobs():
                cmd += ["--jobs", str(ns.jobs)]
            tops = [str(tmp / d) for d in sorted(os.listdir(tmp)) if (tmp / d).is_dir()]
            cmd += tops
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(tmp))
            cli = {"command": " ".join(cmd[1:-len(tops)]) + " <copy>",
                   "exit": proc.returncode, "stderr_tail": proc.stderr[-3000:]}
            write_errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        timing["fix_write"] = time.perf_counter() - t0
        mismatched = []
        for f in files:
            data = Path(f).read_bytes()
            r = by_path[f]
            if r.get("changed"):
                if hashlib.sha256(data).hexdigest() != r.get("fixed_hash"):
                    mismatched.append(f)
            elif data != originals[f]:
                mismatched.append(f)

        # 3. idempotence
        t0 = time.perf_counter()
        # an unchanged file's bytes are what phase 1 checked: only changed files can move again
        again = run_pool([(f, "again") for f in files if by_path[f].get("changed")], ns.jobs, "fix again")
        timing["fix_again"] = time.perf_counter() - t0

        crashes = [r for r in first + again if r.get("crash")]
        non_parsing = [r for r in first if r.get("non_parsing")]
        non_idempotent = [r for r in again if r.get("changed") or r.get("extra")]
        slowest = sorted(first, key=lambda r: -r["seconds"])[:5]
        figures = {
            "dirs": dirs,
            "files": len(files),
            "megabytes": round(total_bytes / 1e6, 1),
            "jobs": ns.jobs,
            # after the fixes (what `fix` leaves for `lint` to report)
            "files_with_remaining_findings": sum(1 for r in first if r.get("findings")),
            "findings_remaining": sum(r.get("findings", 0) for r in first),
            "files_changed": sum(1 for r in first if r.get("changed")),
            "fixes_applied": sum(r.get("fixes", 0) for r in first),
            "roc001_unparseable_inputs": sum(1 for r in first if r.get("roc001")),
            "roc002_fixes_not_applied": sum(r.get("roc002", 0) for r in first),
            "crashes": len(crashes),
            "non_parsing": len(non_parsing),
            "non_idempotent": len(non_idempotent),
            "write_errors": len(write_errors),
            "written_differs_from_diff": len(mismatched),
            "diff_mode_wrote": len(unchanged_on_disk),
            "seconds": {k: round(v, 1) for k, v in timing.items()},
            "files_per_second_diff": round(len(files) / timing["fix_diff"], 1) if timing["fix_diff"] else None,
            "slowest": [(os.path.relpath(r["path"], tmp), round(r["seconds"], 2)) for r in slowest],
        }
        if cli:
            figures["cli"] = {"command": cli["command"], "exit": cli["exit"]}
        if ns.json:
            print(json.dumps(figures, indent=1))
        else:
            for key, value in figures.items():
                print(f"{key:>28}: {value}")
        for label, items in (("crash", crashes), ("non-parsing", non_parsing), ("non-idempotent", non_idempotent)):
            for r in items[:10]:
                detail = r.get("crash") or r.get("non_parsing") or ""
                print(f"[{label}] {os.path.relpath(r['path'], tmp)}: {detail[:800]}", file=sys.stderr)
        for f in mismatched[:10]:
            print(f"[write differs from diff] {os.path.relpath(f, tmp)}", file=sys.stderr)
        for line in write_errors[:10]:
            print(f"[write error] {line}", file=sys.stderr)
        if cli and cli["exit"] not in (0, 1):
            print(cli["stderr_tail"], file=sys.stderr)
        bad = crashes or non_parsing or non_idempotent or mismatched or unchanged_on_disk
        return 1 if bad else 0
    finally:
        if ns.keep:
            print(f"copy kept at {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
