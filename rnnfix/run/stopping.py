"""A stop the user asked for (SIGINT, SIGTERM), kept where no ``except``
can lose it.

The signal handler records the signal and raises ``Interrupted``. Native
code (libcst's parser) can turn an exception raised inside it into one of
its own, which the engine's ``except Exception`` around a fix then takes
for a failing fix: the run would go on without that fix. So the run also
asks ``check()`` between files and before each write: a recorded stop
raises there, whatever became of the first exception.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

_requested: int | None = None


class Interrupted(BaseException):
    """SIGINT or SIGTERM. A ``BaseException``, as ``KeyboardInterrupt`` is:
    the ``except Exception`` that keeps one bad file from stopping a run
    (``process.process_text``) must never swallow the user's stop."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal_number)
        self.signal_number = signal_number
        self.signal_name = signal.Signals(signal_number).name


def request(signal_number: int) -> None:
    global _requested
    _requested = signal_number


def handler(signal_number: int, frame: object) -> None:
    """The handler of both signals while a run checks and writes files."""
    request(signal_number)
    raise Interrupted(signal_number)


def quiet_unraisable(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """``sys.unraisablehook`` that drops an ``Interrupted`` raised where
    Python cannot propagate it (a weakref callback, a ``__del__``): it was
    recorded, and ``check`` raises it again where it can."""

    def quiet(args: Any) -> object:
        if isinstance(args.exc_value, Interrupted):
            return None
        return hook(args)

    return quiet


def check() -> None:
    """Raise ``Interrupted`` if a stop was asked for."""
    if _requested is not None:
        raise Interrupted(_requested)


def reset() -> None:
    global _requested
    _requested = None
