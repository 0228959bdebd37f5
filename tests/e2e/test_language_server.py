"""``rnnfix server`` through a real LSP client (pygls') over a real
subprocess (``python -m rnnfix server``): diagnostics on open, change and
save, a quick fix per finding, "fix all", hover with the rule's docs,
settings from ``[tool.rnnfix]``, and a notebook's cells."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402

from tests.cli.conftest import BUGGY, FIXED  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
UNSAFE = "def f(model):\n    model.module.eval()\n"
TIMEOUT = 60.0


class Client:
    """A pygls client that keeps the diagnostics the server publishes."""

    def __init__(self) -> None:
        self.lsp = LanguageClient("rnnfix-tests", "1")
        self.published: dict[str, list[types.Diagnostic]] = {}
        self.changed = asyncio.Event()

        self.messages: list[types.ShowMessageParams] = []

        @self.lsp.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            self.published[params.uri] = list(params.diagnostics)
            self.changed.set()

        @self.lsp.feature(types.WINDOW_SHOW_MESSAGE)
        def show(params: types.ShowMessageParams) -> None:
            self.messages.append(params)
            self.changed.set()

    async def start(self, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        await self.lsp.start_io(sys.executable, "-m", "rnnfix", "server", cwd=str(cwd), env=env)
        await asyncio.wait_for(
            self.lsp.initialize_async(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    root_uri=from_fs_path(str(cwd)),
                )
            ),
            TIMEOUT,
        )
        self.lsp.initialized(types.InitializedParams())

    async def diagnostics(self, uri: str, want: Callable[[list[types.Diagnostic]], bool]) -> Any:
        async def wait() -> list[types.Diagnostic]:
            while uri not in self.published or not want(self.published[uri]):
                self.changed.clear()
                await self.changed.wait()
            return self.published[uri]

        return await asyncio.wait_for(wait(), TIMEOUT)

    async def stop(self) -> None:
        await asyncio.wait_for(self.lsp.shutdown_async(None), TIMEOUT)
        self.lsp.exit(None)
        await asyncio.wait_for(self.lsp.stop(), TIMEOUT)


def _run(tmp_path: Path, body: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        client = Client()
        await client.start(tmp_path)
        try:
            await body(client)
        finally:
            await client.stop()

    asyncio.run(main())


def _open(client: Client, path: Path, text: str) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    client.lsp.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=text
            )
        )
    )
    return uri


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(p: types.Position) -> int:
        return starts[p.line] + p.character  # ASCII here: UTF-16 units are characters

    for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(e.range.start)] + e.new_text + text[offset(e.range.end) :]
    return text


def test_diagnostics_quick_fix_fix_all_and_hover(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(BUGGY)

    async def body(client: Client) -> None:
        uri = _open(client, path, BUGGY)
        [diag] = await client.diagnostics(uri, lambda d: len(d) == 1)
        assert diag.code == "RNF002" and diag.source == "rnnfix"
        assert (diag.range.start.line, diag.range.start.character) == (3, 0)
        assert diag.code_description is not None
        assert diag.code_description.href.endswith("/docs/rules/RNF002.md")

        actions = await client.lsp.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diag.range,
                context=types.CodeActionContext(diagnostics=[diag]),
            )
        )
        assert actions is not None
        by_kind = {a.kind: a for a in actions if isinstance(a, types.CodeAction)}
        quick = by_kind[types.CodeActionKind.QuickFix]
        assert quick.edit is not None and quick.edit.changes is not None
        assert _apply(BUGGY, quick.edit.changes[uri]) == FIXED
        fix_all = by_kind["source.fixAll.rnnfix"]
        assert fix_all.edit is not None and fix_all.edit.changes is not None
        assert _apply(BUGGY, fix_all.edit.changes[uri]) == FIXED

        hover = await client.lsp.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=3, character=2),
            )
        )
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert hover.contents.kind == types.MarkupKind.Markdown
        assert "# RNF002 wrapper-mode-via-module" in hover.contents.value
        assert "## Why is this bad?" in hover.contents.value

        # Edited to the fixed text: the diagnostic goes away.
        client.lsp.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=FIXED)],
            )
        )
        assert await client.diagnostics(uri, lambda d: not d) == []
        # And back, by an incremental change; then saved.
        client.lsp.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line=3, character=5),
                            end=types.Position(line=3, character=5),
                        ),
                        text=".module",
                    )
                ],
            )
        )
        await client.diagnostics(uri, lambda d: len(d) == 1)
        client.published.pop(uri)
        client.lsp.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        assert len(await client.diagnostics(uri, lambda d: True)) == 1

    _run(tmp_path, body)


def test_settings_come_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.rnnfix]\nunsafe-fixes = true\n")
    ignored = tmp_path / "ignored"
    ignored.mkdir()
    (ignored / "pyproject.toml").write_text('[tool.rnnfix]\nignore = ["RNF002"]\n')

    async def body(client: Client) -> None:
        uri = _open(client, tmp_path / "unsafe.py", UNSAFE)
        [diag] = await client.diagnostics(uri, lambda d: len(d) == 1)
        actions = await client.lsp.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diag.range,
                context=types.CodeActionContext(
                    diagnostics=[diag], only=[types.CodeActionKind.QuickFix]
                ),
            )
        )
        assert actions is not None
        [action] = actions
        assert isinstance(action, types.CodeAction) and action.title.endswith("(unsafe)")
        other = _open(client, ignored / "t.py", BUGGY)
        assert await client.diagnostics(other, lambda d: True) == []

    _run(tmp_path, body)


def test_a_file_that_does_not_parse_gets_a_diagnostic_at_the_error(tmp_path: Path) -> None:
    text = BUGGY + "def broken(:\n    pass\n"
    line = text.splitlines().index("def broken(:")

    async def body(client: Client) -> None:
        uri = _open(client, tmp_path / "train.py", text)
        [diag] = await client.diagnostics(uri, lambda d: len(d) == 1)
        assert diag.severity == types.DiagnosticSeverity.Error and diag.source == "rnnfix"
        assert diag.message.startswith("cannot parse: ")
        assert diag.range.start.line == line
        assert diag.range.start.character == len("def broken(")
        # Fixed: the error goes, the finding shows.
        client.lsp.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=BUGGY)],
            )
        )
        [diag] = await client.diagnostics(uri, lambda d: len(d) == 1 and d[0].code == "RNF002")

    _run(tmp_path, body)


def test_a_broken_configuration_is_shown_and_the_defaults_used(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.rnnfix\nignore = ['RNF002']\n")

    async def body(client: Client) -> None:
        uri = _open(client, tmp_path / "train.py", BUGGY)
        [diag] = await client.diagnostics(uri, lambda d: len(d) == 1)
        assert diag.code == "RNF002"  # checked with the default settings
        [message] = client.messages
        assert message.type == types.MessageType.Error
        assert (
            "pyproject.toml" in message.message and "cannot read configuration" in message.message
        )
        # Said once, not on every change.
        client.published.pop(uri)
        client.lsp.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=BUGGY + "\n")],
            )
        )
        await client.diagnostics(uri, lambda d: len(d) == 1)
        assert len(client.messages) == 1

    _run(tmp_path, body)


def test_notebook_cells(tmp_path: Path) -> None:
    cells = [
        "import torch.nn as nn\n",
        "# Notes\n",
        "model = nn.DataParallel(nn.Linear(2, 2))\nmodel.module.train()\n",
    ]
    nb_uri = from_fs_path(str(tmp_path / "train.ipynb"))
    assert nb_uri is not None
    cell_uris = [f"{nb_uri}#cell{i}" for i in range(len(cells))]
    kinds = [
        types.NotebookCellKind.Code,
        types.NotebookCellKind.Markup,
        types.NotebookCellKind.Code,
    ]

    async def body(client: Client) -> None:
        client.lsp.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=nb_uri,
                    notebook_type="jupyter-notebook",
                    version=1,
                    cells=[
                        types.NotebookCell(kind=kind, document=uri)
                        for kind, uri in zip(kinds, cell_uris, strict=True)
                    ],
                ),
                cell_text_documents=[
                    types.TextDocumentItem(
                        uri=uri,
                        language_id="python" if kind == types.NotebookCellKind.Code else "markdown",
                        version=1,
                        text=text,
                    )
                    for kind, uri, text in zip(kinds, cell_uris, cells, strict=True)
                ],
            )
        )
        [diag] = await client.diagnostics(cell_uris[2], lambda d: len(d) == 1)
        assert diag.code == "RNF002"
        assert diag.range.start.line == 1  # line 2 of the third cell
        assert await client.diagnostics(cell_uris[0], lambda d: True) == []
        actions = await client.lsp.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=cell_uris[2]),
                range=diag.range,
                context=types.CodeActionContext(diagnostics=[diag]),
            )
        )
        assert actions is not None
        quick = next(a for a in actions if isinstance(a, types.CodeAction) and a.kind == "quickfix")
        assert quick.edit is not None and quick.edit.changes is not None
        assert list(quick.edit.changes) == [cell_uris[2]]
        assert _apply(cells[2], quick.edit.changes[cell_uris[2]]) == cells[2].replace(
            ".module.", "."
        )

    _run(tmp_path, body)


def test_help_does_not_import_pygls() -> None:
    import subprocess

    code = (
        "import sys\nfrom rnnfix.cli.app import main\nsys.argv = ['rnnfix', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'pygls' not in sys.modules and 'rnnfix.lsp.server' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "server" in done.stdout


def test_without_pygls_the_server_says_what_to_install() -> None:
    import subprocess

    code = (
        "import sys\nsys.modules['pygls'] = None  # as if not installed\n"
        "from rnnfix.cli.app import main\nsys.argv = ['rnnfix', 'server']\nmain()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "pip install 'rnnfix[lsp]'" in done.stderr
