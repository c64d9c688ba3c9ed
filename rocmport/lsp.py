"""The language server's analysis process.

``rocmport server`` (``rocmport.server``) reads the editor's messages and keeps the open
documents; every lint and every fix runs here, in one child process, so that the server goes
on reading messages while a big file is checked, and can stop a check that a newer version of
the document makes useless by ending this process (a thread could not be stopped, and LibCST's
native parser holds the interpreter lock for seconds on a big file). The process imports the
engine but not pygls or lsprotocol, so that a new one is ready in a few tenths of a second.

Requests and replies are pickled dicts, each after its length (8 bytes, little-endian), on
the process's standard input and output; anything else the process would print goes to its
standard error. A request names ``op`` (``lint``, ``fix_one``, ``fix_all``), the document's
``text`` (lone surrogates already replaced), its ``path`` (None for a buffer without a file),
``python`` (check it as Python whatever its name says) and the ``settings``. A reply holds
the result, or ``error`` (a traceback); ``seconds`` (what the request took here: the server
times the next debounce and decides whether stopping a check is worth a fresh process by it);
and ``rss`` (this process's resident bytes), by which the server starts a fresh process after
a big file.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import List, Optional, Tuple

LENGTH = struct.Struct("<Q")


def _rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _encode(text: str) -> bytes:
    from .source import encode_lines

    return encode_lines(text.splitlines(keepends=True))


def common_ends(old: str, new: str) -> Tuple[int, int]:
    """(prefix, suffix): the lengths of the longest common start and end of ``old`` and
    ``new`` that do not overlap, compared a slice at a time (C speed on megabyte texts)."""
    limit = min(len(old), len(new))
    low, high = 0, limit
    while low < high:  # the longest k with old[:k] == new[:k]
        middle = (low + high + 1) // 2
        if old[:middle] == new[:middle]:
            low = middle
        else:
            high = middle - 1
    prefix = low
    low, high = 0, limit - prefix
    while low < high:
        middle = (low + high + 1) // 2
        if old[len(old) - middle:] == new[len(new) - middle:]:
            low = middle
        else:
            high = middle - 1
    return prefix, low


def text_edit(old: str, new: str) -> List[Tuple[int, int, str]]:
    """The edit turning ``old`` into ``new`` (the changed middle only), as a list of
    (start, end, replacement): empty when they are the same."""
    if old == new:
        return []
    prefix, suffix = common_ends(old, new)
    return [(prefix, len(old) - suffix, new[prefix:len(new) - suffix])]


def apply_in_order(text: str, edits: List[Tuple[int, int, str]]) -> str:
    """``edits`` (sorted, not overlapping) applied as an LSP client applies a list of text
    edits: each against the original text; inserts at one point in the list's order."""
    out, at = [], 0
    for start, end, content in edits:
        out.append(text[at:start])
        out.append(content)
        at = end
    out.append(text[at:])
    return "".join(out)


def as_edits(old: str, base: str, edits, new: str) -> List[Tuple[int, int, str]]:
    """The engine's ``edits`` of ``base`` giving ``new``, as edits of the editor's ``old``:
    themselves where ``old`` is ``base`` and they give ``new`` applied as a client applies
    them (small edits, each where it belongs); else the one changed middle."""
    if old == base:
        ordered = [(e.start, e.end, e.content) for e in sorted(edits, key=lambda e: (e.start, e.end))]
        if all(a[1] <= b[0] for a, b in zip(ordered, ordered[1:])) and apply_in_order(old, ordered) == new:
            return ordered
    return text_edit(old, new)


def _checked(request: dict) -> Optional[str]:
    """How the document is checked: "python", "file" (by its kind: shell, Dockerfile, YAML,
    .env), or None (not at all: not a kind rocmport checks, or excluded by the configuration)."""
    path, settings = request["path"], request["settings"]
    how = "python" if request["python"] else None
    if how is None and path:
        from .filekinds import ENV_KINDS, HEAD_BYTES, file_kind

        if file_kind(path, request["text"][:HEAD_BYTES].encode("utf-8", "replace")) in ENV_KINDS:
            how = "file"
    if how is not None and path:
        from .discovery import Excluder

        if Excluder(settings).excluded(Path(path), False):
            return None
    return how


def _report(request: dict, fix: bool):
    from . import engine, inputs

    data = _encode(request["text"])
    path = request["path"] or "-"
    if request["how"] == "python":
        return engine.check_bytes(data, path, request["settings"], fix=fix)
    return inputs.check_bytes(data, path, request["settings"], fix=fix)


def _url(finding) -> Optional[str]:
    if finding.url:
        return finding.url
    from .docs import rule_url
    from .registry import rule_infos

    info = rule_infos().get(finding.code)
    return rule_url(info) if info is not None else None


def lint(request: dict) -> dict:
    how = _checked(request)
    if how is None:
        return {"checked": False, "findings": []}
    request["how"] = how
    report = _report(request, fix=False)
    unsafe = request["settings"].unsafe_fixes
    findings = [{
        "code": f.code, "message": f.message, "start": (f.start.row, f.start.column),
        "end": (f.end.row, f.end.column), "span": tuple(f.span), "url": _url(f),
        "fix": f.fix.applicability.value if f.fix is not None else None,
        "fix_message": f.fix.message if f.fix is not None else None,
        "applies": f.applies(unsafe) and how == "python",
    } for f in report.findings]
    return {"checked": True, "findings": findings, "internal_error": report.internal_error}


def fix_one(request: dict) -> dict:
    """The fix of one finding (``code`` at ``span``) alone, with the prelude it needs, as the
    engine's fix loop applies a fix: as edits of ``text`` (none when it does not apply, or
    would not parse: then ``problem`` says why) and the generated files it writes beside."""
    from . import fixing, linting
    from .source import SourceError, SourceText

    settings = request["settings"]
    path = request["path"] or "-"
    try:
        text = SourceText.from_bytes(_encode(request["text"])).text
    except SourceError:
        return {"edits": [], "files": {}}
    enabled, rules = linting.select_rules(settings, path)
    analysis = linting.analyze(text, path, settings, rules, enabled)
    if analysis.module is None:
        return {"edits": [], "files": {}}
    mine = [f for f in analysis.findings if f.code == request["code"] and tuple(f.span) == tuple(request["span"])
            and f.applies(settings.unsafe_fixes)]
    if not mine:
        return {"edits": [], "files": {}}
    new_text, files, problem, edits = fixing.apply_fixes(analysis, mine[:1], path, settings)
    if new_text is None:
        return {"edits": [], "files": {}, "problem": problem}
    return {"edits": as_edits(request["text"], text, edits, new_text), "files": files}


def fix_all(request: dict) -> dict:
    """What ``rocmport fix --write`` makes of the text, as an edit of it, and the generated
    files it writes beside."""
    from .source import SourceText

    how = _checked(request)
    if how != "python":
        return {"edits": [], "files": {}}
    request["how"] = how
    report = _report(request, fix=True)
    if report.fixed is None:
        return {"edits": [], "files": dict(report.extra_files or {})}
    new_text = SourceText.from_bytes(report.fixed).text
    return {"edits": text_edit(request["text"], new_text), "files": dict(report.extra_files or {})}


OPS = {"lint": lint, "fix_one": fix_one, "fix_all": fix_all}


def _read_exactly(stream, size: int) -> Optional[bytes]:
    chunks: List[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _waiting(stream) -> bool:
    """Whether a request is waiting on ``stream`` (False where that cannot be told)."""
    try:
        import select

        return bool(select.select([stream], [], [], 0)[0])
    except (OSError, ValueError, ImportError):
        return False


def warm_up(stream) -> None:
    """Lint each rule's first invalid case, until a request comes: the first lint in a fresh
    process pays for the code paths each rule family takes the first time (on torch's largest
    file, 5.6 s cold and 3.9 s after this, which takes 0.3 s)."""
    from . import engine
    from .config import Settings
    from .registry import visitor_rules

    settings = Settings()
    for rule in visitor_rules():
        if _waiting(stream):
            return
        for case in rule.INVALID[:1]:
            try:
                engine.check_bytes(case.code.encode("utf-8"), "warm_up.py", settings)
            except Exception:  # noqa: BLE001 - a warm-up never stops the process
                return


def main() -> None:
    """Serve requests until standard input closes (the server has gone or ended us)."""
    source = sys.stdin.buffer
    sink = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not reach the pipe
    from . import engine, inputs, process  # noqa: F401  (ready before the first request)
    from .registry import rule_infos

    process.own().__enter__()  # this child is rocmport's own process (``rocmport.process``)

    rule_infos()
    warm_up(source)
    while True:
        header = _read_exactly(source, LENGTH.size)
        if header is None:
            return
        body = _read_exactly(source, LENGTH.unpack(header)[0])
        if body is None:
            return
        started = time.perf_counter()
        try:
            request = pickle.loads(body)
            reply = OPS[request["op"]](request)
        except Exception as exc:  # a bug in rocmport: the server logs it and goes on
            reply = {"error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}"}
        reply["seconds"] = time.perf_counter() - started
        reply["rss"] = _rss()
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        sink.write(LENGTH.pack(len(data)))
        sink.write(data)
        sink.flush()
