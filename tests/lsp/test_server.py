"""``rnnfix server`` in this process, with the analysis held in flight by the
test: hovers and code actions are answered meanwhile, a change cancels the
held analysis and only the current text's diagnostics are published."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from rnnfix.lsp import analysis  # noqa: E402
from rnnfix.lsp.server import RnnfixServer, Snapshot  # noqa: E402
from tests.cli.conftest import BUGGY  # noqa: E402
from tests.lsp.rpc import WAIT, InProcess  # noqa: E402

# A client that fills in code actions' edits by ``codeAction/resolve`` (one
# that does not gets them in the list, computed for the current text).
RESOLVES = {"textDocument": {"codeAction": {"resolveSupport": {"properties": ["edit"]}}}}


class Held:
    """The server's ``analyse``: the first analysis of each text runs at
    once; a text in ``hold`` waits until the test releases it."""

    def __init__(self) -> None:
        self.hold: set[str] = set()
        self.started: dict[str, threading.Event] = {}
        self.release = threading.Event()
        self.cancelled: list[str] = []

    def install(self, server: RnnfixServer) -> None:
        server.analyse = self.analyse  # type: ignore[method-assign]

    async def analyse(self, snap: Snapshot) -> analysis.Analysis:
        text = snap.doc.text or ""
        self.started.setdefault(text, threading.Event()).set()
        if text in self.hold:
            try:
                await asyncio.to_thread(self.release.wait, WAIT)
            except asyncio.CancelledError:
                self.cancelled.append(text)
                raise
        return analysis.analyse(snap.doc)

    def wait_started(self, text: str) -> None:
        assert self.started.setdefault(text, threading.Event()).wait(WAIT)


def _open(client: InProcess, uri: str, text: str) -> None:
    client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )


def _change(client: InProcess, uri: str, version: int, text: str) -> None:
    client.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
    )


def _at(diag: dict[str, Any]) -> dict[str, Any]:
    return {
        "line": diag["range"]["start"]["line"],
        "character": diag["range"]["start"]["character"],
    }


def test_hover_and_code_actions_are_answered_while_an_analysis_is_in_flight(
    tmp_path: Path,
) -> None:
    held = Held()
    client = InProcess(held.install)
    uri = (tmp_path / "train.py").as_uri()
    edited = BUGGY + "# typing\n"
    newer = BUGGY + "# typing more\n"
    held.hold = {edited}
    try:
        client.initialize(RESOLVES)
        _open(client, uri, BUGGY)
        [diag] = client.diagnostics(uri, version=1)
        _change(client, uri, 2, edited)
        held.wait_started(edited)  # the analysis of version 2 is held from here on
        hover = client.call(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": _at(diag)}
        )
        assert hover is not None and "RNF002" in hover["contents"]["value"]
        actions = client.call(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": diag["range"],
                "context": {"diagnostics": [diag]},
            },
        )
        assert [a["kind"] for a in actions] == ["quickfix", "source.fixAll.rnnfix"]
        assert not held.release.is_set()  # all answered with version 2's analysis held
        # A newer change: the held analysis is cancelled, never published.
        _change(client, uri, 3, newer)
        assert client.diagnostics(uri, version=3) != []
        assert held.cancelled == [edited]
        assert [p["version"] for p in client.published() if p["uri"] == uri] == []
    finally:
        held.release.set()
        client.close()


def test_code_actions_carry_no_edit_until_resolved(tmp_path: Path) -> None:
    """A client that resolves edits gets the list at once, each edit
    computed only by ``codeAction/resolve``."""
    calls: list[str] = []

    def count(server: RnnfixServer) -> None:
        call = server.worker.call

        async def counted(fn: Any, *args: Any) -> Any:
            calls.append(fn.__name__)
            return await call(fn, *args)

        server.worker.call = counted  # type: ignore[method-assign]

    client = InProcess(count)
    uri = (tmp_path / "train.py").as_uri()
    try:
        client.initialize(RESOLVES)
        _open(client, uri, BUGGY)
        [diag] = client.diagnostics(uri, version=1)
        actions = client.call(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": diag["range"],
                "context": {"diagnostics": [diag]},
            },
        )
        assert all("edit" not in a for a in actions)
        assert calls == ["analyse"]  # no fix computed for the list
        quick, fix_all = actions
        resolved = client.call("codeAction/resolve", quick)
        [edit] = resolved["edit"]["changes"][uri]
        assert edit["newText"] == "model.train()  # keep this comment\n"
        assert calls == ["analyse", "fix_edits"]
        resolved = client.call("codeAction/resolve", fix_all)
        assert resolved["edit"]["changes"][uri]
        assert calls == ["analyse", "fix_edits", "fix_all_edits"]
        # Asked again for the same text: not computed again.
        client.call("codeAction/resolve", quick)
        assert calls == ["analyse", "fix_edits", "fix_all_edits"]
    finally:
        client.close()


def test_positions_count_lines_as_python_and_columns_in_utf16(tmp_path: Path) -> None:
    """A form feed inside a line is no line break (for Python and for LSP,
    which break at CR and LF only), and an astral character is two UTF-16
    code units: the diagnostic is where the client sees the code."""
    text = (
        "import torch.nn as nn\n"
        "# page\x0cbreak\n"
        "model = nn.DataParallel(nn.Linear(2, 2))\n"
        'x = "\U0001f600"; model.module.train()\n'
    )
    client = InProcess()
    uri = (tmp_path / "train.py").as_uri()
    try:
        client.initialize()
        _open(client, uri, text)
        [diag] = client.diagnostics(uri, version=1)
        start = len('x = "\U0001f600"; ') + 1  # the emoji takes two code units
        assert diag["range"]["start"] == {"line": 3, "character": start}
    finally:
        client.close()
