"""``python -m rnnfix`` and the ``rnnfix`` console script."""

from __future__ import annotations

import sys


def main() -> None:
    # Ctrl-C while the CLI is still being imported (the first tenth of a
    # second) ends the run as it does later: one line and 130, no traceback.
    try:
        from rnnfix.cli.app import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("rnnfix: interrupted (SIGINT) before any file was checked\n")
        sys.exit(130)
    cli_main()


if __name__ == "__main__":
    main()
