"""A language server of ``rnnfix.lsp.server.create_server`` in this process,
on a thread, over a pair of pipes; and a small JSON-RPC client for it. A
test can then replace what the server runs (its ``analyse``) to hold an
analysis in flight for as long as the test wants."""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from rnnfix.lsp.server import RnnfixServer, create_server

WAIT = 60.0  # the longest a test waits for a message


class InProcess:
    def __init__(self, setup: Callable[[RnnfixServer], None] | None = None) -> None:
        self.server = create_server()
        if setup is not None:
            setup(self.server)
        to_server_r, self._to_server = os.pipe()
        self._from_server, from_server_w = os.pipe()
        self._stdin = os.fdopen(to_server_r, "rb")
        self._stdout = os.fdopen(from_server_w, "wb")
        self._thread = threading.Thread(target=self._serve, name="rnnfix-test-server", daemon=True)
        self._thread.start()
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self._kept: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next = 0

    def _serve(self) -> None:
        try:
            self.server.start_io(self._stdin, self._stdout)
        except SystemExit:  # the ``exit`` notification
            pass

    def _read(self) -> None:
        with os.fdopen(self._from_server, "rb") as out:
            while True:
                length = None
                while True:
                    line = out.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode("ascii").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                assert length is not None
                self.inbox.put(json.loads(out.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        os.write(self._to_server, b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> int:
        self._next += 1
        self.send({"id": self._next, "method": method, "params": params})
        return self._next

    def wait(self, want: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first message ``want`` accepts; the others are kept for later."""
        for i, msg in enumerate(self._kept):
            if want(msg):
                return self._kept.pop(i)
        while True:
            msg = self.inbox.get(timeout=WAIT)
            if want(msg):
                return msg
            self._kept.append(msg)

    def answer(self, ident: int) -> Any:
        msg = self.wait(lambda m: m.get("id") == ident and "method" not in m)
        assert "error" not in msg, msg["error"]
        return msg.get("result")

    def call(self, method: str, params: Any) -> Any:
        return self.answer(self.request(method, params))

    def diagnostics(self, uri: str, version: int | None = None) -> list[dict[str, Any]]:
        def want(m: dict[str, Any]) -> bool:
            if m.get("method") != "textDocument/publishDiagnostics":
                return False
            p = m["params"]
            return bool(p["uri"] == uri and (version is None or p.get("version") == version))

        return list(self.wait(want)["params"]["diagnostics"])

    def published(self) -> list[dict[str, Any]]:
        """Every publishDiagnostics received so far and not waited for."""
        while True:
            try:
                self._kept.append(self.inbox.get_nowait())
            except queue.Empty:
                break
        return [
            m["params"] for m in self._kept if m.get("method") == "textDocument/publishDiagnostics"
        ]

    def initialize(self, capabilities: dict[str, Any] | None = None) -> None:
        self.call(
            "initialize",
            {"processId": os.getpid(), "rootUri": None, "capabilities": capabilities or {}},
        )
        self.notify("initialized", {})

    def close(self) -> None:
        try:
            self.call("shutdown", None)
            self.notify("exit", None)
        finally:
            self._thread.join(WAIT)
            os.close(self._to_server)
