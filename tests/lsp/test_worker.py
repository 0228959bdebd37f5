"""``rnnfix.lsp.worker``: calls run in a child process; a cancelled call
that is running ends that process, and the next call starts a new one."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from rnnfix.lsp.worker import Worker, WorkerError

WAIT = 60.0  # how long a test waits for the child to get somewhere, at most


def _pid() -> int:
    return os.getpid()


def _fail() -> None:
    raise ValueError("no such rule")


def _block(started: str) -> None:
    Path(started).write_text("started")
    time.sleep(3600)


async def _until(path: Path) -> None:
    async def wait() -> None:
        while not path.exists():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(wait(), WAIT)


async def _gone(pid: int) -> None:
    """Until process ``pid`` has ended and been reaped (by its parent, the
    fork server where there is one)."""

    async def wait() -> None:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            await asyncio.sleep(0.01)

    await asyncio.wait_for(wait(), WAIT)


def test_calls_run_in_a_child_process_and_errors_come_back_as_one_line() -> None:
    async def body() -> None:
        worker = Worker()
        try:
            pid = await worker.call(_pid)
            assert pid != os.getpid()
            assert await worker.call(_pid) == pid  # the same process, kept
            with pytest.raises(WorkerError, match="ValueError: no such rule"):
                await worker.call(_fail)
            assert await worker.call(_pid) == pid  # an error does not end it
        finally:
            worker.close()

    asyncio.run(body())


def test_cancelling_a_running_call_ends_its_process(tmp_path: Path) -> None:
    async def body() -> None:
        worker = Worker()
        try:
            first = await worker.call(_pid)
            started = tmp_path / "started"
            task = asyncio.ensure_future(worker.call(_block, str(started)))
            await _until(started)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The next call is answered (the blocked one no longer holds the
            # worker), by a new process; the old one is gone.
            second = await asyncio.wait_for(worker.call(_pid), WAIT)
            assert second != first
            await _gone(first)
        finally:
            worker.close()

    asyncio.run(body())


def test_a_call_waiting_for_the_worker_is_cancelled_without_ending_it(tmp_path: Path) -> None:
    async def body() -> None:
        worker = Worker()
        try:
            pid = await worker.call(_pid)
            started = tmp_path / "started"
            running = asyncio.ensure_future(worker.call(_block, str(started)))
            await _until(started)
            waiting = asyncio.ensure_future(worker.call(_pid))
            await asyncio.sleep(0)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert not running.done()
            os.kill(pid, 0)  # still there: its call was not the one cancelled
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running
        finally:
            worker.close()

    asyncio.run(body())
