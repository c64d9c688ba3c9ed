"""The language server on big files, driven over stdio as an editor drives it.

    python benchmarks/lsp_bench.py [--before REF_OR_DIR] [--files N] [--keystrokes K]

For each of the N largest ``.py`` files of the installed torch package (copied into a
temporary folder with no configuration, so that every server sees the same text under the
same default settings), each server -- the one of ``--before`` (a git ref of this repository,
or a directory to put on ``PYTHONPATH``) and this working tree's -- is started fresh
(``python -m rocmport server``) and sent: ``initialize``; ``didOpen``; once the diagnostics of
the opened version are in, K keystrokes 100 ms apart (incremental ``didChange``: ``# typing``
typed character by character on a blank line near the middle of the file, so every version
parses); a ``codeAction`` at the cursor, where there is no finding; ``shutdown``; ``exit``.

Printed per server and file: seconds from ``didOpen`` to its diagnostics; seconds from the last
keystroke to the diagnostics of the last version; how many diagnostics were published for a
version older than the last after the burst began (stale); the code action's seconds; CPU
seconds (user + system) of the server and its children, during the burst, for the code
action and in all; the peak resident memory of the server with its children, summed, sampled
every 50 ms; the server process's own peak; and what the two hold a second after the code
action. Nothing is asserted: the numbers are printed (``--json FILE`` also writes them).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[1]
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# ------------------------------------------------------------------------------------------
# A raw LSP client over a pipe
# ------------------------------------------------------------------------------------------

class Client:
    def __init__(self, cmd: List[str], cwd: str, env: Dict[str, str]):
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.ids = itertools.count(1)
        self.responses: Dict[int, "queue.Queue"] = {}
        self.notifications: "queue.Queue" = queue.Queue()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode("utf-8")
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if length is None:
                continue
            message = json.loads(stream.read(length))
            now = time.perf_counter()
            if "method" in message and "id" in message:  # a request from the server
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.put((now, message))
            else:
                self.responses.setdefault(message["id"], queue.Queue()).put((now, message))

    def request(self, method: str, params, timeout: float = 600.0):
        ident = next(self.ids)
        box = self.responses.setdefault(ident, queue.Queue())
        sent = time.perf_counter()
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        got, message = box.get(timeout=timeout)
        return got - sent, message

    def notify(self, method: str, params) -> float:
        sent = time.perf_counter()
        self._send({"jsonrpc": "2.0", "method": method, "params": params})
        return sent

    def diagnostics(self, uri: str, version: int, timeout: float = 600.0):
        """(arrival time, stale publications seen) once ``version``'s diagnostics arrive."""
        stale = 0
        deadline = time.perf_counter() + timeout
        while True:
            got, message = self.notifications.get(timeout=max(0.0, deadline - time.perf_counter()))
            if message["method"] != "textDocument/publishDiagnostics" or message["params"]["uri"] != uri:
                continue
            published = message["params"].get("version")
            if published == version:
                return got, stale, message["params"]["diagnostics"]
            if published is not None and published < version:
                stale += 1


# ------------------------------------------------------------------------------------------
# CPU and memory of a process tree (Linux /proc)
# ------------------------------------------------------------------------------------------

def _tree(pid: int) -> List[int]:
    children: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the process tree; reaped children count through the parent."""
    total = 0.0
    for index, p in enumerate(_tree(pid)):
        try:
            with open(f"/proc/{p}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks = int(fields[11]) + int(fields[12])  # utime, stime
        if index == 0:
            ticks += int(fields[13]) + int(fields[14])  # cutime, cstime: children waited for
        total += ticks / TICKS
    return total


def rss_bytes(pid: int) -> int:
    total = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/statm") as handle:
                total += int(handle.read().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


def own_peak(pid: int) -> int:
    """The process's own peak resident memory (VmHWM), children not counted."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakMemory(threading.Thread):
    """The peak of the process tree's summed resident memory, sampled every 50 ms."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            self.stop.wait(0.05)


# ------------------------------------------------------------------------------------------
# One editor session
# ------------------------------------------------------------------------------------------

def typing_line(text: str) -> int:
    """A blank line near the middle of ``text`` (at module level or inside a block)."""
    lines = text.split("\n")
    middle = len(lines) // 2
    for distance in range(len(lines)):
        for line in (middle + distance, middle - distance):
            if 0 <= line < len(lines) - 1 and lines[line].strip() == "" and "\r" not in lines[line]:
                return line
    raise SystemExit("no blank line to type on")


def session(python_path: str, file: Path, work: Path, keystrokes: int, interval: float) -> dict:
    env = dict(os.environ, PYTHONPATH=python_path)
    env.pop("ROCMPORT_CACHE_DIR", None)
    client = Client([sys.executable, "-m", "rocmport", "server"], str(work), env)
    peak = PeakMemory(client.proc.pid)
    peak.start()
    try:
        client.request("initialize", {"processId": os.getpid(), "rootUri": work.as_uri(), "capabilities": {}})
        client.notify("initialized", {})
        text = file.read_text(encoding="utf-8")
        uri = file.as_uri()
        sent = client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        got, _, diagnostics = client.diagnostics(uri, 1)
        opened = got - sent
        line = typing_line(text)
        cpu_before = cpu_seconds(client.proc.pid)
        version = 1
        last = 0.0
        for index, char in enumerate("# typing"[:keystrokes] if keystrokes <= 8 else "#" + "x" * (keystrokes - 1)):
            if index:
                time.sleep(interval)
            version += 1
            last = client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": {"line": line, "character": index},
                                              "end": {"line": line, "character": index}}, "text": char}]})
        got, stale, _ = client.diagnostics(uri, version)
        keystroke = got - last
        cpu_burst = cpu_seconds(client.proc.pid) - cpu_before
        cursor = {"line": line, "character": 1}
        cpu_before = cpu_seconds(client.proc.pid)
        action, reply = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": cursor, "end": cursor},
            "context": {"diagnostics": []}})
        cpu_action = cpu_seconds(client.proc.pid) - cpu_before
        cpu_total = cpu_seconds(client.proc.pid)
        server_peak = own_peak(client.proc.pid)
        time.sleep(1.0)  # what stays resident once the work is done
        resident = rss_bytes(client.proc.pid)
        client.request("shutdown", None)
        client.notify("exit", None)
        client.proc.wait(timeout=60)
        return {"open_s": round(opened, 3), "keystroke_s": round(keystroke, 3), "stale": stale,
                "code_action_s": round(action, 3), "code_action_error": "error" in reply,
                "cpu_burst_s": round(cpu_burst, 2), "cpu_code_action_s": round(cpu_action, 2),
                "cpu_total_s": round(cpu_total, 2), "peak_rss_mib": round(peak.peak / 2**20),
                "server_peak_rss_mib": round(server_peak / 2**20), "idle_rss_mib": round(resident / 2**20),
                "findings": len(diagnostics)}
    finally:
        peak.stop.set()
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()


def torch_files(count: int) -> List[Path]:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(root.rglob("*.py"), key=lambda p: p.stat().st_size, reverse=True)
    return files[:count]


def server_root(spec: str, scratch: Path) -> str:
    """A directory holding the ``rocmport`` package of ``spec`` (a directory, or a git ref)."""
    if os.path.isdir(spec):
        return os.path.abspath(spec)
    target = scratch / "before"
    target.mkdir()
    archive = subprocess.run(["git", "archive", spec, "rocmport"], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return str(target)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="a git ref of this repository, or a directory holding rocmport/")
    parser.add_argument("--files", type=int, default=5, help="how many of torch's largest files")
    parser.add_argument("--keystrokes", type=int, default=5)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between keystrokes")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="rocmport-lsp-bench-"))
    try:
        servers = [("after", str(REPO))]
        if args.before:
            servers.insert(0, ("before", server_root(args.before, scratch)))
        work = scratch / "work"
        work.mkdir()
        rows = []
        for source in torch_files(args.files):
            file = work / source.name
            shutil.copyfile(source, file)
            for label, root in servers:
                figures = session(root, file, work, args.keystrokes, args.interval)
                row = {"server": label, "file": source.as_posix().split("/site-packages/")[-1],
                       "bytes": source.stat().st_size, **figures}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
            file.unlink()
        header = ["server", "file", "KB", "open s", "last keystroke to diagnostics s", "stale published",
                  "code action s", "CPU burst s", "CPU code action s", "CPU total s", "peak RSS MiB",
                  "server's own peak MiB", "RSS after MiB"]
        print("| " + " | ".join(header) + " |")
        print("|" + " --- |" * len(header))
        for r in rows:
            print(f"| {r['server']} | {r['file']} | {r['bytes'] // 1000:,} | {r['open_s']} | {r['keystroke_s']} | "
                  f"{r['stale']} | {r['code_action_s']}{' (error)' if r['code_action_error'] else ''} | "
                  f"{r['cpu_burst_s']} | {r['cpu_code_action_s']} | {r['cpu_total_s']} | {r['peak_rss_mib']} | "
                  f"{r['server_peak_rss_mib']} | {r['idle_rss_mib']} |")
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
