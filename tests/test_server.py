"""``rocmport server`` end to end: a real LSP client session (pygls's client) over a pipe to
``python -m rocmport server``: initialize, didOpen, publishDiagnostics, codeAction (each safe
fix, "fix all"), workspace/applyEdit through the ``rocmport.fixAll`` command, didChange,
shutdown and exit; every rule's quick fix; codeAction/resolve; configuration errors, documents
never opened, untitled buffers and scripts; a burst of changes on a big file; and, byte by
byte over the pipe, a wrong Content-Length, positions out of range and a lone surrogate."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import BaseLanguageClient

from rocmport.config import load_settings
from rocmport.inputs import check_bytes

REPO = Path(__file__).resolve().parents[1]
FIX_ALL_KIND = "source.fixAll.rocmport"
HAZARD = 'import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
WIDE = 'import torch\nx = "\U0001F600"; f = torch.compile(g, mode="reduce-overhead")\n'  # a non-BMP character
DISPLAY_ONLY = ('from dataclasses import dataclass\n\n\n@dataclass\nclass PolicyConfig:\n'
                '    compile_mode: str = "reduce-overhead"\n\n'
                'NOTE = "torch.compile(g, mode=\'reduce-overhead\')"  # hazard text in a string\n')

pytestmark = pytest.mark.slow


def offset(text: str, position: types.Position) -> int:
    """Offset in ``text`` of an LSP position in UTF-16 code units."""
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for index, char in enumerate(line):
        if units >= position.character:
            return start + index
        units += 2 if ord(char) > 0xFFFF else 1
    return start + len(line)


def apply(text: str, edits) -> str:
    spans = sorted(((offset(text, e.range.start), offset(text, e.range.end), e.new_text) for e in edits),
                   reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def document_edits(edit: types.WorkspaceEdit, uri: str):
    return [e for change in edit.document_changes or () if isinstance(change, types.TextDocumentEdit)
            and change.text_document.uri == uri for e in change.edits]


def fixed_by_the_cli(text: str, path: Path) -> str:
    report = check_bytes(text.encode(), str(path), load_settings(path.parent), fix=True)
    return report.fixed.decode()


class Session:
    def __init__(self, root: Path):
        self.root = root
        self.client = BaseLanguageClient("rocmport-test", "1")
        self.diagnostics: "asyncio.Queue[types.PublishDiagnosticsParams]" = asyncio.Queue()
        self.applied = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams):
            self.diagnostics.put_nowait(params)

        @self.client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: types.ApplyWorkspaceEditParams):
            self.applied.append(params)
            return types.ApplyWorkspaceEditResult(applied=True)

    async def start(self):
        env = dict(os.environ, PYTHONPATH=str(REPO))
        env.pop("ROCMPORT_CACHE_DIR", None)
        await self.client.start_io(sys.executable, "-m", "rocmport", "server", env=env, cwd=str(self.root))
        capabilities = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
            apply_edit=True, workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)))
        result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=capabilities, process_id=os.getpid(), root_uri=self.root.as_uri())), 120)
        self.client.initialized(types.InitializedParams())
        return result

    async def published(self, uri: str) -> types.PublishDiagnosticsParams:
        while True:
            params = await asyncio.wait_for(self.diagnostics.get(), 120)
            if params.uri == uri:
                return params

    def open(self, uri: str, text: str, version: int = 1):
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))

    def change(self, uri: str, text: str, version: int):
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    async def actions(self, uri: str, diagnostics, range_=None, only=None):
        whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=999, character=0))
        return await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=range_ or whole,
            context=types.CodeActionContext(diagnostics=diagnostics, only=only))), 120) or []

    async def stop(self):
        await asyncio.wait_for(self.client.shutdown_async(None), 60)
        self.client.exit(None)
        server = self.client._server
        code = await asyncio.wait_for(server.wait(), 60) if server is not None else None
        await self.client.stop()
        return code


def test_a_real_client_session(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.rocmport]\n")
    (tmp_path / "train.py").write_text("# on disk: not what the editor shows\n")
    (tmp_path / "generated").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.rocmport]\nextend-exclude = ["generated"]\n')
    (tmp_path / "quiet").mkdir()
    (tmp_path / "quiet" / "pyproject.toml").write_text('[tool.rocmport]\nignore = ["ROC101"]\n')
    train = (tmp_path / "train.py").as_uri()

    async def scenario():
        session = Session(tmp_path)
        result = await session.start()
        capabilities = result.capabilities
        assert capabilities.code_action_provider is not None
        assert "rocmport.fixAll" in capabilities.execute_command_provider.commands
        assert result.server_info.name == "rocmport"

        # didOpen: the editor's unsaved text is what is checked
        session.open(train, HAZARD)
        published = await session.published(train)
        (diag,) = published.diagnostics
        assert diag.code == "ROC101" and diag.source == "rocmport"
        assert diag.range.start == types.Position(line=1, character=26)
        assert diag.range.end == types.Position(line=1, character=43)
        assert diag.code_description is not None and "roc101" in diag.code_description.href

        # codeAction: the finding's own safe fix, and fix all
        actions = await session.actions(train, [diag], range_=diag.range)
        quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix and a.diagnostics]
        fix_all = [a for a in actions if a.kind == "source.fixAll.rocmport"]
        assert len(quick) == 1 and len(fix_all) == 1
        assert "ROC101" in quick[0].title and quick[0].is_preferred
        expected = fixed_by_the_cli(HAZARD, tmp_path / "train.py")
        assert apply(HAZARD, document_edits(quick[0].edit, train)) == expected
        assert apply(HAZARD, document_edits(fix_all[0].edit, train)) == expected
        only = await session.actions(train, [diag], only=["source.fixAll"])
        assert [a.kind for a in only] == ["source.fixAll.rocmport"]

        # the fixAll command: the server asks the client to apply the edit
        outcome = await asyncio.wait_for(session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="rocmport.fixAll", arguments=[train])), 120)
        assert outcome == {"applied": True}
        (request,) = session.applied
        fixed = apply(HAZARD, document_edits(request.edit, train))
        assert fixed == expected

        # didChange to the fixed text: nothing left
        session.change(train, fixed, 2)
        published = await session.published(train)
        assert list(published.diagnostics) == [] and published.version == 2
        assert await session.actions(train, []) == []

        # display-only findings have no action; hazard text in a string is no finding
        session.change(train, DISPLAY_ONLY, 3)
        (diag,) = (await session.published(train)).diagnostics
        assert diag.code == "ROC105" and diag.range.start.line == 5
        assert await session.actions(train, [diag]) == []

        # positions in UTF-16 code units (the default encoding)
        session.change(train, WIDE, 4)
        (diag,) = (await session.published(train)).diagnostics
        assert diag.range.start == types.Position(line=1, character=len('x = "\U0001F600"; f = torch.compile(g, mode=') + 1)

        # the configuration decides, as on the command line: excluded files and ignored codes
        excluded = (tmp_path / "generated" / "model.py").as_uri()
        session.open(excluded, HAZARD)
        assert list((await session.published(excluded)).diagnostics) == []
        ignored = (tmp_path / "quiet" / "model.py").as_uri()
        session.open(ignored, HAZARD)
        assert list((await session.published(ignored)).diagnostics) == []

        # one finding's quick fix fixes that finding only (with the prelude it needs)
        two = ('import torch\nf = torch.compile(g, mode="reduce-overhead")\n'
               'h = torch.compile(k, mode="max-autotune")\n')
        session.change(train, two, 5)
        diags = (await session.published(train)).diagnostics
        assert [d.code for d in diags] == ["ROC101", "ROC102"]
        actions = await session.actions(train, [diags[1]], range_=diags[1].range)
        (quick,) = [a for a in actions if a.diagnostics]
        after = apply(two, document_edits(quick.edit, train))
        assert 'mode="reduce-overhead")' in after and "max-autotune-no-cudagraphs" in after and "is_rocm" in after
        compile(after, "after.py", "exec")

        # a syntax error is a diagnostic, not a crash
        session.change(train, "def broken(:\n    pass\n", 6)
        (diag,) = (await session.published(train)).diagnostics
        assert diag.code == "ROC001" and diag.severity == types.DiagnosticSeverity.Error

        return await session.stop()

    assert asyncio.run(scenario()) == 0


# ------------------------------------------------------------------------------------------
# Every rule's quick fix, through the server (issue 31)
# ------------------------------------------------------------------------------------------

def _fixed_rules():
    from rocmport.findings import Applicability
    from rocmport.registry import visitor_rules

    out = []
    for rule in visitor_rules():
        if rule.FIX_APPLICABILITY not in (Applicability.SAFE, Applicability.UNSAFE):
            continue
        cases = [case for case in rule.INVALID if case.expected is not None] or list(rule.INVALID)
        out.append((rule.CODE, rule.FIX_APPLICABILITY is Applicability.UNSAFE, cases[0].code))
    return out


def test_the_quick_fix_of_every_rule_with_a_fix(tmp_path):
    """For every rule with a fix (ROC106, off by default and unsafe, enabled by the
    configuration): its first invalid case, its quick fixes applied one at a time through the
    server until no finding of the rule is left; each result parses. ROC106's fix needs a
    part of the prelude, which the server used to ask the engine for with the wrong arity."""
    rules = _fixed_rules()
    assert "ROC106" in [code for code, _, _ in rules] and len(rules) >= 20

    async def scenario():
        session = Session(tmp_path)
        await session.start()
        for code, unsafe, text in rules:
            folder = tmp_path / code
            folder.mkdir()
            (folder / "pyproject.toml").write_text(
                f'[tool.rocmport]\nselect = ["{code}"]\n' + ("unsafe-fixes = true\n" if unsafe else ""))
            uri = (folder / "case.py").as_uri()
            version = 1
            session.open(uri, text, version)
            diags = [d for d in (await session.published(uri)).diagnostics if d.code == code]
            assert diags, f"{code}: no finding on its invalid case"
            for _ in range(4):
                actions = await session.actions(uri, [diags[0]], range_=diags[0].range, only=["quickfix"])
                quick = [a for a in actions if a.diagnostics and a.diagnostics[0].code == code]
                assert quick, f"{code}: no quick fix offered for\n{text}"
                text = apply(text, document_edits(quick[0].edit, uri))
                compile(text, f"{code}.py", "exec")
                version += 1
                session.change(uri, text, version)
                published = await session.published(uri)
                assert published.version == version
                diags = [d for d in published.diagnostics if d.code == code]
                if not diags:
                    break
            assert not diags, f"{code}: still found after its quick fixes:\n{text}"
        return await session.stop()

    assert asyncio.run(scenario()) == 0


def test_fixes_are_made_when_the_client_resolves_them(tmp_path):
    """A client that can resolve a code action's edit gets the actions at once, without
    edits, and each edit when it asks for it: the same edits as the eager ones."""
    uri = (tmp_path / "train.py").as_uri()
    two = HAZARD + 'h = torch.compile(k, mode="max-autotune")\n'

    async def scenario():
        session = Session(tmp_path)
        capabilities = types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
            code_action=types.CodeActionClientCapabilities(
                data_support=True, resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]))))
        await session.client.start_io(sys.executable, "-m", "rocmport", "server",
                                      env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=str(tmp_path))
        await asyncio.wait_for(session.client.initialize_async(types.InitializeParams(
            capabilities=capabilities, root_uri=tmp_path.as_uri())), 120)
        session.client.initialized(types.InitializedParams())
        session.open(uri, two)
        diags = (await session.published(uri)).diagnostics
        actions = await session.actions(uri, [diags[1]], range_=diags[1].range)
        assert [a.kind for a in actions] == ["quickfix", "source.fixAll.rocmport", "quickfix"]
        assert all(a.edit is None for a in actions)
        quick, fix_all = [await asyncio.wait_for(session.client.code_action_resolve_async(a), 120)
                          for a in actions[:2]]
        after = apply(two, document_edits(quick.edit, uri))
        assert 'mode="reduce-overhead")' in after and "max-autotune-no-cudagraphs" in after
        assert apply(two, document_edits(fix_all.edit, uri)) == fixed_by_the_cli(two, tmp_path / "train.py")
        (on_save,) = await session.actions(uri, [], only=[FIX_ALL_KIND])  # asked for by kind: made now
        assert apply(two, document_edits(on_save.edit, uri)) == fixed_by_the_cli(two, tmp_path / "train.py")
        return await session.stop()

    assert asyncio.run(scenario()) == 0


# ------------------------------------------------------------------------------------------
# Configuration errors, documents never opened, untitled buffers, scripts without .py
# ------------------------------------------------------------------------------------------

class Messages(Session):
    """A session that also keeps the server's window/showMessage popups."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.shown = []

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def shown(params: types.ShowMessageParams):
            self.shown.append(params.message)


def test_a_broken_configuration_is_said_once_per_change_of_the_file(tmp_path):
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.rocmport]\nselct = ["ROC1"]\n')
    uri = (tmp_path / "train.py").as_uri()

    async def scenario():
        session = Messages(tmp_path)
        await session.start()
        session.open(uri, HAZARD)
        diags = (await session.published(uri)).diagnostics
        assert [d.code for d in diags] == ["ROC101"]  # the defaults apply meanwhile
        for version in range(2, 6):  # keystrokes and code actions
            session.change(uri, HAZARD + "#" * version + "\n", version)
            await session.published(uri)
            await session.actions(uri, diags, range_=diags[0].range)
        assert len(session.shown) == 1 and "selct" in session.shown[0]
        config.write_text('[tool.rocmport]\nselct = ["ROC2"]\n')  # changed, still broken: said again
        session.change(uri, HAZARD, 6)
        await session.published(uri)
        session.change(uri, HAZARD + "\n", 7)
        await session.published(uri)
        assert len(session.shown) == 2
        config.write_text('[tool.rocmport]\nignore = ["ROC101"]\n')  # mended: applies, nothing said
        session.change(uri, HAZARD, 8)
        assert list((await session.published(uri)).diagnostics) == []
        assert len(session.shown) == 2
        return await session.stop()

    assert asyncio.run(scenario()) == 0


def test_a_code_action_for_a_document_never_opened_or_closed_is_an_empty_list(tmp_path):
    (tmp_path / "closed.py").write_text(HAZARD)  # on disk, with a finding
    closed = (tmp_path / "closed.py").as_uri()

    async def scenario():
        session = Messages(tmp_path)
        await session.start()
        assert await session.actions((tmp_path / "never.py").as_uri(), []) == []  # not even on disk
        assert await session.actions(closed, []) == []
        session.open(closed, HAZARD)
        diags = (await session.published(closed)).diagnostics
        assert any(a.diagnostics for a in await session.actions(closed, diags, range_=diags[0].range))
        # closed: its analysis is gone; the file on disk is not checked in its place
        session.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=closed)))
        assert list((await session.published(closed)).diagnostics) == []
        assert await session.actions(closed, diags, range_=diags[0].range) == []
        assert session.shown == []
        return await session.stop()

    assert asyncio.run(scenario()) == 0


def test_untitled_buffers_and_scripts_without_py_are_checked_as_python(tmp_path):
    script = (tmp_path / "train").as_uri()  # languageId python, no suffix
    notes = (tmp_path / "notes").as_uri()  # neither Python nor a kind rocmport checks
    untitled = "untitled:Untitled-1"

    async def scenario():
        session = Messages(tmp_path)
        await session.start()
        session.open(untitled, HAZARD)
        assert [d.code for d in (await session.published(untitled)).diagnostics] == ["ROC101"]
        session.open(script, "#!/usr/bin/env python3\n" + HAZARD)
        diags = (await session.published(script)).diagnostics
        assert [d.code for d in diags] == ["ROC101"] and diags[0].range.start.line == 2
        actions = await session.actions(script, diags, range_=diags[0].range)
        assert apply("#!/usr/bin/env python3\n" + HAZARD, document_edits(actions[0].edit, script)) == \
            "#!/usr/bin/env python3\n" + fixed_by_the_cli(HAZARD, tmp_path / "train.py")
        session.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=notes, language_id="plaintext", version=1, text=HAZARD)))
        assert list((await session.published(notes)).diagnostics) == []
        assert session.shown == []
        return await session.stop()

    assert asyncio.run(scenario()) == 0


# ------------------------------------------------------------------------------------------
# Big files: the last version only, code actions from the last analysis (issue 31)
# ------------------------------------------------------------------------------------------

# about a second of lint: 800 functions, each with a finding LibCST must parse
BIG = "import torch\n\n\n" + "".join(
    f"def step_{i}(model, x):\n    y = x * {i} + 1\n    z = torch.compile(model, mode=\"reduce-overhead\")\n"
    f"    return z(y)\n\n\n" for i in range(800))


def test_a_burst_of_changes_on_a_big_file(tmp_path):
    """Keystrokes faster than a lint: only the last version's diagnostics are published; a
    code action at a cursor with no finding is answered at once, from the last analysis,
    while the new version is checked; a quick fix offered from an older analysis is one whose
    text and edits the changes since have not touched, as an edit of the current text."""
    uri = (tmp_path / "big.py").as_uri()

    async def scenario():
        session = Session(tmp_path)
        await session.start()
        session.open(uri, BIG)
        assert len((await session.published(uri)).diagnostics) == 800
        text = BIG
        for version in range(2, 7):  # typing a comment at the end, faster than a lint
            text += "#x"[version % 2]
            session.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(line=BIG.count("\n"), character=version - 2),
                                      end=types.Position(line=BIG.count("\n"), character=version - 2)),
                    text="#x"[version % 2])]))
            await asyncio.sleep(0.02)
        cursor = types.Range(start=types.Position(line=0, character=3), end=types.Position(line=0, character=3))
        answered = asyncio.ensure_future(session.actions(uri, [], range_=cursor))
        versions = []
        while True:
            published = await session.published(uri)
            versions.append((published.version, answered.done()))
            if published.version == 6:
                break
        assert versions == [(6, True)], versions  # nothing older published; the action came first
        assert await answered == []
        assert len(published.diagnostics) == 800

        # a change far below finding 0, then at once its quick fix: from the older analysis
        # (the change is outside what it covers), as an edit of the newer text
        tail = types.Position(line=BIG.count("\n"), character=0)
        session.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=7),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=tail, end=tail),
                                                                    text="y = 1\n")]))
        text = BIG + "y = 1\n" + text[len(BIG):]
        first = published.diagnostics[0]
        actions = await session.actions(uri, [first], range_=first.range, only=["quickfix"])
        (quick,) = [a for a in actions if a.diagnostics]
        (change,) = [c for c in quick.edit.document_changes if isinstance(c, types.TextDocumentEdit)]
        assert change.text_document.version == 7
        fixed = apply(text, change.edits)
        assert fixed.count('mode="reduce-overhead"') == 799 and fixed.endswith(text[-200:])
        assert (await session.published(uri)).version == 7

        # a change inside a finding: no quick fix from the analysis before it
        line = first.range.start.line
        session.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=8),
            content_changes=[types.TextDocumentContentChangePartial(range=first.range, text='mode="default"')]))
        actions = await session.actions(uri, [first], range_=first.range, only=["quickfix"])
        assert not [a for a in actions if a.diagnostics and a.diagnostics[0].range.start.line == line]
        assert (await session.published(uri)).version == 8
        return await session.stop()

    assert asyncio.run(scenario()) == 0


# ------------------------------------------------------------------------------------------
# Protocol faults (issue 31): wrong Content-Length, positions out of range, lone surrogates
# ------------------------------------------------------------------------------------------

class Raw:
    """The server over a pipe, byte by byte: what no client library would send."""

    def __init__(self, root: Path):
        import queue
        import subprocess
        import threading

        env = dict(os.environ, PYTHONPATH=str(REPO))
        env.pop("ROCMPORT_CACHE_DIR", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "rocmport", "server"], cwd=root, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: "queue.Queue[dict]" = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.messages.put(json.loads(stream.read(length)))

    def raw(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    @staticmethod
    def body(message: dict) -> bytes:
        return json.dumps(message).encode()

    @staticmethod
    def frame(body: bytes, length=None) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body

    def send(self, message: dict):
        self.raw(self.frame(self.body(message)))

    def request(self, ident, method, params) -> dict:
        return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, test, timeout=30.0) -> dict:
        import queue

        for message in self.seen:
            if test(message):
                self.seen.remove(message)
                return message
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("no answer") from None
            if test(message):
                return message
            self.seen.append(message)

    def answer(self, ident, timeout=30.0) -> dict:
        return self.wait(lambda m: m.get("id") == ident and "method" not in m, timeout)

    def diagnostics(self, uri, version, timeout=60.0) -> dict:
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri and m["params"].get("version") == version, timeout)["params"]

    def start(self, root: Path):
        self.send(self.request(1, "initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}))
        assert "result" in self.answer(1, 120)
        self.notify("initialized", {})

    def open(self, uri, text, version=1):
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version,
                                                              "text": text}})

    def stop(self) -> int:
        self.send(self.request(99, "shutdown", None))
        self.answer(99)
        self.notify("exit", None)
        self.proc.stdin.close()
        return self.proc.wait(60)

    def popups(self):
        return [m for m in self.seen if m.get("method") == "window/showMessage"]


def _code_action(raw: Raw, ident, uri, start, end):
    return raw.request(ident, "textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": {"start": start, "end": end}, "context": {"diagnostics": []}})


def test_a_malformed_or_lying_content_length_is_survived(tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    raw = Raw(tmp_path)
    try:
        raw.start(tmp_path)
        raw.open(uri, HAZARD)
        assert raw.diagnostics(uri, 1)["diagnostics"][0]["code"] == "ROC101"
        zero = {"line": 0, "character": 0}
        where = {"line": 1, "character": 30}

        def action(ident):
            return raw.body(_code_action(raw, ident, uri, where, where))

        # a length that is not a number: skipped (answered with an error), the next one read
        raw.raw(b"Content-Length: twelve\r\n\r\n" + action(2) + raw.frame(action(3)))
        assert raw.answer(3)["result"][0]["kind"] == "quickfix"
        assert raw.answer(2)["error"]["code"] == -32700
        # too long, with the next message behind it: both read
        raw.raw(raw.frame(action(4), len(action(4)) + 40) + raw.frame(action(5)))
        assert raw.answer(5)["result"] and raw.answer(4)["result"]
        # too short: completed from the bytes that follow it
        raw.raw(raw.frame(action(6), len(action(6)) - 9) + raw.frame(action(7)))
        assert raw.answer(7)["result"] and raw.answer(6)["result"]
        # too long, and nothing after it while the client waits for the answer
        raw.raw(raw.frame(action(8), len(action(8)) + 1000))
        assert raw.answer(8)["result"]
        # bytes that are no message at all, a body without a header, a header without a body
        raw.raw(b"hello\r\n\r\n" + action(9) + b"\r\nContent-Length: 7\r\n" + raw.frame(action(10)))
        assert raw.answer(10)["result"]
        raw.raw(raw.frame(raw.body(_code_action(raw, 11, uri, zero, zero))))
        assert raw.answer(11)["result"] == []
        assert raw.stop() == 0
    finally:
        raw.proc.kill()


def test_positions_out_of_range_are_answered(tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    raw = Raw(tmp_path)
    try:
        raw.start(tmp_path)
        raw.open(uri, HAZARD)
        raw.diagnostics(uri, 1)
        huge = {"line": 2**40, "character": 2**40}
        for ident, (start, end) in enumerate([({"line": 0, "character": 0}, huge),
                                              ({"line": -1, "character": -5}, {"line": 1, "character": 10**6}),
                                              (huge, huge)], start=2):
            raw.send(_code_action(raw, ident, uri, start, end))
            answer = raw.answer(ident)
            assert isinstance(answer.get("result"), list), answer
            assert bool(answer["result"]) == (ident != 4)  # the finding's line is in range, or not
        # a change past the end of the document is made at its end
        raw.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 40, "character": 9}, "end": {"line": 50, "character": 0}},
             "text": 'h = torch.compile(k, mode="max-autotune")\n'}]})
        codes = [d["code"] for d in raw.diagnostics(uri, 2)["diagnostics"]]
        assert codes == ["ROC101", "ROC102"]
        assert raw.popups() == []
        assert raw.stop() == 0
    finally:
        raw.proc.kill()


def test_a_lone_surrogate_is_checked_as_a_replacement_character(tmp_path):
    uri = (tmp_path / "train.py").as_uri()
    raw = Raw(tmp_path)
    try:
        raw.start(tmp_path)
        raw.open(uri, HAZARD)
        raw.diagnostics(uri, 1)
        text = 'import torch\ns = "\ud800"; f = torch.compile(g, mode="reduce-overhead")\n'
        raw.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                              "contentChanges": [{"text": text}]})
        (diag,) = raw.diagnostics(uri, 2)["diagnostics"]
        assert diag["code"] == "ROC101"
        assert diag["range"]["start"] == {"line": 1, "character": len('s = "\ud800"; f = torch.compile(g, mode=')}
        where = diag["range"]["start"]
        raw.send(_code_action(raw, 2, uri, where, where))
        (quick,) = [a for a in raw.answer(2)["result"] if a.get("diagnostics")]
        edits = [types.TextEdit(range=types.Range(start=types.Position(**e["range"]["start"]),
                                                  end=types.Position(**e["range"]["end"])), new_text=e["newText"])
                 for e in quick["edit"]["documentChanges"][0]["edits"]]
        fixed = apply(text, edits)  # the surrogate is left where it is, untouched
        assert 's = "\ud800"; f = torch.compile(g, mode="default" if ' in fixed
        assert raw.popups() == []
        assert raw.stop() == 0
    finally:
        raw.proc.kill()
