"""``rnnfix server``: the Language Server Protocol over stdio, on pygls.

- diagnostics when a document (or a notebook) is opened, changed or saved:
  after a short quiet time (``scheduler.DELAY``: edits typed within it make
  one analysis), checked in the analysis process (``worker``) so that the
  protocol loop answers hovers and code actions meanwhile; only the analysis
  of a document's current text is published (``scheduler``);
- a file that does not parse, or that rnnfix could not check, gets one
  diagnostic saying why (at the syntax error's line and column); a broken
  ``pyproject.toml`` a message (``window/showMessage``), once per version of
  the file, and the document is checked with the default settings;
- a quick fix per finding whose fix applies under the settings (safe, or
  unsafe with ``unsafe-fixes = true``), and "fix all" as the
  ``source.fixAll.rnnfix`` code action. Their edits are computed only when
  asked: in ``codeAction/resolve`` for a client that resolves edits, else
  for the actions of the range the client asks about;
- the rule's documentation on hover over a finding;
- settings from the ``[tool.rnnfix]`` of the document's nearest
  ``pyproject.toml``;
- notebooks: the cells a client sends (``notebookDocument/*``) are checked as
  one notebook, each diagnostic and edit on its cell.

What a document says is worked out by ``rnnfix.lsp.analysis``; this module
only speaks the protocol.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from rnnfix._version import __version__
from rnnfix.config.settings import Settings
from rnnfix.lsp import analysis, convert
from rnnfix.lsp.analysis import (
    Analysis,
    CellEdits,
    Document,
    Item,
    Problem,
    SettingsCache,
)
from rnnfix.lsp.scheduler import Result, Scheduler
from rnnfix.lsp.worker import Worker, WorkerError
from rnnfix.report.rulelinks import rule_doc
from rnnfix.source.lines import split_lines

F = TypeVar("F", bound=Callable[..., Any])

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.rnnfix"


@dataclass(frozen=True)
class Snapshot:
    """A document as it was analysed: what the analysis read, the client's
    version, and the lines of each text (the document's, or each cell's by
    its uri) that positions are counted in."""

    doc: Document
    version: int | None
    cells: list[str] | None  # a notebook's cell uris, in order
    lines: dict[str, list[str]]


Done = Result[Snapshot, Analysis]


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
        self.settings_cache = SettingsCache()
        self.cell_owner: dict[str, str] = {}  # cell uri -> notebook uri
        self.notebooks: set[str] = set()
        self.worker = Worker()
        # Edits already computed for the analysis of a document's current
        # text, by action (a client that does not resolve asks for them again
        # at each cursor move): key -> (generation, action data -> edits).
        self.edits: dict[str, tuple[int, dict[str, CellEdits]]] = {}
        self.scheduler: Scheduler[Snapshot, Analysis] = Scheduler(
            self.snapshot, lambda snap: self.analyse(snap), self.publish
        )

    def settings(self, uri: str) -> Settings:
        settings, error = self.settings_cache.settings_for(to_fs_path(uri))
        if error is not None:
            self.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Error,
                    message=f"rnnfix: {error}; checking with the default settings",
                )
            )
        return settings

    # --- what is analysed, and its result -------------------------------------

    def snapshot(self, key: str) -> Snapshot | None:
        if key in self.notebooks:
            return self._notebook_snapshot(key)
        if unquote(key) not in self.workspace.text_documents:
            return None  # closed
        doc = self.workspace.get_text_document(key)
        text = doc.source
        return Snapshot(
            Document(_path(key), self.settings(key), text=text),
            doc.version,
            None,
            {key: split_lines(text)},
        )

    def _notebook_snapshot(self, key: str) -> Snapshot | None:
        notebook = self.workspace.get_notebook_document(notebook_uri=key)
        if notebook is None:
            return None
        uris = [cell.document for cell in notebook.cells]
        texts = [self.workspace.get_text_document(uri).source for uri in uris]
        for uri in uris:
            self.cell_owner[uri] = key
        cells = tuple(
            (cell.kind == types.NotebookCellKind.Code, text)
            for cell, text in zip(notebook.cells, texts, strict=True)
        )
        return Snapshot(
            Document(_path(key), self.settings(key), cells=cells),
            notebook.version,
            uris,
            {uri: split_lines(text) for uri, text in zip(uris, texts, strict=True)},
        )

    async def analyse(self, snapshot: Snapshot) -> Analysis:
        try:
            return await self.worker.call(analysis.analyse, snapshot.doc)
        except WorkerError as exc:
            return Analysis(problems=[Problem(f"internal error: {exc}")])

    def publish(self, key: str, done: Done) -> None:
        snap, result = done.snapshot, done.value
        for index, uri in enumerate(snap.cells or [key]):
            cell = None if snap.cells is None else index
            lines = snap.lines[uri]
            diagnostics = [
                convert.problem_diagnostic(lines, p) for p in result.problems if p.cell == cell
            ]
            diagnostics += [convert.diagnostic(lines, i) for i in result.items if i.cell == cell]
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(
                    uri=uri,
                    version=snap.version if snap.cells is None else None,
                    diagnostics=diagnostics,
                )
            )

    def key(self, uri: str) -> str:
        """The document whose analysis covers ``uri``: a cell's notebook."""
        return self.cell_owner.get(uri, uri)

    def resolves_edits(self) -> bool:
        """Whether the client fills in a code action's edit by ``codeAction/resolve``."""
        caps = self.client_capabilities.text_document
        action = caps.code_action if caps is not None else None
        support = action.resolve_support if action is not None else None
        return support is not None and "edit" in support.properties


# The handlers below, registered on each server ``create_server`` makes.
_FEATURES: list[tuple[str, Any, Callable[..., Any]]] = []


def _feature(method: str, options: Any = None) -> Callable[[F], F]:
    def register(fn: F) -> F:
        _FEATURES.append((method, options, fn))
        return fn

    return register


def create_server() -> RnnfixServer:
    ls = RnnfixServer()
    for method, options, fn in _FEATURES:
        ls.feature(method, options)(fn)
    return ls


def _path(uri: str) -> str:
    return to_fs_path(uri) or uri


@_feature(types.INITIALIZED)
async def initialized(ls: RnnfixServer, params: types.InitializedParams) -> None:
    """Started before the first document opens: the analysis process, and
    the rules' documentation that hovers show (importing the rules takes a
    second, which the first hover would otherwise wait)."""
    from rnnfix.rules import all_rules

    await asyncio.gather(
        ls.worker.start(), asyncio.get_running_loop().run_in_executor(None, all_rules)
    )


@_feature(types.SHUTDOWN)
def shutdown(ls: RnnfixServer, params: Any) -> None:
    ls.worker.close()


@_feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: RnnfixServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.scheduler.changed(ls.key(params.text_document.uri), delay=0)


@_feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: RnnfixServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.scheduler.changed(ls.key(params.text_document.uri))


@_feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: RnnfixServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.scheduler.changed(ls.key(params.text_document.uri), delay=0)


@_feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: RnnfixServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.scheduler.closed(uri)
    ls.edits.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@_feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: RnnfixServer, params: types.DidOpenNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    ls.notebooks.add(uri)
    for cell in params.notebook_document.cells:
        ls.cell_owner[cell.document] = uri
    ls.scheduler.changed(uri, delay=0)


@_feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: RnnfixServer, params: types.DidChangeNotebookDocumentParams) -> None:
    ls.scheduler.changed(params.notebook_document.uri)


@_feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: RnnfixServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls.scheduler.changed(params.notebook_document.uri, delay=0)


@_feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_did_close(ls: RnnfixServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    ls.scheduler.closed(uri)
    ls.edits.pop(uri, None)
    ls.notebooks.discard(uri)
    cells = [cell for cell, owner in ls.cell_owner.items() if owner == uri]
    for cell_uri in cells:
        del ls.cell_owner[cell_uri]
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[])
        )


# --- code actions and hover -------------------------------------------------------


def _cell_of(snap: Snapshot, uri: str) -> int | None:
    return None if snap.cells is None or uri not in snap.cells else snap.cells.index(uri)


def _workspace_edit(key: str, snap: Snapshot, edits: CellEdits) -> types.WorkspaceEdit:
    changes: dict[str, list[types.TextEdit]] = {}
    for cell, cell_edits in edits.items():
        target = key if cell is None or snap.cells is None else snap.cells[cell]
        changes[target] = convert.text_edits(snap.lines[target], cell_edits)
    return types.WorkspaceEdit(changes=changes)


def _overlaps(item_range: types.Range, wanted: types.Range) -> bool:
    return not (item_range.end.line < wanted.start.line or item_range.start.line > wanted.end.line)


def _title(item: Item) -> str:
    fix = item.finding.fix
    assert fix is not None
    title = f"rnnfix: {fix.description or 'fix ' + item.finding.code}"
    return title + ("" if fix.safe else " (unsafe)")


def _quick_fix_data(key: str, item: Item) -> dict[str, Any]:
    """What ``codeAction/resolve`` finds the finding again by (in the
    analysis of the document's text then)."""
    f = item.finding
    return {
        "uri": key,
        "code": f.code,
        "line": f.line,
        "col": f.col,
        "message": f.message,
        "cell": item.cell,
    }


def _find(result: Analysis, data: dict[str, Any]) -> Item | None:
    for item in result.items:
        f = item.finding
        if item.fixable and (f.code, f.line, f.col, f.message, item.cell) == (
            data.get("code"),
            data.get("line"),
            data.get("col"),
            data.get("message"),
            data.get("cell"),
        ):
            return item
    return None


@_feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True
    ),
)
async def code_action(ls: RnnfixServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The actions at ``params.range`` of the last analysis, their edits
    left to ``codeAction/resolve`` where the client resolves them. An
    analysis that is not of the current text yet is not waited for: its
    actions are offered, and resolved against the current text."""
    uri = params.text_document.uri
    key = ls.key(uri)
    done = ls.scheduler.latest(key)
    if done is None:
        return []
    snap, result = done.snapshot, done.value
    cell = _cell_of(snap, uri)
    lines = snap.lines.get(uri, [])
    only = params.context.only
    actions: list[types.CodeAction] = []
    if not only or any(k == types.CodeActionKind.QuickFix or "quickfix" in k for k in only):
        for item in result.items:
            if item.cell != cell or not item.fixable:
                continue
            if not _overlaps(convert.finding_range(lines, item), params.range):
                continue
            assert item.finding.fix is not None
            actions.append(
                types.CodeAction(
                    title=_title(item),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[convert.diagnostic(lines, item)],
                    is_preferred=item.finding.fix.safe,
                    data=_quick_fix_data(key, item),
                )
            )
    if result.fixable and (not only or any(FIX_ALL.startswith(k) for k in only)):
        actions.append(
            types.CodeAction(
                title="rnnfix: fix all", kind=FIX_ALL, data={"uri": key, "fix_all": True}
            )
        )
    if ls.resolves_edits():
        return actions
    resolved = [await code_action_resolve(ls, action) for action in actions]
    return [a for a in resolved if a.edit is not None and a.edit.changes]


@_feature(types.CODE_ACTION_RESOLVE)
async def code_action_resolve(ls: RnnfixServer, action: types.CodeAction) -> types.CodeAction:
    """The action's edit, against the document's current text: its analysis
    (waited for when the last one is stale), then the one fix applied alone,
    or the fix loop for "fix all". An action whose fix no longer applies
    comes back without an edit."""
    data = action.data if isinstance(action.data, dict) else {}
    key = data.get("uri")
    if not isinstance(key, str):
        return action
    done = await ls.scheduler.current(key)
    if done is None:
        return action
    snap = done.snapshot
    generation, known = ls.edits.get(key, (None, {}))
    if generation != done.generation:
        known = {}
        ls.edits[key] = (done.generation, known)
    wanted = json.dumps(data, sort_keys=True)
    edits = known.get(wanted)
    if edits is None:
        try:
            if data.get("fix_all"):
                edits = await ls.worker.call(analysis.fix_all_edits, snap.doc)
            else:
                item = _find(done.value, data)
                if item is None:
                    return action
                edits = await ls.worker.call(analysis.fix_edits, snap.doc, item.finding)
        except WorkerError as exc:
            ls.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"rnnfix: {exc}")
            )
            return action
        known[wanted] = edits
    if edits:
        action.edit = _workspace_edit(key, snap, edits)
    return action


@_feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: RnnfixServer, params: types.HoverParams) -> types.Hover | None:
    """The rule's documentation for a finding under the cursor, from the last
    analysis (never waiting for one)."""
    uri = params.text_document.uri
    done = ls.scheduler.latest(ls.key(uri))
    if done is None:
        return None
    snap = done.snapshot
    cell = _cell_of(snap, uri)
    lines = snap.lines.get(uri, [])
    at = params.position
    for item in done.value.items:
        if item.cell != cell:
            continue
        r = convert.finding_range(lines, item)
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
    ls = create_server()
    try:
        ls.start_io()
    finally:
        # A client that goes without ``shutdown``: the analysis under way is
        # stopped, not waited for.
        ls.worker.close()
