"""``torchdevice server``: a Language Server on stdio (pygls; ``pip install
'flake8-torchdevice[lsp]'``). Diagnostics on open, change and save; code actions for
each fix (safe ones as ``quickfix``, unsafe ones marked), "fix all" as
``source.fixAll.torchdevice``, and a ``# noqa`` suppression. The process stays warm:
LibCST is imported once. Changes that arrive while a document is being linted are
coalesced: only the newest version is linted (a debounce that adds no delay)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Optional

from . import __version__, config, editor

FIX_ALL_KIND = "source.fixAll.torchdevice"
FIX_ALL_COMMAND = "torchdevice.fixAll"


def serve(argv: list[str]) -> int:
    if argv:
        print(f"torchdevice: error: server takes no arguments (got {' '.join(argv)})", file=sys.stderr)
        return 2
    try:
        server = build()
    except ImportError:
        print("torchdevice: error: the language server needs pygls: pip install 'flake8-torchdevice[lsp]'",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, _interrupted)
    try:
        server.start_io()
    except KeyboardInterrupt:
        _interrupted(signal.SIGINT, None)
    return 0


def _interrupted(signum, frame) -> None:
    """Ctrl-C: one line and exit 130, now. Raising KeyboardInterrupt is not enough: pygls may
    catch it in its loop and go on reading stdin (a full-suite run once saw the server outlive
    the signal by 30 s); nothing is left to flush but stderr."""
    print("torchdevice: interrupted", file=sys.stderr, flush=True)
    os._exit(130)


def build():
    """The pygls server with every feature registered (ImportError without pygls)."""
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    notebooks = types.NotebookDocumentSyncOptions(notebook_selector=[
        types.NotebookDocumentFilterWithCells(notebook="*", cells=[types.NotebookCellLanguage(language="python")])])
    server = LanguageServer("torchdevice", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                            notebook_document_sync=notebooks)
    state = _State()

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_changed(ls, params):
        _publish_notebook(ls, state, params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_closed(ls, params):
        for cell in params.cell_text_documents:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params):
        _publish(ls, state, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params):
        uri, version = params.text_document.uri, params.text_document.version
        state.latest[uri] = version
        # Every change already read is handled before this runs: only the newest lints.
        asyncio.get_running_loop().call_soon(_publish_if_latest, ls, state, uri, version)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params):
        if params.text_document.uri.endswith("/pyproject.toml"):
            for uri in list(state.open):  # the selection may have changed
                _publish(ls, state, uri)
        elif params.text_document.uri in state.open:
            _publish(ls, state, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params):
        state.forget(params.text_document.uri)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                            diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched(ls, params):
        for uri in list(state.open):
            _publish(ls, state, uri)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]))
    def code_action(ls, params):
        return _code_actions(ls, state, params)

    @server.command(FIX_ALL_COMMAND)
    def fix_all(ls, *args):
        uri = args[0] if args and isinstance(args[0], str) else None
        edit = _fix_all_edit(ls, state, uri) if uri else None
        if edit is not None:
            ls.workspace_apply_edit(types.ApplyWorkspaceEditParams(edit=edit, label="Fix all TDV findings"))
        return None

    return server


class _State:
    def __init__(self) -> None:
        from .reparse import ParseCache

        self.settings = editor.Settings()
        self.parts = ParseCache()  # an edit parses again only the top-level statements it changed
        self.latest: dict = {}  # uri -> newest version received
        self.open: set = set()
        self.findings: dict = {}  # uri -> (text it was computed on, [editor.Finding])

    def forget(self, uri: str) -> None:
        self.open.discard(uri)
        self.latest.pop(uri, None)
        self.findings.pop(uri, None)


def _path(uri: str) -> Optional[str]:
    from pygls.uris import to_fs_path

    return to_fs_path(uri) if uri.startswith("file:") else None


def _publish_if_latest(ls, state: _State, uri: str, version) -> None:
    if state.latest.get(uri) == version and uri in state.open:
        _publish(ls, state, uri)


def _publish(ls, state: _State, uri: str) -> None:
    from lsprotocol import types

    state.open.add(uri)
    document = ls.workspace.get_text_document(uri)
    path = _path(uri)
    if path and not path.endswith(".py") and document.language_id not in ("python", None):
        return
    diagnostics = []
    findings, error = _lint(state, document.source, path)
    state.findings[uri] = (document.source, findings)
    for finding in findings:
        diagnostics.append(_finding_diagnostic(types, finding, finding.start, finding.end))
    if error:
        diagnostics.append(_error_diagnostic(types, editor.error_line(error), error))
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics,
                                                                        version=document.version))


def _publish_notebook(ls, state: _State, uri: str) -> None:
    """Lint the code cells as one module (as ``torchdevice nb.ipynb`` does) and publish
    each cell's findings on the cell's own URI."""
    from lsprotocol import types

    from .notebooks import join

    notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
    if notebook is None:
        return
    cells = [cell.document for cell in notebook.cells if cell.kind == types.NotebookCellKind.Code]
    sources = [(number, ls.workspace.get_text_document(cell).source) for number, cell in enumerate(cells, start=1)]
    module = join(sources)
    path = _path(uri)
    findings, error = _lint(state, module.source, path)
    per_cell: dict = {cell: [] for cell in cells}
    for finding in findings:
        number, line = module.place(finding.start[0] + 1)
        end_number, end_line = module.place(finding.end[0] + 1)
        end = (end_line - 1, finding.end[1]) if end_number == number else (line, 0)
        per_cell[cells[number - 1]].append(_finding_diagnostic(types, finding, (line - 1, finding.start[1]), end))
    if error and cells:
        number, line = module.place(editor.error_line(error) + 1)
        per_cell[cells[number - 1]].append(_error_diagnostic(types, line - 1, error))
    for cell, diagnostics in per_cell.items():
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell, diagnostics=diagnostics))


def _lint(state: _State, text: str, path: Optional[str]):
    """(findings, error message or None); never raises, as the CLI never stops on one file."""
    try:
        return editor.lint(text, path, state.settings.rules_for(path), state.parts)
    except config.ConfigError as exc:
        return [], f"pyproject.toml: {exc}"
    except Exception as exc:  # noqa: BLE001 - one document must not stop the server
        from .runner import one_line

        return [], f"internal error: {type(exc).__name__}: {one_line(str(exc))}"


def _finding_diagnostic(types, finding: editor.Finding, start, end):
    """A finding as a warning at ``start``-``end``: code, rule name, the rule page's link."""
    return types.Diagnostic(
        range=_range(types, start, end), message=_message(finding), severity=types.DiagnosticSeverity.Warning,
        code=finding.code, code_description=types.CodeDescription(href=_page_uri(finding.code)),
        source="torchdevice", data={"fixable": finding.fixable, "unsafe": finding.unsafe},
    )


def _error_diagnostic(types, line: int, message: str):
    """A file that cannot be checked: one error on the (0-based) line it names."""
    return types.Diagnostic(range=_range(types, (line, 0), (line + 1, 0)), message=message,
                            severity=types.DiagnosticSeverity.Error, source="torchdevice")


def _message(finding: editor.Finding) -> str:
    """The message and the rule's name (``... [torch-load-without-map-location]``)."""
    from .rules import RULES_BY_CODE

    return f"{finding.message} [{RULES_BY_CODE[finding.code].NAME}]"


def _range(types, start, end):
    return types.Range(start=types.Position(line=start[0], character=start[1]),
                       end=types.Position(line=end[0], character=end[1]))


def _page_uri(code: str) -> str:
    """A file with the rule's page (from the package: works from a wheel), written once."""
    from .ruledocs import rule_page

    folder = Path.home() / ".cache" / "flake8-torchdevice" / f"rules-{__version__}"
    page = folder / f"{code}.md"
    if not page.exists():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            page.write_text(rule_page(code), encoding="utf-8")
        except OSError:
            pass  # the link may not open; the diagnostic stands
    return page.as_uri()


def _current(ls, state: _State, uri: str):
    """(text, findings) of the document as it is now."""
    document = ls.workspace.get_text_document(uri)
    cached = state.findings.get(uri)
    if cached is None or cached[0] != document.source:
        cached = (document.source, _lint(state, document.source, _path(uri))[0])
        state.findings[uri] = cached
    return cached


def _edit(types, uri: str, old: str, new: str):
    change = editor.replacement(old, new)
    if change is None:
        return None
    start, end, text = change
    edit = types.TextEdit(range=_range(types, (start, 0), (end, 0)), new_text=text)
    return types.WorkspaceEdit(changes={uri: [edit]})


def _fix_all_edit(ls, state: _State, uri: str):
    from lsprotocol import types

    text, findings = _current(ls, state, uri)
    safe = [f.violation for f in findings if f.fixable and not f.unsafe]
    return _edit(types, uri, text, editor.fixed_text(text, _path(uri), safe, unsafe=False)) if safe else None


def _code_actions(ls, state: _State, params):
    from lsprotocol import types

    uri = params.text_document.uri
    text, findings = _current(ls, state, uri)
    first, last = params.range.start.line, params.range.end.line
    actions = []
    for finding in findings:
        if not (first <= finding.start[0] <= last or finding.start[0] <= first <= finding.end[0]):
            continue
        if finding.fixable:
            fixed = editor.fixed_text(text, _path(uri), [finding.violation], unsafe=finding.unsafe)
            edit = _edit(types, uri, text, fixed)
            if edit is not None:
                title = f"Fix {finding.code}" + (" (unsafe: changes behaviour)" if finding.unsafe else "")
                actions.append(types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, edit=edit,
                                                is_preferred=not finding.unsafe))
        noqa = _edit(types, uri, text, editor.with_noqa(text, finding.violation.line, finding.code))
        if noqa is not None:
            actions.append(types.CodeAction(title=f"Suppress {finding.code} with # noqa: {finding.code}",
                                            kind=types.CodeActionKind.QuickFix, edit=noqa))
    fix_all = _fix_all_edit(ls, state, uri)
    if fix_all is not None:
        actions.append(types.CodeAction(
            title="Fix all safe TDV findings in this file", kind=FIX_ALL_KIND, edit=fix_all))
    only = params.context.only
    if only:
        actions = [a for a in actions if any(a.kind == k or a.kind.startswith(k + ".") for k in only)]
    return actions
