"""How fast does ``rnnfix server`` keep up with typing in a large training script?

    python bench/bench_lsp.py [--keys 12] [--interval 0.08] [--timeout 180]
    PYTHONPATH=/work/main python bench/bench_lsp.py     # another version

Builds a training script of about 1,650 lines (the scripts of
``fixtures/examples/`` copied under new names until it is that long: 60
findings), starts ``python -m rnnfix server`` over stdio (a minimal JSON-RPC
client, no dependency; ``PYTHONPATH`` selects the version), opens the script
and then:

- ``open``: time from ``didOpen`` to the first ``publishDiagnostics``;
- ``hover idle``: hovers on a finding with nothing else going on (the
  floor the machine gives, to read the figures during typing against);
- ``typing``: ``--keys`` ``didChange`` edits ``--interval`` seconds apart (a
  comment typed a character at a time), a ``hover`` on a finding after each
  one; prints the time from the last keystroke to the diagnostics of the last
  version, and the hover latencies (median and p90) while typing;
- ``code action``: the quick fixes at a finding (the list), then
  ``codeAction/resolve`` of one (its edit), then "fix all" resolved, each's
  latency (the list carries the edit itself on a server without resolve);
- ``cli``: ``rnnfix check`` on the same file, as a process, wall and CPU
  time (their ratio says how loaded the machine was).

Prints figures; asserts nothing. A figure the server did not give within
``--timeout`` seconds prints as ``> timeout``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import queue
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "examples"


# --- the script ----------------------------------------------------------------


def _renamed_copy(path: Path, n: int) -> tuple[list[str], str]:
    """The imports of ``path`` and the rest of it, each top-level name (and
    the ``if __name__`` block, made a function) suffixed with ``_n``."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    names = [s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))]
    imports, body = [], []
    for stmt in tree.body:
        assert stmt.end_lineno is not None
        segment = "".join(lines[stmt.lineno - 1 : stmt.end_lineno])
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(segment)
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # the docstring
        if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test):
            segment = "def run_main():\n" + "".join(
                lines[stmt.body[0].lineno - 1 : stmt.end_lineno]
            )
            names.append("run_main")
        body.append(segment)
    out = "\n\n".join(body)
    for name in names:
        out = re.sub(rf"\b{name}\b", f"{name}_{n}", out)
    return imports, out


def training_script(min_lines: int = 1500) -> str:
    imports: set[str] = set()
    parts: list[str] = []
    n = 0
    while sum(p.count("\n") for p in parts) < min_lines:
        for path in sorted(EXAMPLES.glob("*.py")):
            more, body = _renamed_copy(path, n)
            imports.update(more)
            parts.append(body)
        n += 1
    return "".join(sorted(imports)) + "\n\n" + "\n\n\n".join(parts) + "\n"


# --- a minimal LSP client --------------------------------------------------------


class Client:
    """JSON-RPC over the server's stdin/stdout; a thread reads what the server
    sends and stamps each message with its arrival time."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rnnfix", "server"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.inbox: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
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
            body = out.read(length)
            self.inbox.put((time.perf_counter(), json.loads(body)))

    def send(self, message: dict[str, Any]) -> float:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdin.flush()
        return time.perf_counter()

    def notify(self, method: str, params: Any) -> float:
        return self.send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> tuple[int, float]:
        self.next_id += 1
        return self.next_id, self.send({"id": self.next_id, "method": method, "params": params})

    def wait(self, want: Any, timeout: float) -> tuple[float, dict[str, Any]] | None:
        """The first message ``want`` accepts (others are kept for later waits)."""
        deadline = time.perf_counter() + timeout
        kept: list[tuple[float, dict[str, Any]]] = []
        try:
            while (left := deadline - time.perf_counter()) > 0:
                try:
                    at, msg = self.inbox.get(timeout=left)
                except queue.Empty:
                    return None
                if msg.get("method") and "id" in msg:  # a request of the server's: answer it
                    self.send({"id": msg["id"], "result": None})
                    continue
                if want(msg):
                    return at, msg
                kept.append((at, msg))
            return None
        finally:
            for item in kept:
                self.inbox.put(item)

    def answer(self, ident: int, timeout: float) -> tuple[float, dict[str, Any]] | None:
        return self.wait(lambda m: m.get("id") == ident and "method" not in m, timeout)

    def close(self) -> None:
        try:
            ident, _ = self.request("shutdown", None)
            self.answer(ident, 10)
            self.notify("exit", None)
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def _diagnostics(uri: str, version: int | None = None) -> Any:
    def want(m: dict[str, Any]) -> bool:
        if m.get("method") != "textDocument/publishDiagnostics":
            return False
        p = m["params"]
        return bool(p["uri"] == uri and (version is None or p.get("version") == version))

    return want


def _ms(seconds: float | None) -> str:
    return "> timeout" if seconds is None else f"{seconds * 1000:8.0f} ms"


# --- the scenario -------------------------------------------------------------------


def bench(keys: int, interval: float, timeout: float) -> None:
    text = training_script()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "train.py"
        path.write_text(text, encoding="utf-8")
        uri = path.as_uri()
        print(f"{path.name}: {text.count(chr(10))} lines")
        client = Client(folder)
        try:
            _scenario(client, uri, text, keys, interval, timeout)
        finally:
            client.close()
        wall, cpu = _cli(folder, path)
        # Wall over CPU: how loaded the machine was (1.0 on an idle one).
        print(f"cli            rnnfix check: {_ms(wall)} ({_ms(cpu).strip()} CPU)")


def _scenario(
    client: Client, uri: str, text: str, keys: int, interval: float, timeout: float
) -> None:
    capabilities = {
        "textDocument": {
            "codeAction": {
                "resolveSupport": {"properties": ["edit"]},
                "dataSupport": True,
                "codeActionLiteralSupport": {
                    "codeActionKind": {"valueSet": ["quickfix", "source"]}
                },
            },
            "publishDiagnostics": {"versionSupport": True},
        }
    }
    ident, _ = client.request(
        "initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": capabilities}
    )
    client.answer(ident, timeout)
    client.notify("initialized", {})
    sent = client.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
    )
    got = client.wait(_diagnostics(uri), timeout)
    print(f"open           first diagnostics: {_ms(None if got is None else got[0] - sent)}")
    if got is None:
        return
    diagnostics = got[1]["params"]["diagnostics"]
    print(f"               {len(diagnostics)} diagnostics")
    if not diagnostics:
        return
    target = diagnostics[len(diagnostics) // 2]
    at = target["range"]["start"]
    hover = {
        "textDocument": {"uri": uri},
        "position": {"line": at["line"], "character": at["character"]},
    }
    idle = []
    for _ in range(7):
        ident, sent = client.request("textDocument/hover", hover)
        got = client.answer(ident, timeout)
        if got is not None:
            idle.append(got[0] - sent)
    if idle:
        print(f"hover          idle: median {_ms(statistics.median(idle))} (the machine's floor)")

    # Typing: a comment at the end of the file, a character at a time.
    lines = text.split("\n")
    line = len(lines) - 1
    hovers: list[float] = []
    pending: dict[int, float] = {}
    last = 0.0
    version = 1
    for k in range(keys):
        version += 1
        change = {
            "range": {
                "start": {"line": line, "character": k},
                "end": {"line": line, "character": k},
            },
            "text": "#" if k == 0 else "x",
        }
        last = client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
        ident, sent = client.request("textDocument/hover", hover)
        pending[ident] = sent
        time.sleep(interval)
        _collect(client, pending, hovers, 0.0)
    got = client.wait(_diagnostics(uri, version), timeout)
    print(
        f"typing         {keys} keys {interval * 1000:.0f} ms apart; last key to its diagnostics: "
        f"{_ms(None if got is None else got[0] - last)}"
    )
    _collect(client, pending, hovers, timeout)
    if hovers:
        hovers.sort()
        p90 = hovers[min(len(hovers) - 1, int(0.9 * len(hovers)))]
        print(
            f"hover          during typing: median {_ms(statistics.median(hovers))}, "
            f"p90 {_ms(p90)} ({len(hovers)} answered, {len(pending)} not)"
        )
    if got is not None:
        diagnostics = got[1]["params"]["diagnostics"]
    _code_actions(client, uri, diagnostics, timeout)


def _collect(
    client: Client, pending: dict[int, float], hovers: list[float], timeout: float
) -> None:
    """Hover answers that have come (waiting up to ``timeout`` for each left)."""
    for ident in sorted(pending):
        got = client.answer(ident, timeout if timeout else 0.001)
        if got is not None:
            hovers.append(got[0] - pending.pop(ident))


def _code_actions(client: Client, uri: str, diagnostics: list[Any], timeout: float) -> None:
    fixable = [d for d in diagnostics if (d.get("data") or {}).get("fixable")]
    if not fixable:
        print("code action    no fixable diagnostic")
        return
    diag = fixable[len(fixable) // 2]
    ident, sent = client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": diag["range"],
            "context": {"diagnostics": [diag]},
        },
    )
    got = client.answer(ident, timeout)
    print(f"code action    list: {_ms(None if got is None else got[0] - sent)}")
    if got is None:
        return
    actions = got[1].get("result") or []
    for kind, label in (("quickfix", "quick fix"), ("source.fixAll.rnnfix", "fix all")):
        action = next((a for a in actions if a.get("kind") == kind), None)
        if action is None:
            print(f"               {label}: not offered")
        elif "edit" in action:
            print(f"               {label}: edit in the list (no resolve)")
        else:
            ident, sent = client.request("codeAction/resolve", action)
            done = client.answer(ident, timeout)
            has_edit = done is not None and "edit" in (done[1].get("result") or {})
            print(
                f"               {label} resolve: {_ms(None if done is None else done[0] - sent)}"
                f"{'' if has_edit else ' (no edit)'}"
            )


def _cli(folder: Path, path: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of ``rnnfix check`` on ``path``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rnnfix", "check", "--no-cache", str(path)],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=12, help="keystrokes typed (default 12)")
    parser.add_argument(
        "--interval", type=float, default=0.08, help="seconds between keystrokes (default 0.08)"
    )
    parser.add_argument(
        "--timeout", type=float, default=180.0, help="seconds to wait for any one figure"
    )
    args = parser.parse_args()
    bench(args.keys, args.interval, args.timeout)


if __name__ == "__main__":
    main()
