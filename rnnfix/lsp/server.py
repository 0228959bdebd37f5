"""``rnnfix server``: the Language Server Protocol over stdio, on pygls.

- diagnostics when a document (or a notebook) is opened, changed or saved;
- a quick fix per finding whose fix applies under the settings (safe, or
  unsafe with ``unsafe-fixes = true``), and "fix all" as the
  ``source.fixAll.rnnfix`` code action;
- the rule's documentation on hover over a finding;
- settings from the ``[tool.rnnfix]`` of the document's nearest
  ``pyproject.toml``;
- notebooks: the cells a client sends (``notebookDocument/*``) are checked as
  one notebook, each diagnostic and edit on its cell.

What a document says is worked out by ``rnnfix.lsp.analysis``; this module
only speaks the protocol.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from rnnfix._version import __version__
from rnnfix.config.settings import Settings
from rnnfix.lsp.analysis import Analysis, Item, TextEdit, analyse_notebook, analyse_python
from rnnfix.lsp.analysis import settings_for as _settings_for
from rnnfix.report.rulelinks import rule_doc, rule_url

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.rnnfix"
SOURCE = "rnnfix"


class RnnfixServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "rnnfix",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithCells(
                        cells=[types.NotebookCellLanguage(language="python")],
                        notebook="jupyter-notebook",
                    )
                ],
                save=True,
            ),
        )
        self.settings_cache: dict[Path, tuple[float, Settings]] = {}
        # uri -> (analysis, the uri of each cell for a notebook, or None)
        self.analyses: dict[str, tuple[Analysis, list[str] | None]] = {}
        self.cell_owner: dict[str, str] = {}  # cell uri -> notebook uri

    def settings(self, uri: str) -> Settings:
        return _settings_for(to_fs_path(uri), self.settings_cache)


server = RnnfixServer()


def _path(uri: str) -> str:
    return to_fs_path(uri) or uri


# --- positions ---------------------------------------------------------------


def _utf16(line: str, col: int) -> int:
    """A character column of ``line`` as UTF-16 code units (LSP's default)."""
    return len(line[:col].encode("utf-16-le")) // 2


def _position(lines: list[str], line: int, col: int) -> types.Position:
    text = lines[line] if 0 <= line < len(lines) else ""
    return types.Position(line=line, character=_utf16(text, col))


def _range(lines: list[str], f: Item) -> types.Range:
    finding = f.finding
    start = _position(lines, finding.line - 1, finding.col - 1)
    if finding.end_line is not None and finding.end_col is not None:
        end = _position(lines, finding.end_line - 1, finding.end_col - 1)
    else:
        end = _position(lines, finding.line - 1, len(lines[finding.line - 1]) if lines else 0)
    return types.Range(start=start, end=end)


def _text_edits(lines: list[str], edits: list[TextEdit]) -> list[types.TextEdit]:
    return [
        types.TextEdit(
            range=types.Range(start=_position(lines, *e.start), end=_position(lines, *e.end)),
            new_text=e.text,
        )
        for e in edits
    ]


def _lines(ls: RnnfixServer, uri: str) -> list[str]:
    return ls.workspace.get_text_document(uri).source.splitlines(keepends=True)


# --- checking ------------------------------------------------------------------


def _diagnostic(lines: list[str], item: Item, unsafe: bool) -> types.Diagnostic:
    f = item.finding
    fixable = f.fix is not None and (f.fix.safe or unsafe)
    return types.Diagnostic(
        range=_range(lines, item),
        message=f.message,
        severity=types.DiagnosticSeverity.Warning,
        code=f.code,
        code_description=types.CodeDescription(href=rule_url(f.code)),
        source=SOURCE,
        data={"fixable": fixable},
    )


def check_document(ls: RnnfixServer, uri: str) -> None:
    if uri in ls.cell_owner:
        check_notebook(ls, ls.cell_owner[uri])
        return
    doc = ls.workspace.get_text_document(uri)
    settings = ls.settings(uri)
    analysis = analyse_python(doc.source, _path(uri), settings)
    ls.analyses[uri] = (analysis, None)
    lines = doc.source.splitlines(keepends=True)
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=uri,
            version=doc.version,
            diagnostics=[_diagnostic(lines, i, settings.unsafe_fixes) for i in analysis.items],
        )
    )


def check_notebook(ls: RnnfixServer, notebook_uri: str) -> None:
    notebook = ls.workspace.get_notebook_document(notebook_uri=notebook_uri)
    if notebook is None:
        return
    cell_uris = [cell.document for cell in notebook.cells]
    for cell_uri in cell_uris:
        ls.cell_owner[cell_uri] = notebook_uri
    cells = [
        (
            cell.kind == types.NotebookCellKind.Code,
            ls.workspace.get_text_document(cell.document).source,
        )
        for cell in notebook.cells
    ]
    settings = ls.settings(notebook_uri)
    analysis = analyse_notebook(cells, _path(notebook_uri), settings)
    ls.analyses[notebook_uri] = (analysis, cell_uris)
    for index, cell_uri in enumerate(cell_uris):
        lines = _lines(ls, cell_uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=cell_uri,
                diagnostics=[
                    _diagnostic(lines, i, settings.unsafe_fixes)
                    for i in analysis.items
                    if i.cell == index
                ],
            )
        )


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: RnnfixServer, params: types.DidOpenTextDocumentParams) -> None:
    check_document(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: RnnfixServer, params: types.DidChangeTextDocumentParams) -> None:
    check_document(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: RnnfixServer, params: types.DidSaveTextDocumentParams) -> None:
    check_document(ls, params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: RnnfixServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.analyses.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: RnnfixServer, params: types.DidOpenNotebookDocumentParams) -> None:
    check_notebook(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: RnnfixServer, params: types.DidChangeNotebookDocumentParams) -> None:
    check_notebook(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: RnnfixServer, params: types.DidSaveNotebookDocumentParams) -> None:
    check_notebook(ls, params.notebook_document.uri)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_did_close(ls: RnnfixServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    _analysis, cells = ls.analyses.pop(uri, (None, None))
    for cell_uri in cells or []:
        ls.cell_owner.pop(cell_uri, None)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[])
        )


# --- code actions and hover -------------------------------------------------------


def _items_of(ls: RnnfixServer, uri: str) -> tuple[Analysis, list[str] | None, int | None]:
    """The analysis that covers ``uri``, its cells' uris, and ``uri``'s cell."""
    owner = ls.cell_owner.get(uri)
    if owner is not None and owner in ls.analyses:
        analysis, cells = ls.analyses[owner]
        return analysis, cells, (cells or []).index(uri) if uri in (cells or []) else None
    if uri not in ls.analyses:
        check_document(ls, uri)
    analysis, cells = ls.analyses.get(uri, (Analysis(), None))
    return analysis, cells, None


def _workspace_edit(
    ls: RnnfixServer, uri: str, cells: list[str] | None, edits: dict[int | None, list[TextEdit]]
) -> types.WorkspaceEdit:
    changes: dict[str, list[types.TextEdit]] = {}
    for cell, cell_edits in edits.items():
        target = uri if cell is None or cells is None else cells[cell]
        changes[target] = _text_edits(_lines(ls, target), cell_edits)
    return types.WorkspaceEdit(changes=changes)


def _overlaps(item_range: types.Range, wanted: types.Range) -> bool:
    return not (item_range.end.line < wanted.start.line or item_range.start.line > wanted.end.line)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False
    ),
)
def code_action(ls: RnnfixServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    analysis, cells, cell = _items_of(ls, uri)
    only = params.context.only
    actions: list[types.CodeAction] = []
    lines = _lines(ls, uri)
    if not only or any(k == types.CodeActionKind.QuickFix or "quickfix" in k for k in only):
        for item in analysis.items:
            if item.cell != cell or not item.edits:
                continue
            if not _overlaps(_range(lines, item), params.range):
                continue
            f = item.finding
            assert f.fix is not None
            title = f"rnnfix: {f.fix.description or 'fix ' + f.code}"
            actions.append(
                types.CodeAction(
                    title=title + ("" if f.fix.safe else " (unsafe)"),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[_diagnostic(lines, item, True)],
                    edit=_workspace_edit(ls, uri, cells, item.edits),
                    is_preferred=f.fix.safe,
                )
            )
    if analysis.fix_all and (not only or any(FIX_ALL.startswith(k) for k in only)):
        actions.append(
            types.CodeAction(
                title="rnnfix: fix all",
                kind=FIX_ALL,
                edit=_workspace_edit(ls, uri, cells, analysis.fix_all),
            )
        )
    return actions


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: RnnfixServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    analysis, _cells, cell = _items_of(ls, uri)
    lines = _lines(ls, uri)
    at = params.position
    for item in analysis.items:
        if item.cell != cell:
            continue
        r = _range(lines, item)
        if r.start.line <= at.line <= r.end.line:
            doc = rule_doc(item.finding.code)
            if doc is None:
                continue
            text = f"**{item.finding.code}**: {item.finding.message}\n\n---\n\n{doc}"
            return types.Hover(
                contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                range=r,
            )
    return None


def main() -> None:
    server.start_io()
