"""``python -m rnnfix`` and the ``rnnfix`` console script."""

from __future__ import annotations

import os
import signal
from types import FrameType


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
