"""``rocmport server``: a Language Server Protocol server over stdio (pygls, the ``server``
extra: ``pip install 'rocmport[server]'``).

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

Files the configuration excludes are left alone, as ``--force-exclude`` does; positions are
converted to the encoding the client negotiated (UTF-16 by default).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from . import __version__
from .config import ConfigError, Settings, load_settings
from .findings import Applicability, Finding
from .source import encode_lines, read_regular

SOURCE = "rocmport"
FIX_ALL_KIND = "source.fixAll.rocmport"
FIX_ALL_COMMAND = "rocmport.fixAll"
PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")

server = LanguageServer("rocmport", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)


# ------------------------------------------------------------------------------------------
# Documents, settings, analysis
# ------------------------------------------------------------------------------------------

def _path_of(document) -> Optional[str]:
    path = getattr(document, "path", None)
    return path if path and document.uri.startswith("file:") else None


def _settings_for(path: Optional[str]) -> Settings:
    start = Path(path).parent if path else Path(getattr(server.workspace, "root_path", None) or os.getcwd())
    try:
        return load_settings(start)
    except ConfigError as exc:
        server.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"rocmport: {exc}"))
        return Settings()


def _checked(path: Optional[str], text: str, settings: Settings) -> bool:
    """Whether rocmport checks this document at all (kind of file, exclusions)."""
    name = path or ""
    if not name.endswith(PYTHON_SUFFIXES):
        if not path:
            return False
        from rocmport.rules.env_vars.scan_files import kind_for

        if kind_for(name, text[:512].encode("utf-8", "replace")) is None:
            return False
    if path:
        from .discovery import Excluder

        if Excluder(settings).excluded(Path(path), False):
            return False
    return True


def _encode(text: str) -> bytes:
    return encode_lines(text.splitlines(keepends=True))


def analyse(uri: str, fix: bool = False):
    """(document, settings, report) for ``uri``; report is None for a document rocmport skips."""
    from .inputs import check_bytes

    document = server.workspace.get_text_document(uri)
    path = _path_of(document)
    settings = _settings_for(path)
    if not _checked(path, document.source, settings):
        return document, settings, None
    report = check_bytes(_encode(document.source), path or "-", settings, fix=fix)
    return document, settings, report


def _range(document, start, end) -> types.Range:
    """An LSP range (client units) from rocmport's 1-based rows and code-point columns."""
    server_range = types.Range(start=types.Position(line=start.row - 1, character=start.column - 1),
                               end=types.Position(line=end.row - 1, character=end.column - 1))
    return document.position_codec.range_to_client_units(document.lines, server_range)


def _url(finding: Finding) -> Optional[str]:
    if finding.url:
        return finding.url
    from .docs import rule_url
    from .registry import rule_infos

    info = rule_infos().get(finding.code)
    return rule_url(info) if info is not None else None


def diagnostic(document, finding: Finding) -> types.Diagnostic:
    url = _url(finding)
    severity = types.DiagnosticSeverity.Error if finding.code.startswith("ROC0") else \
        types.DiagnosticSeverity.Warning
    return types.Diagnostic(
        range=_range(document, finding.start, finding.end),
        message=finding.message,
        severity=severity,
        code=finding.code,
        code_description=types.CodeDescription(href=url) if url else None,
        source=SOURCE,
        data={"fix": finding.fix.applicability.value if finding.fix is not None else None},
    )


def publish(uri: str) -> None:
    document, settings, report = analyse(uri)
    findings = report.findings if report is not None else []
    if report is not None and report.internal_error:
        server.window_log_message(types.LogMessageParams(types.MessageType.Error,
                                                         f"rocmport: internal error: {report.internal_error}"))
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=document.version, diagnostics=[diagnostic(document, f) for f in findings]))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                        diagnostics=[]))


# ------------------------------------------------------------------------------------------
# Fixes as workspace edits
# ------------------------------------------------------------------------------------------

def _text_edit(document, old: str, new: str) -> Optional[types.TextEdit]:
    """One edit turning ``old`` into ``new``: the changed middle only (common ends kept)."""
    if old == new:
        return None
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    from .source import LineIndex

    index = LineIndex(old)
    start, end = index.position(prefix), index.position(len(old) - suffix)
    return types.TextEdit(range=_range(document, start, end), new_text=new[prefix:len(new) - suffix])


def _workspace_edit(document, new_text: str, extra_files: Dict[str, bytes]) -> Optional[types.WorkspaceEdit]:
    edit = _text_edit(document, document.source, new_text)
    if edit is None and not extra_files:
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
    if edit is not None:
        changes.append(types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
            edits=[edit]))
    return types.WorkspaceEdit(document_changes=changes)


def fix_one(document, settings: Settings, finding: Finding, path: str) -> Optional[Tuple[str, Dict[str, bytes]]]:
    """The text after applying ``finding``'s fix alone (with the prelude it needs), as the
    engine's fix loop applies a fix; None when it would not parse."""
    from . import gating, linting, parsing
    from .source import SourceError, SourceText, apply_edits

    try:
        text = SourceText.from_bytes(_encode(document.source)).text
    except SourceError:
        return None
    enabled, rules = linting.select_rules(settings, path)
    analysis = linting.analyze(text, path, settings, rules, enabled)
    if analysis.module is None:
        return None
    mine = [f for f in analysis.findings if f.code == finding.code and f.span == finding.span
            and f.applies(settings.unsafe_fixes)]
    if not mine:
        return None
    edits = list(mine[0].fix.edits)
    files: Dict[str, bytes] = {}
    if mine[0].fix.requires:
        pedit, files = gating.prelude_edit(analysis, set(mine[0].fix.requires), min(e.start for e in edits),
                                            path, settings)
        if pedit is not None:
            if any(pedit.overlaps(e) for e in edits):
                return None
            edits.append(pedit)
    new_text = apply_edits(text, edits)
    if parsing.parse_error(new_text) is not None:
        return None
    return new_text, files


def fix_all(uri: str) -> Optional[types.WorkspaceEdit]:
    document, settings, report = analyse(uri, fix=True)
    if report is None or (report.fixed is None and not report.extra_files):
        return None
    from .source import SourceText

    new_text = SourceText.from_bytes(report.fixed).text if report.fixed is not None else document.source
    return _workspace_edit(document, new_text, report.extra_files)


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
    resolve_provider=False))
def code_action(ls: LanguageServer, params: types.CodeActionParams) -> Optional[List[types.CodeAction]]:
    only = params.context.only
    uri = params.text_document.uri
    document, settings, report = analyse(uri)
    if report is None:
        return None
    path = _path_of(document) or "-"
    actions: List[types.CodeAction] = []
    wants_quickfix = not only or any(k.startswith(types.CodeActionKind.QuickFix) for k in only)
    wants_fix_all = not only or any(FIX_ALL_KIND.startswith(k) for k in only)
    fixable = [f for f in report.findings if f.applies(settings.unsafe_fixes)]
    if wants_quickfix:
        wanted = _requested(document, params.range, fixable)
        for finding in wanted:
            result = fix_one(document, settings, finding, path)
            if result is None:
                continue
            edit = _workspace_edit(document, *result)
            if edit is None:
                continue
            unsafe = finding.fix.applicability is Applicability.UNSAFE
            actions.append(types.CodeAction(
                title=f"rocmport: {finding.fix.message or 'fix ' + finding.code} ({finding.code}"
                      f"{', unsafe' if unsafe else ''})",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic(document, finding)],
                is_preferred=not unsafe,
                edit=edit))
    if wants_fix_all and fixable:
        edit = fix_all(uri)
        if edit is not None:
            kinds = [FIX_ALL_KIND] + ([types.CodeActionKind.QuickFix] if wants_quickfix and not only else [])
            for kind in kinds:
                actions.append(types.CodeAction(title="rocmport: fix all", kind=kind, edit=edit))
    return actions or None


def _requested(document, requested: types.Range, findings: Sequence[Finding]) -> List[Finding]:
    """The findings whose range touches the requested range."""
    out = []
    for f in findings:
        r = _range(document, f.start, f.end)
        if (r.start.line, r.start.character) <= (requested.end.line, requested.end.character) and \
                (requested.start.line, requested.start.character) <= (r.end.line, r.end.character):
            out.append(f)
    return out


@server.command(FIX_ALL_COMMAND)
async def fix_all_command(ls: LanguageServer, *args):
    """``rocmport.fixAll`` with the document URI: the fix-all edit through workspace/applyEdit."""
    values = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    uri = values[0] if values else None
    if isinstance(uri, dict):
        uri = uri.get("uri")
    if not isinstance(uri, str):
        return {"applied": False, "reason": "expected the document URI"}
    edit = fix_all(uri)
    if edit is None:
        return {"applied": False, "reason": "nothing to fix"}
    result = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label="rocmport: fix all"))
    return {"applied": bool(result.applied)}


def main() -> None:
    server.start_io()
