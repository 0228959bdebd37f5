"""Declarative edits, and ``apply_edits``, which hands them to libcst.

Detection (rules) works on the standard library's ``ast`` and describes what to
change as small, position-located edits. Only files that have an edit to apply
are parsed by libcst, whose round trip keeps every byte we do not touch.

Positions are ``Pos(line, col)``: 1-based line, 0-based column in *characters*
(libcst's convention). ``rnnfix.rules.base.FileContext.pos`` converts ``ast``
nodes, whose ``col_offset`` counts UTF-8 bytes.

libcst itself is imported only when an edit is applied (``rnnfix.source.rewrite.apply_edits``):
it costs more to import than a warm run over a large tree costs in total, and
most runs have nothing to fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, order=True)
class Pos:
    line: int
    col: int


@dataclass(frozen=True)
class InsertStatements:
    """Insert statements (source text without indentation) before or after the
    statement that starts at ``anchor``; they take that statement's indentation."""

    anchor: Pos
    code: tuple[str, ...]
    where: Literal["before", "after"] = "before"


@dataclass(frozen=True)
class WrapInWith:
    """Wrap the sibling statements from ``first`` to ``last`` (both statement
    starts, same block) in ``with <items>:``, re-indented in the file's style."""

    first: Pos
    last: Pos
    items: str


@dataclass(frozen=True)
class ReplaceExpression:
    """Replace the expression spanning ``start``..``end`` with ``code``."""

    start: Pos
    end: Pos
    code: str


@dataclass(frozen=True)
class AddDecorator:
    """Add ``@decorator`` as the innermost decorator of the function whose
    ``def`` (or ``async def``) starts at ``function``."""

    function: Pos
    decorator: str


@dataclass(frozen=True)
class AddImport:
    """``import module`` (name is None) or ``from module import name``."""

    module: str
    name: str | None = None
    asname: str | None = None


@dataclass(frozen=True)
class RemoveStatement:
    """Remove the statement that starts at ``anchor`` (alone on its line).
    Comment lines above it move to the next statement (bare blank lines are
    dropped); a block left empty gets ``pass``."""

    anchor: Pos


Edit = (
    InsertStatements | WrapInWith | ReplaceExpression | AddDecorator | AddImport | RemoveStatement
)


class EditError(Exception):
    """An edit could not be located or applied; the fix it belongs to is dropped."""
