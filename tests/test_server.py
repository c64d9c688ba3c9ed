"""``rocmport server`` end to end: a real LSP client session (pygls's client) over a pipe to
``python -m rocmport server``: initialize, didOpen, publishDiagnostics, codeAction (each safe
fix, "fix all"), workspace/applyEdit through the ``rocmport.fixAll`` command, didChange,
shutdown and exit."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import BaseLanguageClient

from rocmport.inputs import check_bytes
from rocmport.config import load_settings

REPO = Path(__file__).resolve().parents[1]
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
