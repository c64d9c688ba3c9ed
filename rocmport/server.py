"""``rocmport server``: a Language Server Protocol server over stdio (pygls, the ``server``
extra: ``pip install "rocmport[server] @ git+https://github.com/rocmport/rocmport@<commit>"``).

It publishes rocmport's findings as diagnostics when a document is opened, changed or saved
(the editor's text, unsaved changes included), under the same ``[tool.rocmport]``
configuration the command line finds from the file's directory, and offers code actions:

- one ``quickfix`` per finding whose fix the configuration would apply (safe fixes; unsafe
  ones too with ``unsafe-fixes = true``), which also inserts the rocmport prelude the fix
  needs, exactly as ``rocmport fix`` would for that finding alone;
- "Fix all rocmport findings" (kind ``source.fixAll.rocmport``, also listed as a quick fix):
  the result of ``rocmport fix --write`` on the buffer;
- the command ``rocmport.fixAll`` (argument: the document URI), which asks the editor to
  apply the same edit through ``workspace/applyEdit``.

Files the configuration excludes are left alone, as ``--force-exclude`` does; a buffer the
editor calls Python (``languageId`` "python": an untitled buffer, a script without ``.py``)
is checked as Python. Positions are converted to the encoding the client negotiated (UTF-16
by default), on lines as LSP counts them (``\\n``, ``\\r\\n``, ``\\r``).

How it stays responsive on big files (docs/performance.md has the figures):

- every lint and fix runs in one child process (``rocmport.lsp``); this process only reads
  messages, keeps the documents and answers, so it reads new messages while a file is checked;
- a change is checked after a pause in typing (``DEBOUNCE`` seconds; longer for a file whose
  last check was slow); a check of a version that a newer one has replaced is stopped (the
  child is ended, and a fresh one started, when that saves time) or its result dropped:
  diagnostics are never published for an older version than the document's;
- code actions are answered from the last analysis: nothing is checked again for them. When
  that analysis is of an older version, a finding (and its fix) is offered only where the
  text it covers and its fix's edits are unchanged since; the fixes themselves are made when
  asked (``codeAction/resolve``, where the client can resolve the edit), and kept per version;
- one analysis is kept per open document, dropped when it is closed; the child process is
  replaced after a file that grew it past ``RECYCLE_BYTES``.

Protocol faults are survived: a message whose ``Content-Length`` header is missing, malformed
or wrong is skipped or recovered and the next header found again; positions outside the
document are clamped to it; a lone surrogate in the text is checked as U+FFFD; a broken
configuration is reported once per change of the configuration file.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import json
import logging
import os
import pickle
import queue
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from . import __version__
from .config import ConfigError, Settings, load_settings
from .lsp import common_ends
from .source import read_regular

SOURCE = "rocmport"
FIX_ALL_KIND = "source.fixAll.rocmport"
FIX_ALL_COMMAND = "rocmport.fixAll"
PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
CONFIG_NAMES = ("rocmport.toml", ".rocmport.toml", "pyproject.toml")  # config.find_config's order

DEBOUNCE = 0.15  # seconds of quiet after a change before it is checked
SLOW_DEBOUNCE = 0.3  # for a document whose last check took SLOW seconds or more
SLOW = 0.5
RESPAWN_SECONDS = 0.5  # about what a fresh child costs before it checks anything
RECYCLE_BYTES = 320 * 2**20  # a child this large after a job is replaced

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------
# Text as LSP sees it: lines, positions in the negotiated encoding, clamped
# ------------------------------------------------------------------------------------------

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SURROGATE = re.compile("[\ud800-\udfff]")


class Text:
    """An immutable document text with its line starts (made on first use)."""

    __slots__ = ("text", "_starts")

    def __init__(self, text: str):
        self.text = text
        self._starts: Optional[List[int]] = None

    @property
    def starts(self) -> List[int]:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in _LINE_BREAK.finditer(self.text)]
        return self._starts

    def line_end(self, line: int) -> int:
        """Offset of the end of ``line``'s content (before its terminator)."""
        starts = self.starts
        if line + 1 >= len(starts):
            return len(self.text)
        end = starts[line + 1]
        if self.text[end - 1] == "\n":
            end -= 1
            if end > starts[line] and self.text[end - 1] == "\r":
                end -= 1
        elif self.text[end - 1] == "\r":
            end -= 1
        return end

    def offset(self, position: types.Position, encoding: str) -> int:
        """The offset of a client position, clamped to the text (a line past the end is the
        end of the text; a character past the end of its line, the end of that line)."""
        starts = self.starts
        line = max(0, position.line)
        if line >= len(starts):
            return len(self.text)
        start, end = starts[line], self.line_end(line)
        wanted = max(0, position.character)
        content = self.text[start:end]
        if content.isascii() or encoding == types.PositionEncodingKind.Utf32:
            return start + min(wanted, len(content))
        units = 0
        for index, char in enumerate(content):
            if units >= wanted:
                return start + index
            units += _units(char, encoding)
        return end

    def position(self, offset: int, encoding: str) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        return types.Position(line=line, character=_units(self.text[start:offset], encoding))

    def offset_of(self, row: int, column: int) -> int:
        """Offset of rocmport's 1-based row and code-point column (clamped)."""
        starts = self.starts
        if row - 1 >= len(starts):
            return len(self.text)
        line = max(0, row - 1)
        return min(starts[line] + max(0, column - 1), self.line_end(line))

    def range(self, start: int, end: int, encoding: str) -> types.Range:
        return types.Range(start=self.position(start, encoding), end=self.position(end, encoding))


def _units(text: str, encoding: str) -> int:
    if text.isascii() or encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (which no file can hold) as U+FFFD: the same length
    in code points and in UTF-16 and UTF-8 units, so positions do not move."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


# ------------------------------------------------------------------------------------------
# Reading messages: resynchronise on a malformed or wrong Content-Length
# ------------------------------------------------------------------------------------------

_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,15})[ \t]*\r?\n", re.IGNORECASE)
_HEADER_LINE = re.compile(rb"[A-Za-z0-9-]+[ \t]*:[^\r\n]*\r?\n")
_BLANK_LINE = re.compile(rb"\r?\n")
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")')
STALL = 0.2  # seconds without new bytes before a short body is looked at on its own


class Frames:
    """The messages of an LSP byte stream, one JSON object at a time.

    Bytes before a well-formed ``Content-Length`` header line are skipped (a header block
    whose length is missing or malformed, and its body, go with them), so the next message is
    found again. A body is the declared number of bytes, except where the length lies: a
    body can never hold a raw ``Content-Length: N`` line (raw line breaks occur in JSON only
    between tokens), so one found in it starts the next message and the body ends there; a
    body that stops coming once it holds a whole JSON object is taken as it is; a body too
    short to parse is completed with the bytes that follow it, up to the next header. What
    cannot be read is dropped, and reported to ``on_garbage`` with the request id it seems to
    carry (so that the request can be answered with an error)."""

    def __init__(self, stream, on_garbage: Callable[[Any], None] = lambda ident: None):
        self.stream = stream
        self.buffer = bytearray()
        self.chunks: "queue.Queue[bytes]" = queue.Queue()
        self.eof = False
        self.on_garbage = on_garbage
        threading.Thread(target=self._pump, name="rocmport-stdin", daemon=True).start()

    def _pump(self) -> None:
        # the descriptor itself: a daemon thread must not hold a buffered stream's lock when
        # the interpreter exits (it aborts)
        try:
            fd = self.stream.fileno()

            def read(size: int) -> bytes:
                return os.read(fd, size)
        except (AttributeError, OSError, ValueError):
            read = getattr(self.stream, "read1", None) or self.stream.read
        while True:
            try:
                chunk = read(1 << 16)
            except (OSError, ValueError):
                chunk = b""
            self.chunks.put(chunk)
            if not chunk:
                return

    def _more(self, timeout: Optional[float] = None) -> bool:
        """Wait for bytes; False at the end of the input or when ``timeout`` passes."""
        if self.eof:
            return False
        try:
            chunk = self.chunks.get(timeout=timeout)
        except queue.Empty:
            return False
        added = False
        while True:
            if not chunk:
                self.eof = True
                return added
            self.buffer += chunk
            added = True
            try:
                chunk = self.chunks.get_nowait()
            except queue.Empty:
                return True

    def next(self) -> Optional[dict]:
        """The next message (a JSON object), or None at the end of the input."""
        while True:
            body = self._body()
            if body is None:
                return None
            value = self._parse(body)
            if value is not None:
                return value

    def _header(self) -> Optional[Tuple[int, int]]:
        """(declared length, offset of the body) of the first header block in the buffer,
        whatever precedes it dropped; None while none is complete."""
        while True:
            match = _HEADER.search(self.buffer)
            if match is None:
                keep = max(0, len(self.buffer) - 64)  # what may be the start of a header line
                self._drop(keep)
                return None
            length, position = int(match.group(1)), match.end() - match.start()
            self._drop(match.start())
            while True:
                blank = _BLANK_LINE.match(self.buffer, position)
                if blank is not None:
                    return length, blank.end()
                line = _HEADER_LINE.match(self.buffer, position)
                if line is not None and not _HEADER.match(self.buffer, position):
                    position = line.end()  # another header (Content-Type)
                    continue
                if line is None and b"\n" not in self.buffer[position:]:
                    return None  # the header block is still coming
                self._drop(position)  # not a header block: look for the next one
                break

    def _body(self) -> Optional[bytes]:
        while True:
            header = self._header()
            if header is None:
                if not self._more():
                    if self.buffer.strip():
                        self._drop(len(self.buffer))
                    return None
                continue
            length, start = header
            searched, stalled = start, False
            while True:
                end = min(len(self.buffer), start + length)
                lie = _HEADER.search(self.buffer, max(start, searched - 40), end)
                searched = end
                if lie is not None:  # the next message began inside the declared body
                    body = bytes(self.buffer[start:lie.start()])
                    del self.buffer[:lie.start()]
                    return body
                if end == start + length or self.eof or (stalled and _whole_object(self.buffer[start:end])):
                    body = bytes(self.buffer[start:end])
                    del self.buffer[:end]
                    return body
                stalled = not self._more(timeout=STALL)

    def _parse(self, body: bytes) -> Optional[dict]:
        value = _json(body)
        if value is None:
            # too short a length: the rest of the body may follow, before the next header
            match = _HEADER.search(self.buffer)
            rest = bytes(self.buffer[:match.start() if match else len(self.buffer)])
            if rest.strip():
                value = _json(body + rest)
                if value is not None:
                    del self.buffer[:len(rest)]
        if isinstance(value, dict):
            return value
        self._garbage(body)
        return None

    def _drop(self, size: int) -> None:
        if size <= 0:
            return
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        self._garbage(data)

    def _garbage(self, data: bytes) -> None:
        if not data.strip():
            return
        logger.warning("rocmport: skipped %d bytes that are not an LSP message", len(data))
        if b'"method"' in data:
            match = _ID.search(data)
            if match is not None:
                try:
                    self.on_garbage(json.loads(match.group(1)))
                except ValueError:
                    pass


def _json(body: bytes) -> Optional[Any]:
    try:
        text = body.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        text = body.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _whole_object(data) -> bool:
    stripped = bytes(data).strip()
    return stripped.startswith(b"{") and stripped.endswith(b"}") and isinstance(_json(stripped), dict)


UINTEGER_MAX = 2**31 - 1


def clamp_positions(value: Any) -> Any:
    """Positions (``{"line", "character"}``) brought into LSP's unsigned range, so that a
    request with an absurd one is answered (clamped to the document) instead of dropped."""
    if isinstance(value, dict):
        if set(value) == {"line", "character"}:
            for key in ("line", "character"):
                number = value[key]
                if isinstance(number, int) and not isinstance(number, bool):
                    value[key] = max(0, min(number, UINTEGER_MAX))
            return value
        for item in value.values():
            clamp_positions(item)
    elif isinstance(value, list):
        for item in value:
            clamp_positions(item)
    return value


# ------------------------------------------------------------------------------------------
# The analysis process
# ------------------------------------------------------------------------------------------

class Superseded(Exception):
    """The job was stopped (its process ended) because a newer version replaced it."""


class WorkerError(Exception):
    """The analysis process failed or died."""


@dataclass
class _Job:
    owner: Tuple[str, str]  # (uri, "lint" | "fix")
    started: float
    process: Any
    estimate: float = 0.0
    stopped: bool = False


class Worker:
    """One analysis process (``rocmport.lsp``), one job at a time, in order of asking."""

    def __init__(self):
        self.lock = asyncio.Lock()
        self.process = None
        self.starting: Optional[asyncio.Task] = None
        self.job: Optional[_Job] = None

    def start(self) -> None:
        """Start a process now, ready for the next job."""
        if self.starting is None:
            self.starting = asyncio.ensure_future(self._spawn())

    async def _spawn(self):
        # this rocmport, wherever it was imported from (added to the path only where the
        # child's path lacks it, so that nothing else is shadowed)
        parent = str(Path(__file__).resolve().parent.parent)
        code = (f"import sys; p = {parent!r}; p in sys.path or sys.path.insert(0, p); "
                "from rocmport.lsp import main; main()")
        return await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)

    async def _process(self):
        if self.process is None or self.process.returncode is not None:
            self.start()
            starting, self.starting = self.starting, None
            try:
                self.process = await starting
            except OSError as exc:
                raise WorkerError(f"cannot start the analysis process: {exc}") from None
        return self.process

    def stop_if(self, test: Callable[[_Job], bool]) -> bool:
        """End the running job's process when ``test`` says so (a fresh one is started)."""
        job = self.job
        if job is None or job.stopped or not test(job):
            return False
        job.stopped = True
        self._end(job.process)
        return True

    def _end(self, process) -> None:
        if process.returncode is None:
            try:
                process.kill()
            except ProcessLookupError:
                pass
        asyncio.ensure_future(process.wait())  # reaped: no zombie, its CPU counted
        if self.process is process:
            self.process = None
            self.start()

    async def call(self, owner: Tuple[str, str], make: Callable[[], Optional[dict]], estimate: float = 0.0):
        """Run the request ``make()`` returns once this job's turn comes (None: no longer
        wanted; the call returns None)."""
        async with self.lock:
            request = make()
            if request is None:
                return None
            process = await self._process()
            job = self.job = _Job(owner, time.monotonic(), process, estimate)
            try:
                data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
                process.stdin.write(len(data).to_bytes(8, "little"))
                process.stdin.write(data)
                await process.stdin.drain()
                size = int.from_bytes(await process.stdout.readexactly(8), "little")
                reply = pickle.loads(await process.stdout.readexactly(size))
            except asyncio.CancelledError:
                self._end(process)  # its reply would come to the next job
                raise
            except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
                if job.stopped:
                    raise Superseded() from None
                self._end(process)
                raise WorkerError(f"the analysis process ended: {exc}") from None
            finally:
                self.job = None
            if reply.get("rss", 0) > RECYCLE_BYTES:
                self._end(process)
            if "error" in reply:
                raise WorkerError(reply["error"])
            return reply

    def close(self) -> None:
        processes = [self.process]
        if self.starting is not None and self.starting.done() and not self.starting.exception():
            processes.append(self.starting.result())
        for process in processes:
            if process is not None and process.returncode is None:
                try:
                    process.kill()
                except ProcessLookupError:
                    pass


# ------------------------------------------------------------------------------------------
# Documents and their analyses
# ------------------------------------------------------------------------------------------

@dataclass
class Analysis:
    """The last analysis of a document: of ``version``, whose text was ``text``."""

    version: Optional[int]
    text: Text
    checked: bool
    findings: List[dict]
    settings: Settings
    fixes: Dict[Tuple[str, Tuple[int, int]], Optional[dict]] = field(default_factory=dict)


@dataclass
class Document:
    uri: str
    language_id: str
    version: Optional[int]
    text: Text
    analysis: Optional[Analysis] = None
    timer: Optional[asyncio.TimerHandle] = None
    task: Optional[asyncio.Task] = None
    wanted: bool = False
    seconds: Optional[float] = None  # how long its last check took
    fix_all: Optional[Tuple[Text, Optional[dict]]] = None  # (the text it fixed, reply)
    # how much of the start and of the end of the analysis's text the current text keeps
    same: Tuple[int, int] = (0, 0)
    path: Optional[str] = None

    def __post_init__(self) -> None:
        if self.uri.startswith("file:"):
            from pygls.uris import to_fs_path

            self.path = to_fs_path(self.uri)

    def change(self, changes: Sequence, encoding: str) -> None:
        """Apply the editor's changes, and follow the region where the text now differs from
        that of the last analysis."""
        text = self.text
        prefix, suffix = self.same
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = text.offset(change.range.start, encoding)
                end = text.offset(change.range.end, encoding)
                start, end = min(start, end), max(start, end)
                prefix, suffix = min(prefix, start), min(suffix, len(text.text) - end)
                text = Text(text.text[:start] + change.text + text.text[end:])
            else:
                new = Text(change.text)
                if self.analysis is not None:
                    prefix, suffix = common_ends(self.analysis.text.text, new.text)
                text = new
        self.text, self.same = text, (prefix, suffix)

    def mapping(self, analysis: "Analysis") -> Mapping:
        return Mapping(len(analysis.text.text), len(self.text.text), self.same)

    @property
    def checked_as_python(self) -> bool:
        path = self.path or ""
        return path.endswith(PYTHON_SUFFIXES) or self.language_id == "python"

    @property
    def may_check(self) -> bool:
        """Files, and untitled buffers the editor calls Python."""
        return self.uri.startswith("file:") or (self.uri.startswith("untitled:") and self.language_id == "python")

    def estimate(self) -> float:
        return self.seconds if self.seconds is not None else len(self.text.text) / 400_000


class Protocol(LanguageServerProtocol):
    """pygls's protocol, without its own copy of the documents (the server keeps them, on
    LSP's lines, with clamped positions): the handlers below are the server's."""

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


class Server(LanguageServer):
    def __init__(self):
        super().__init__("rocmport", __version__, protocol_cls=Protocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.documents: Dict[str, Document] = {}
        self.worker: Optional[Worker] = None
        self._settings: Dict[Tuple[str, tuple], Tuple[Settings, Optional[str]]] = {}
        self._digests: Dict[str, Tuple[Tuple[int, ...], str]] = {}
        self._said: set = set()  # (configuration state, message) already shown

    # -- messages ----------------------------------------------------------------------------
    def start_io(self, stdin=None, stdout=None):
        """pygls's stdio loop, with :class:`Frames` reading the messages."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        status = 0
        try:
            asyncio.run(self._serve(stdin or sys.stdin.buffer))
        except BrokenPipeError:
            logger.error("Connection to the client is lost! Shutting down the server.")
        except KeyboardInterrupt:
            pass
        except SystemExit as exc:  # the exit notification: 0 after shutdown, else 1
            status = exc.code if isinstance(exc.code, int) else 0
        finally:
            if self.worker is not None:
                self.worker.close()
            self.shutdown()
        if status:
            sys.exit(status)

    async def _serve(self, stdin) -> None:
        loop = asyncio.get_running_loop()
        messages: "asyncio.Queue[Optional[dict]]" = asyncio.Queue()
        frames = Frames(stdin, on_garbage=lambda ident: loop.call_soon_threadsafe(
            self._error, ident, -32700, "rocmport: the message could not be read (its header or JSON is malformed)"))

        def read() -> None:  # a daemon thread: nothing waits for it at exit
            while True:
                value = frames.next()
                loop.call_soon_threadsafe(messages.put_nowait, value)
                if value is None:
                    return

        threading.Thread(target=read, name="rocmport-messages", daemon=True).start()
        self.worker = Worker()
        self.worker.start()
        while not self._stop_event.is_set():
            value = await messages.get()
            if value is None:
                break
            self._handle(value)

    def _handle(self, value: dict) -> None:
        try:
            message = self.protocol.structure_message(clamp_positions(value))
        except Exception as exc:
            if "method" in value and "id" in value:
                self._error(value.get("id"), -32602, f"rocmport: invalid request: {exc.__cause__ or exc}")
            else:
                logger.warning("rocmport: skipped a message that does not fit the protocol: %s", exc)
            return
        if message is value:  # not JSON-RPC
            return
        self.protocol.handle_message(message)

    def _error(self, ident, code: int, message: str) -> None:
        if ident is None:
            return
        self.protocol._send_data({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})

    def report_server_error(self, error: Exception, source) -> None:
        """Errors go to the log (window/logMessage), never a popup on every keystroke."""
        self.window_log_message(types.LogMessageParams(types.MessageType.Error, f"rocmport: {error}"))

    def log(self, text: str, kind=types.MessageType.Log) -> None:
        self.window_log_message(types.LogMessageParams(kind, text))

    # -- settings ----------------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        try:
            return self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        except RuntimeError:
            return types.PositionEncodingKind.Utf16

    def _root(self) -> str:
        try:
            return self.workspace.root_path or os.getcwd()
        except RuntimeError:
            return os.getcwd()

    def _digest(self, path: str) -> Optional[str]:
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        known = self._digests.get(path)
        if known is None or known[0] != stamp:
            try:
                digest = hashlib.sha256(read_regular(path)).hexdigest()
            except OSError:
                digest = "unreadable"
            known = self._digests[path] = (stamp, digest)
        return known[1]

    def config_state(self, start: Path) -> tuple:
        """What the configuration found from ``start`` depends on: each candidate file and a
        hash of its content."""
        state = []
        for directory in (start, *start.parents):
            for name in CONFIG_NAMES:
                candidate = str(directory / name)
                digest = self._digest(candidate)
                if digest is not None:
                    state.append((candidate, digest))
        return tuple(state)

    def settings_for(self, path: Optional[str]) -> Settings:
        """The settings for ``path`` (the workspace's for a buffer without a file). A broken
        configuration is shown once per change of the configuration files; until it is
        mended, the defaults apply."""
        start = Path(path).parent if path else Path(self._root())
        try:
            start = start.resolve()
        except OSError:
            pass
        state = self.config_state(start)
        key = (str(start), state)
        if key not in self._settings:
            if len(self._settings) > 256:
                self._settings.clear()
            try:
                self._settings[key] = (load_settings(start), None)
            except ConfigError as exc:
                self._settings[key] = (Settings(), f"rocmport: {exc}")
        settings, problem = self._settings[key]
        if problem is not None and (state, problem) not in self._said:
            self._said.add((state, problem))
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, problem))
        return settings

    # -- checking ------------------------------------------------------------------------------
    def request(self, op: str, document: Document, text: Text, settings: Settings, **extra) -> dict:
        return {"op": op, "text": _without_surrogates(text.text), "path": document.path,
                "python": document.checked_as_python, "settings": settings, **extra}

    def schedule(self, document: Document, delay: float) -> None:
        if document.timer is not None:
            document.timer.cancel()
        loop = asyncio.get_running_loop()
        document.timer = loop.call_later(delay, self._check_now, document)
        # a check of an older version still running: stop it when that saves time
        if self.worker is not None:
            self.worker.stop_if(lambda job: job.owner == (document.uri, "lint")
                                and job.estimate - (time.monotonic() - job.started) > RESPAWN_SECONDS)

    def _check_now(self, document: Document) -> None:
        document.timer = None
        if self.documents.get(document.uri) is not document:
            return
        if document.task is not None and not document.task.done():
            document.wanted = True  # the running check starts again when it ends
            return
        document.task = asyncio.ensure_future(self._check(document))

    async def _check(self, document: Document) -> None:
        while True:
            document.wanted = False
            linted: Dict[str, Any] = {}

            def make() -> Optional[dict]:
                if self.documents.get(document.uri) is not document or document.timer is not None:
                    return None  # closed, or changed again: a newer check is coming
                settings = self.settings_for(document.path)
                linted.update(version=document.version, text=document.text, settings=settings)
                if not document.may_check:
                    return None
                return self.request("lint", document, document.text, settings)

            try:
                reply = await self.worker.call((document.uri, "lint"), make, document.estimate())
                if linted and reply is None:  # not checked at all: no diagnostics
                    reply = {"checked": False, "findings": []}
            except Superseded:
                reply = None
            except Exception as exc:  # noqa: BLE001 - a bug in rocmport: logged, the next change checked
                self.log(f"rocmport: internal error: {exc}", types.MessageType.Error)
                reply = None
            if reply is not None and linted:
                document.seconds = reply.get("seconds", document.seconds)
                if reply.get("internal_error"):
                    self.log(f"rocmport: internal error: {reply['internal_error']}", types.MessageType.Error)
                if self.documents.get(document.uri) is document and document.text is linted["text"] \
                        and document.version == linted["version"]:
                    document.analysis = Analysis(linted["version"], linted["text"], reply["checked"],
                                                 reply["findings"], linted["settings"])
                    length = len(document.text.text)
                    document.same = (length, length)
                    self.publish(document)
            if not document.wanted or self.documents.get(document.uri) is not document:
                return

    def publish(self, document: Document) -> None:
        analysis = document.analysis
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=document.uri, version=analysis.version,
            diagnostics=[self.diagnostic(analysis.text, f) for f in analysis.findings]))

    def diagnostic(self, text: Text, finding: dict,
                   shift: Optional[Callable[[int, int], Optional[Tuple[int, int]]]] = None,
                   into: Optional[Text] = None) -> types.Diagnostic:
        """``finding`` of ``text`` as a diagnostic; with ``shift`` (a :class:`Mapping`), placed
        in ``into``, the document's current text."""
        start, end = self.span(text, finding)
        if shift is not None:
            start, end = shift(start, end)
        url = finding["url"]
        severity = types.DiagnosticSeverity.Error if finding["code"].startswith("ROC0") else \
            types.DiagnosticSeverity.Warning
        return types.Diagnostic(
            range=(into or text).range(start, end, self.encoding),
            message=finding["message"],
            severity=severity,
            code=finding["code"],
            code_description=types.CodeDescription(href=url) if url else None,
            source=SOURCE,
            data={"fix": finding["fix"]},
        )

    @staticmethod
    def span(text: Text, finding: dict) -> Tuple[int, int]:
        start = text.offset_of(*finding["start"])
        return start, max(start, text.offset_of(*finding["end"]))

    def close(self, uri: str) -> None:
        document = self.documents.pop(uri, None)
        if document is None:
            return
        if document.timer is not None:
            document.timer.cancel()
        if self.worker is not None:
            self.worker.stop_if(lambda job: job.owner[0] == uri)


server = Server()


# ------------------------------------------------------------------------------------------
# Document notifications
# ------------------------------------------------------------------------------------------

@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: Server, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    ls.close(item.uri)
    document = Document(item.uri, item.language_id, item.version, Text(item.text))
    ls.documents[item.uri] = document
    ls.schedule(document, 0.0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: Server, params: types.DidChangeTextDocumentParams) -> None:
    document = ls.documents.get(params.text_document.uri)
    if document is None:
        return
    document.change(params.content_changes, ls.encoding)
    document.version = params.text_document.version
    slow = document.seconds is not None and document.seconds >= SLOW
    ls.schedule(document, SLOW_DEBOUNCE if slow else DEBOUNCE)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: Server, params: types.DidSaveTextDocumentParams) -> None:
    document = ls.documents.get(params.text_document.uri)
    if document is None:
        return
    analysis = document.analysis
    if analysis is not None and analysis.version == document.version and document.timer is None \
            and analysis.settings == ls.settings_for(document.path):
        return  # nothing that the check reads has changed
    ls.schedule(document, 0.0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: Server, params: types.DidCloseTextDocumentParams) -> None:
    ls.close(params.text_document.uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                        diagnostics=[]))


@server.feature(types.SHUTDOWN)
def shutdown(ls: Server, *args) -> None:
    for uri in list(ls.documents):
        ls.close(uri)
    if ls.worker is not None:
        ls.worker.close()


# ------------------------------------------------------------------------------------------
# Fixes as workspace edits
# ------------------------------------------------------------------------------------------

class Mapping:
    """From the text of a document's analysis to its current text, which differ in one
    region at most: offsets before it stay, offsets after it move by its change in length,
    ranges that meet it have no image."""

    def __init__(self, old_length: int, new_length: int, same: Tuple[int, int]):
        prefix, suffix = same
        prefix = min(prefix, old_length, new_length)
        suffix = min(suffix, old_length - prefix, new_length - prefix)
        self.start, self.old_end = prefix, old_length - suffix
        self.delta = new_length - old_length

    def __call__(self, start: int, end: int) -> Optional[Tuple[int, int]]:
        if end <= self.start:
            return start, end
        if start >= self.old_end:
            return start + self.delta, end + self.delta
        return None


def _workspace_edit(ls: Server, document: Document, edits: List[Tuple[int, int, str]],
                    extra_files: Dict[str, bytes]) -> Optional[types.WorkspaceEdit]:
    if not edits and not extra_files:
        return None
    changes: List = []
    for extra_path, data in sorted(extra_files.items()):  # the generated prelude module
        uri = Path(os.path.abspath(extra_path)).as_uri()
        exists = os.path.exists(extra_path)
        if not exists:
            changes.append(types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)))
        old = read_regular(extra_path).decode("utf-8", "replace") if exists else ""
        whole = types.Range(start=types.Position(line=0, character=0),
                            end=types.Position(line=len(old.splitlines()) + 1, character=0))
        changes.append(types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
            edits=[types.TextEdit(range=whole, new_text=data.decode("utf-8"))]))
    if edits:
        changes.append(types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
            edits=[types.TextEdit(range=document.text.range(start, end, ls.encoding), new_text=new_text)
                   for start, end, new_text in edits]))
    return types.WorkspaceEdit(document_changes=changes)


async def quick_fix(ls: Server, document: Document, analysis: Analysis, finding: dict) -> Optional[types.WorkspaceEdit]:
    """The edit of ``finding``'s fix alone (made from the analysis's text, where the finding
    is), for the document's current text; None where it does not apply, or no longer does."""
    key = (finding["code"], tuple(finding["span"]))
    if key not in analysis.fixes:
        try:
            reply = await ls.worker.call((document.uri, "fix"), lambda: ls.request(
                "fix_one", document, analysis.text, analysis.settings, code=finding["code"], span=finding["span"]))
        except (Superseded, WorkerError) as exc:
            ls.log(f"rocmport: the fix of {finding['code']} failed: {exc}", types.MessageType.Error)
            return None
        analysis.fixes[key] = reply
    reply = analysis.fixes[key]
    if reply is None or not reply["edits"] or document.analysis is not analysis:
        return None  # no fix; or a newer analysis came while it was made
    mapping = document.mapping(analysis)
    moved = [mapping(start, end) for start, end, _ in reply["edits"]]
    if None in moved:
        return None  # the text it edits has changed since
    return _workspace_edit(ls, document, [(a, b, new) for (a, b), (_, _, new) in zip(moved, reply["edits"])],
                           reply["files"])


async def fix_all_edit(ls: Server, document: Document) -> Optional[types.WorkspaceEdit]:
    """What ``rocmport fix --write`` makes of the document's current text."""
    if not document.may_check:
        return None
    text = document.text
    if document.fix_all is None or document.fix_all[0] is not text:
        settings = ls.settings_for(document.path)
        try:
            reply = await ls.worker.call((document.uri, "fix"), lambda: ls.request("fix_all", document, text, settings))
        except (Superseded, WorkerError) as exc:
            ls.log(f"rocmport: fix all failed: {exc}", types.MessageType.Error)
            return None
        document.fix_all = (text, reply)
    reply = document.fix_all[1]
    if document.text is not text or reply is None:
        return None  # changed while it was made: the editor asks again
    return _workspace_edit(ls, document, reply["edits"], reply["files"])


def _resolves_edits(ls: Server) -> bool:
    """Whether the client can fill in a code action's edit later (codeAction/resolve), with
    the action's ``data`` kept."""
    try:
        capability = ls.client_capabilities.text_document.code_action
    except AttributeError:
        return False
    support = getattr(capability, "resolve_support", None)
    return bool(capability.data_support) and support is not None and "edit" in (support.properties or [])


def _fix_title(finding: dict) -> str:
    unsafe = finding["fix"] == "unsafe"
    return (f"rocmport: {finding['fix_message'] or 'fix ' + finding['code']} ({finding['code']}"
            f"{', unsafe' if unsafe else ''})")


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
    resolve_provider=True))
async def code_action(ls: Server, params: types.CodeActionParams) -> List[types.CodeAction]:
    only = params.context.only
    uri = params.text_document.uri
    document = ls.documents.get(uri)
    if document is None or document.analysis is None or not document.analysis.checked:
        return []
    analysis = document.analysis
    mapping = document.mapping(analysis)
    wants_quickfix = not only or any(k.startswith(types.CodeActionKind.QuickFix) for k in only)
    wants_fix_all = not only or any(FIX_ALL_KIND.startswith(k) for k in only)
    fixable = [f for f in analysis.findings if f["applies"]]
    lazy = _resolves_edits(ls)
    requested = (document.text.offset(params.range.start, ls.encoding),
                 document.text.offset(params.range.end, ls.encoding))
    actions: List[types.CodeAction] = []
    if wants_quickfix:
        for finding in fixable:
            span = mapping(*ls.span(analysis.text, finding))
            if span is None or not (span[0] <= max(requested) and min(requested) <= span[1]):
                continue
            diagnostic = ls.diagnostic(analysis.text, finding, mapping, document.text)
            action = types.CodeAction(title=_fix_title(finding), kind=types.CodeActionKind.QuickFix,
                                      diagnostics=[diagnostic], is_preferred=finding["fix"] != "unsafe")
            if lazy:
                action.data = {"uri": uri, "version": document.version, "analysis": analysis.version,
                               "code": finding["code"], "span": list(finding["span"])}
            else:
                action.edit = await quick_fix(ls, document, analysis, finding)
                if action.edit is None:
                    continue
            actions.append(action)
    explicit = bool(only) and wants_fix_all
    if wants_fix_all and any(mapping(*ls.span(analysis.text, f)) is not None for f in fixable) \
            and (lazy or explicit or actions):
        kinds = [FIX_ALL_KIND] + ([types.CodeActionKind.QuickFix] if wants_quickfix and not only else [])
        edit = None
        if not lazy or explicit:  # asked for by kind (on save, say): made now
            edit = await fix_all_edit(ls, document)
            if edit is None:
                kinds = []
        for kind in kinds:
            action = types.CodeAction(title="rocmport: fix all", kind=kind, edit=edit)
            if edit is None:
                action.data = {"uri": uri, "version": document.version, "all": True}
            actions.append(action)
    return actions


@server.feature(types.CODE_ACTION_RESOLVE)
async def code_action_resolve(ls: Server, action: types.CodeAction) -> types.CodeAction:
    """The edit of an action listed without it; none where the fix no longer applies."""
    data = action.data if isinstance(action.data, dict) else {}
    document = ls.documents.get(data.get("uri"))
    if document is None:
        return action
    if data.get("all"):
        action.edit = await fix_all_edit(ls, document)
        return action
    analysis = document.analysis
    if analysis is None or analysis.version != data.get("analysis"):
        return action
    finding = next((f for f in analysis.findings if f["code"] == data.get("code")
                    and list(f["span"]) == list(data.get("span") or ())), None)
    if finding is not None:
        action.edit = await quick_fix(ls, document, analysis, finding)
    return action


@server.command(FIX_ALL_COMMAND)
async def fix_all_command(ls: Server, *args):
    """``rocmport.fixAll`` with the document URI: the fix-all edit through workspace/applyEdit."""
    values = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    uri = values[0] if values else None
    if isinstance(uri, dict):
        uri = uri.get("uri")
    if not isinstance(uri, str):
        return {"applied": False, "reason": "expected the document URI"}
    document = ls.documents.get(uri)
    if document is None:
        return {"applied": False, "reason": "the document is not open"}
    edit = await fix_all_edit(ls, document)
    if edit is None:
        return {"applied": False, "reason": "nothing to fix"}
    result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label="rocmport: fix all"))
    return {"applied": bool(result.applied)}


def main() -> None:
    server.start_io()
