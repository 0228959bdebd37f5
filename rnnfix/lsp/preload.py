"""Imported once by the fork server the analysis processes start from
(``rnnfix.lsp.worker``): the engine and every rule, so that each new process
has them already (importing them takes a process about a second)."""

from rnnfix.lsp import analysis  # noqa: F401
from rnnfix.rules import all_rules
from rnnfix.run import engine  # noqa: F401

all_rules()
