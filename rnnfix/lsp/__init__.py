"""The language server (``rnnfix server``; needs the ``lsp`` extra: pygls).

Only ``rnnfix.lsp.command`` is imported by the command line, and it imports
pygls only when the server starts, so ``rnnfix --help`` and ``rnnfix
apply`` never need it."""
