"""The analysis process of ``rnnfix server``, without pygls.

Checking a large file takes a CPU for a while; done in the server's own
process it would hold the protocol loop (and, in a thread, the GIL), and a
hover would wait behind it. So every analysis and every fix the client asks
for runs in one child process, one at a time, while the protocol loop answers
the rest from what it already has. A call the server no longer wants (its
document changed since: the analysis is stale) is stopped by ending the
process; the next call starts a new one.

Where the platform has it, processes start from a fork server that has
imported the engine and every rule once (``rnnfix.lsp.preload``), so a new
process is ready at once; elsewhere (Windows) each imports them itself.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

T = TypeVar("T")


class WorkerError(Exception):
    """The call raised in the analysis process, or the process died: one line."""


def _context() -> Any:  # a ForkServerContext or SpawnContext (typeshed has no common type)
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["rnnfix.lsp.preload"])
        return ctx
    return multiprocessing.get_context("spawn")


def _serve(conn: Connection) -> None:
    """The analysis process: calls in, results out, until the server goes."""
    # Ctrl-C in the editor's terminal is the server's to handle.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):
            return  # the server has gone
        try:
            reply: tuple[bool, Any] = (True, fn(*args))
        except Exception as exc:  # noqa: BLE001 - said to the server, which goes on
            reply = (False, f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        except Exception as exc:  # noqa: BLE001 - a result that does not pickle
            conn.send((False, f"{type(exc).__name__}: {exc}"))


class Worker:
    """One analysis process, started on first use (or by ``start``), used by
    one call at a time. Cancelling a call (``asyncio.Task.cancel``) that is
    running ends the process."""

    def __init__(self) -> None:
        self._ctx: Any = None
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._lock = asyncio.Lock()
        # The blocking ends of the pipe (start, send, receive) run on this
        # thread, never on the protocol loop.
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rnnfix-worker")

    async def start(self) -> None:
        async with self._lock:
            await self._ensure()

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the analysis process: ``fn`` a module-level
        function, its arguments and result plain data (they are pickled)."""
        loop = asyncio.get_running_loop()
        async with self._lock:
            conn = await self._ensure()
            try:
                await loop.run_in_executor(self._io, conn.send, (fn, args))
                ok, value = await loop.run_in_executor(self._io, conn.recv)
            except asyncio.CancelledError:
                self.stop()  # its result is no longer wanted: stop the work
                raise
            except (EOFError, OSError) as exc:
                self.stop()
                raise WorkerError(
                    f"the analysis process stopped: {exc or type(exc).__name__}"
                ) from None
        if not ok:
            raise WorkerError(value)
        return value  # type: ignore[no-any-return]

    async def _ensure(self) -> Connection:
        if self._proc is None or not self._proc.is_alive() or self._conn is None:
            self.stop()
            loop = asyncio.get_running_loop()
            self._conn = await loop.run_in_executor(self._io, self._spawn)
        return self._conn

    def _spawn(self) -> Connection:
        if self._ctx is None:
            self._ctx = _context()
        ours: Connection
        theirs: Connection
        ours, theirs = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(theirs,), name="rnnfix-analysis", daemon=True)
        proc.start()
        theirs.close()  # the process holds its end: its exit reads as EOF here
        self._proc = proc
        return ours

    def stop(self) -> None:
        """End the process (a call waiting on it then sees it end)."""
        proc, self._proc, self._conn = self._proc, None, None
        if proc is not None and proc.is_alive():
            proc.kill()
            # Reaped on the pipe's thread, once a receive there has seen it end.
            self._io.submit(proc.join, 5)

    def close(self) -> None:
        self.stop()
        self._io.shutdown(wait=False, cancel_futures=True)
