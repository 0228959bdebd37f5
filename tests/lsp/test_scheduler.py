"""``rnnfix.lsp.scheduler``: debounced analyses, stale ones cancelled or
dropped. The timers are the test's (nothing waits on a clock): a test fires
them itself, and an analysis runs until the test lets it finish."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from rnnfix.lsp.scheduler import Result, Scheduler


@dataclass
class Timer:
    delay: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class Timers:
    made: list[Timer] = field(default_factory=list)

    def later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(delay, callback)
        self.made.append(timer)
        return timer

    def armed(self) -> list[Timer]:
        return [t for t in self.made if not t.cancelled]

    def fire(self) -> None:
        for timer in self.armed():
            timer.cancelled = True  # fired once
            timer.callback()


class Editor:
    """A document's text, an analysis the test releases, what was published."""

    def __init__(self) -> None:
        self.text: dict[str, str] = {}
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.release: dict[str, asyncio.Event] = {}
        self.published: list[tuple[str, str, str]] = []
        self.timers = Timers()
        self.scheduler: Scheduler[str, str] = Scheduler(
            self.snapshot, self.analyse, self.publish, delay=0.1, later=self.timers.later
        )

    def snapshot(self, key: str) -> str | None:
        return self.text.get(key)

    async def analyse(self, text: str) -> str:
        self.started.append(text)
        gate = self.release.setdefault(text, asyncio.Event())
        try:
            await gate.wait()
        except asyncio.CancelledError:
            self.cancelled.append(text)
            raise
        return f"analysis of {text!r}"

    def publish(self, key: str, done: Result[str, str]) -> None:
        self.published.append((key, done.snapshot, done.value))

    def edit(self, key: str, text: str) -> None:
        self.text[key] = text
        self.scheduler.changed(key)

    def finish(self, text: str) -> None:
        self.release.setdefault(text, asyncio.Event()).set()


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def test_edits_within_the_delay_make_one_analysis_of_the_last_text() -> None:
    async def body() -> None:
        ed = Editor()
        for text in ("m", "mo", "mod"):
            ed.edit("a.py", text)
        # Each edit put the timer off: one timer is armed, nothing started.
        assert len(ed.timers.armed()) == 1 and ed.timers.armed()[0].delay == 0.1
        assert ed.started == []
        ed.timers.fire()
        await _settle()
        assert ed.started == ["mod"]
        ed.finish("mod")
        await _settle()
        assert ed.published == [("a.py", "mod", "analysis of 'mod'")]

    asyncio.run(body())


def test_a_change_cancels_the_running_analysis_and_only_the_current_is_published() -> None:
    async def body() -> None:
        ed = Editor()
        ed.edit("a.py", "v1")
        ed.timers.fire()
        await _settle()
        assert ed.started == ["v1"]
        ed.edit("a.py", "v2")  # while v1's analysis runs
        await _settle()
        assert ed.cancelled == ["v1"]
        ed.finish("v1")  # too late: it was cancelled
        ed.timers.fire()
        await _settle()
        ed.finish("v2")
        await _settle()
        assert ed.published == [("a.py", "v2", "analysis of 'v2'")]
        latest = ed.scheduler.latest("a.py")
        assert latest is not None and ed.scheduler.is_current("a.py", latest)

    asyncio.run(body())


def test_a_result_that_comes_back_for_a_changed_document_is_dropped() -> None:
    """An analysis that finishes although it was cancelled (the work was
    done already) is not published: its document changed since."""

    async def body() -> None:
        ed = Editor()
        published: list[str] = []

        async def stubborn(text: str) -> str:
            await asyncio.shield(ed.release.setdefault(text, asyncio.Event()).wait())
            return text

        scheduler: Scheduler[str, str] = Scheduler(
            ed.snapshot,
            stubborn,
            lambda key, done: published.append(done.value),
            later=ed.timers.later,
        )
        ed.text["a.py"] = "v1"
        scheduler.changed("a.py")
        ed.timers.fire()
        await _settle()
        ed.text["a.py"] = "v2"
        scheduler.changed("a.py")
        ed.finish("v1")
        await _settle()
        assert published == []
        ed.timers.fire()
        ed.finish("v2")
        await _settle()
        assert published == ["v2"]

    asyncio.run(body())


def test_other_documents_are_not_cancelled() -> None:
    async def body() -> None:
        ed = Editor()
        ed.edit("a.py", "a1")
        ed.timers.fire()
        await _settle()
        ed.edit("b.py", "b1")
        await _settle()
        assert ed.cancelled == []
        ed.finish("a1")
        await _settle()
        assert ed.published == [("a.py", "a1", "analysis of 'a1'")]

    asyncio.run(body())


def test_current_waits_for_the_analysis_of_the_current_text() -> None:
    async def body() -> None:
        ed = Editor()
        ed.edit("a.py", "v1")
        ed.timers.fire()
        await _settle()
        ed.finish("v1")
        await _settle()
        first = await ed.scheduler.current("a.py")
        assert first is not None and first.snapshot == "v1"  # current: no new analysis
        assert ed.started == ["v1"]
        ed.edit("a.py", "v2")  # the timer has not fired yet: current() starts it now
        waiting = asyncio.ensure_future(ed.scheduler.current("a.py"))
        await _settle()
        assert ed.started == ["v1", "v2"] and not waiting.done()
        assert ed.timers.armed() == []  # the debounce's analysis is this one
        ed.finish("v2")
        done = await waiting
        assert done is not None and done.snapshot == "v2"

    asyncio.run(body())


def test_a_closed_document_is_forgotten() -> None:
    async def body() -> None:
        ed = Editor()
        ed.edit("a.py", "v1")
        ed.timers.fire()
        await _settle()
        ed.scheduler.closed("a.py")
        await _settle()
        assert ed.cancelled == ["v1"]
        assert ed.scheduler.latest("a.py") is None
        assert await ed.scheduler.current("a.py") is None

    asyncio.run(body())
