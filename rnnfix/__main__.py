"""``python -m rnnfix`` and the ``rnnfix`` console script."""

# No ``from __future__`` and nothing but ``os``/``sys`` (loaded before any
# ``-m`` module runs) above ``_without_the_current_folder``: a module the
# current folder holds must not be imported in their place.
import os
import sys


def _without_the_current_folder() -> None:
    """``python -m rnnfix`` puts the current folder first on ``sys.path``, so
    a ``json.py`` or ``signal.py`` of the project being checked would be
    imported in place of the standard library's. Drop it, as pip's
    ``__main__`` does (``-P``/``PYTHONSAFEPATH`` never put it there; the
    ``rnnfix`` package itself is imported already and finds its modules
    through its own ``__path__``)."""
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return
    try:
        here = os.getcwd()
    except OSError:  # the current folder was removed
        here = None
    if sys.path[0] in ("", here):
        del sys.path[0]


if __name__ == "__main__":
    _without_the_current_folder()

import signal  # noqa: E402 - after the folder is dropped
from types import FrameType  # noqa: E402


def _stopped_while_starting(signum: int, frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    os.write(2, f"rnnfix: interrupted ({name}) before any file was checked\n".encode())
    os._exit(128 + signum)  # nothing is open or written yet


def main() -> None:
    # Ctrl-C or SIGTERM while the CLI is still being imported (the first
    # tenth of a second) ends the run as it does later: one line and 128 + N,
    # no traceback.
    signal.signal(signal.SIGTERM, _stopped_while_starting)
    try:
        from rnnfix.cli.app import main as cli_main
        from rnnfix.cli.app import stop_on_sigterm
    except KeyboardInterrupt:
        _stopped_while_starting(signal.SIGINT, None)
    stop_on_sigterm()
    cli_main()


if __name__ == "__main__":
    main()
