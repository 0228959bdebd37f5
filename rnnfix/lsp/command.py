"""``rnnfix server``: the click command; pygls is imported when it runs."""

from __future__ import annotations

import click


@click.command("server")
def server_command() -> None:
    """Run the language server: LSP over stdio, for editors (VS Code, Neovim).
    Needs pygls: pip install 'rnnfix[lsp]'."""
    try:
        import pygls  # noqa: F401
    except ImportError:
        raise click.UsageError("rnnfix server needs pygls: pip install 'rnnfix[lsp]'") from None
    from rnnfix.lsp.server import main

    main()
