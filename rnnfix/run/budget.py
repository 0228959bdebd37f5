"""What one file may cost: a file over budget is reported as not checked,
and the run goes on (a 100,000-line function once took 217 s and 1.7 GB).

Two limits, both per file:

- ``MAX_FUNCTION_STATEMENTS`` statements in one function (nested functions
  and classes included): the analyses walk a function once per evaluation
  region, so their cost grows with the square of its size. No function of
  the ecosystem corpus comes near (the largest has 554 statements).
- ``CPU_SECONDS`` of CPU time for the whole analysis and fix of a file
  (``ITIMER_VIRTUAL``: this process's own time, not the machine's load). The
  largest files of the corpus take a few seconds.
"""

from __future__ import annotations

import ast
import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

MAX_FUNCTION_STATEMENTS = 20_000
CPU_SECONDS = 60.0


class BudgetExceeded(BaseException):
    """Raised into the analysis when its CPU time is spent. A BaseException:
    the engine's ``except Exception`` (a failing fix is dropped) must not
    take it for one fix's failure."""


def too_large(text: str) -> str | None:
    """The reason ``text`` is not analysed, or None. The source is parsed only
    when its lines, ``;`` and ``:`` could add up to that many statements."""
    bound = text.count("\n") + text.count(";") + text.count(":")
    if bound < MAX_FUNCTION_STATEMENTS:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the analysis reports it
    largest = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            largest = max(largest, sum(isinstance(n, ast.stmt) for n in ast.walk(node)) - 1)
    if largest <= MAX_FUNCTION_STATEMENTS:
        return None
    return (
        f"too large to analyse: {largest} statements in one function "
        f"(the limit is {MAX_FUNCTION_STATEMENTS}); not checked"
    )


def exceeded_reason() -> str:
    return f"analysis budget exceeded ({CPU_SECONDS:g} s of CPU); not checked"


@contextlib.contextmanager
def cpu_budget() -> Iterator[None]:
    """``BudgetExceeded`` once the block has used ``CPU_SECONDS`` of CPU. Only
    in the main thread of a process (where Python runs signal handlers) and
    where the OS has the timer; elsewhere the block runs without a budget."""
    if (
        threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
        or CPU_SECONDS <= 0
    ):
        yield
        return

    def spent(signum: int, frame: FrameType | None) -> None:
        raise BudgetExceeded

    previous = signal.signal(signal.SIGVTALRM, spent)
    signal.setitimer(signal.ITIMER_VIRTUAL, CPU_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
