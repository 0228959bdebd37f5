"""When the language server analyses a document, without pygls.

Every change of a document makes its earlier analyses stale. An analysis
starts once the document has been quiet for ``delay`` seconds (edits that
arrive within it coalesce into one analysis, of the text as it then is); one
still running when the document changes again is cancelled (the worker
stops it), and a result that comes back for a document changed since is
dropped: only the analysis of the document's current text is published.

Staleness is counted here, one generation per change, not read from the
client's version numbers (a notebook's cells change under one notebook
version, and a save is no edit).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

D = TypeVar("D")  # what is analysed: a snapshot of the document
R = TypeVar("R")  # what an analysis gives

DELAY = 0.1  # seconds of quiet before an analysis starts


class Handle(Protocol):
    def cancel(self) -> None: ...


# ``loop.call_later``: injected so that tests can fire the timers themselves.
Later = Callable[[float, Callable[[], None]], Handle]


@dataclass(frozen=True)
class Result(Generic[D, R]):
    generation: int
    snapshot: D
    value: R


class Scheduler(Generic[D, R]):
    """``snapshot(key)``: the document's current state (None once it is
    closed); ``analyse``: its analysis, awaited (run elsewhere: the protocol
    loop is never held); ``publish``: called with each result that is still
    current when it comes."""

    def __init__(
        self,
        snapshot: Callable[[str], D | None],
        analyse: Callable[[D], Awaitable[R]],
        publish: Callable[[str, Result[D, R]], None],
        delay: float = DELAY,
        later: Later | None = None,
    ) -> None:
        self._snapshot = snapshot
        self._analyse = analyse
        self._publish = publish
        self.delay = delay
        self._later = later
        self._generation: dict[str, int] = {}
        self._timers: dict[str, Handle] = {}
        self._running: dict[str, tuple[int, asyncio.Task[Result[D, R] | None]]] = {}
        self._latest: dict[str, Result[D, R]] = {}

    def changed(self, key: str, delay: float | None = None) -> None:
        """``key`` changed (or was opened, saved): analyse it after ``delay``
        (the scheduler's by default) without a newer change."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self._cancel_running(key)  # stale from now on
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        later = self._later or asyncio.get_running_loop().call_later
        self._timers[key] = later(self.delay if delay is None else delay, lambda: self._fire(key))

    def closed(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._cancel_running(key)
        self._generation.pop(key, None)
        self._latest.pop(key, None)

    def latest(self, key: str) -> Result[D, R] | None:
        """The last result published for ``key`` (maybe of an older text)."""
        return self._latest.get(key)

    def is_current(self, key: str, result: Result[D, R]) -> bool:
        return self._generation.get(key) == result.generation

    async def current(self, key: str) -> Result[D, R] | None:
        """The analysis of ``key``'s current text: the last one when it is
        current, else one started now (or the one running) and awaited.
        None when the document is closed, or changes again meanwhile."""
        known = self._latest.get(key)
        if known is not None and self.is_current(key, known):
            return known
        generation = self._generation.get(key)
        if generation is None:
            return None
        running = self._running.get(key)
        if running is None or running[0] != generation:
            timer = self._timers.pop(key, None)
            if timer is not None:
                timer.cancel()
            running = self._start(key)
        try:
            return await asyncio.shield(running[1])
        except asyncio.CancelledError:
            if running[1].cancelled():  # cancelled by a newer change, not ours
                return None
            raise

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        if key in self._generation:
            self._start(key)

    def _start(self, key: str) -> tuple[int, asyncio.Task[Result[D, R] | None]]:
        generation = self._generation[key]
        task = asyncio.ensure_future(self._run(key, generation))
        self._running[key] = (generation, task)
        task.add_done_callback(lambda t: self._done(key, t))
        return generation, task

    async def _run(self, key: str, generation: int) -> Result[D, R] | None:
        snapshot = self._snapshot(key)
        if snapshot is None:
            return None
        value = await self._analyse(snapshot)
        result = Result(generation, snapshot, value)
        if self._generation.get(key) != generation:
            return None  # the document changed while it ran: dropped
        self._latest[key] = result
        self._publish(key, result)
        return result

    def _done(self, key: str, task: asyncio.Task[Result[D, R] | None]) -> None:
        running = self._running.get(key)
        if running is not None and running[1] is task:
            del self._running[key]
        if not task.cancelled():
            task.exception()  # retrieved: a failed analysis is the caller's to say (publish)

    def _cancel_running(self, key: str) -> None:
        running = self._running.pop(key, None)
        if running is not None:
            running[1].cancel()
