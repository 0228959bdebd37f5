"""Which part of a file libcst must see to apply some edits (issue 28).

libcst costs about as much per line as the whole analysis of a file: its
parse, the positions its transformer needs and the print back. An edit of
one function need not pay for the other 900 lines, so ``apply_edits`` gives
libcst only the smallest run of whole top-level statements that holds every
edit, and splices what it prints back between the untouched text before and
after. This module chooses that run from the ``ast`` tree the engine already
has, without libcst, and says ``None`` (the whole file) wherever the snippet
could come out differently from the whole file:

- an ``AddImport`` (it reads and changes the module's own statement list) or
  an edit anchored on a top-level statement (column 0: inserting before,
  removing or wrapping a top-level statement moves the blank lines and
  comments above it, which the snippet does not hold);
- form feeds, CRs, a BOM or a coding declaration anywhere (libcst's round
  trip of the whole file may fail or differ; the snippet's would not);
- statements that share a line with their neighbours (``;``), a backslash
  before the span or anything but a comment after its last statement;
- outside the span, what libcst may fail on where ``ast`` does not: deep
  nesting (its visitors recurse) and a parenthesised annotated target
  (``(x): int = 1``), so that a fix the whole file refuses is refused too.

``rewrite.apply_edits`` still checks the snippet (it must parse and round
trip, with the file's indentation unit) and falls back to the whole file on
any failure, so errors and their messages are the whole file's.
``tests/test_snippet.py`` compares both paths byte for byte.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rnnfix.source.edits import (
    AddDecorator,
    AddImport,
    Edit,
    InsertStatements,
    Pos,
    RemoveStatement,
    ReplaceExpression,
    WrapInWith,
)

# Deeper than any real code (the corpus tops out near 20); far below where
# libcst's visitors overflow the stack (about 150 nested calls).
_MAX_DEPTH = 60
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)
_TAIL = re.compile(rb"[ \t]*(?:#[^\n]*)?\n?")


@dataclass(frozen=True)
class Span:
    """Lines ``first``..``last`` (1-based, whole lines) of the source, which
    start at character ``start`` and end before character ``end``; ``indent``:
    the file's indentation unit as libcst detects it (None: no line is
    indented, libcst's default)."""

    first: int
    last: int
    start: int
    end: int
    indent: str | None


def edit_span(source: str, tree: ast.Module, edits: Sequence[Edit]) -> Span | None:
    """The span of whole top-level statements libcst needs for ``edits``, or
    None when only the whole file gives the same result for certain."""
    lines = _edit_lines(edits)
    if not lines or unusual_text(source):
        return None
    body = tree.body
    starts = [_first_line(s) for s in body]
    first = _holding(body, starts, min(lines))
    last = _holding(body, starts, max(lines))
    if first is None or last is None:
        return None
    text = lines_of(source)
    if not _clean_cut(text, body, starts, first, last):
        return None
    outside = [*body[:first], *body[last + 1 :]]
    if _libcst_may_fail(outside):
        return None
    a, b = starts[first], body[last].end_lineno or body[last].lineno
    b = _with_footer(text, b, starts[last + 1] if last + 1 < len(body) else len(text) + 1)
    start = sum(len(line) for line in text[: a - 1])
    end = start + sum(len(line) for line in text[a - 1 : b])
    return Span(a, b, start, end, file_indent(tree, text))


def unusual_text(source: str) -> bool:
    """Form feeds, CRs, a BOM or a coding declaration: libcst's round trip
    of the whole file may fail or differ from any cut or splice of it."""
    if "\f" in source or "\r" in source or source.startswith("\ufeff"):
        return True
    return _CODING.search(source, 0, _second_line_end(source)) is not None


def lines_of(source: str) -> list[str]:
    """The lines as ``ast`` counts them (``\\n`` only: ``str.splitlines``
    also breaks at ``\\v``, ``\\x1c`` or U+2028), each with its newline."""
    out = [line + "\n" for line in source.split("\n")]
    out[-1] = out[-1][:-1]
    if not out[-1]:
        out.pop()
    return out


def shift(edits: Sequence[Edit], lines: int) -> list[Edit]:
    """``edits`` with every position ``lines`` lines earlier (the snippet's)."""
    out: list[Edit] = []
    for e in edits:
        if isinstance(e, (InsertStatements, RemoveStatement)):
            out.append(dataclasses.replace(e, anchor=_up(e.anchor, lines)))
        elif isinstance(e, WrapInWith):
            out.append(dataclasses.replace(e, first=_up(e.first, lines), last=_up(e.last, lines)))
        elif isinstance(e, ReplaceExpression):
            out.append(dataclasses.replace(e, start=_up(e.start, lines), end=_up(e.end, lines)))
        elif isinstance(e, AddDecorator):
            out.append(dataclasses.replace(e, function=_up(e.function, lines)))
        else:
            out.append(e)
    return out


def file_indent(tree: ast.Module, text: Sequence[str]) -> str | None:
    """What libcst takes for the file's indentation unit: the whitespace of
    the first line that starts indented code (its first INDENT token), or
    None when no line does (libcst then assumes four spaces)."""
    for stmt in tree.body:
        found: tuple[int, str] | None = None
        for node in _nested_statements(stmt):
            prefix = _line_prefix(text, node)
            if prefix and (found is None or node.lineno < found[0]):
                found = (node.lineno, prefix)
        if found is not None:
            return found[1]
    return None


def _edit_lines(edits: Sequence[Edit]) -> list[int] | None:
    lines: list[int] = []
    for e in edits:
        if isinstance(e, AddImport):
            return None
        if isinstance(e, (InsertStatements, RemoveStatement)):
            anchors = [e.anchor]
        elif isinstance(e, WrapInWith):
            anchors = [e.first, e.last]
        elif isinstance(e, ReplaceExpression):
            lines += [e.start.line, e.end.line]
            continue
        elif isinstance(e, AddDecorator):
            lines.append(e.function.line)
            continue
        else:  # an edit this module does not know: the whole file
            return None
        if any(p.col == 0 for p in anchors):
            return None
        lines += [p.line for p in anchors]
    return lines


def _up(p: Pos, lines: int) -> Pos:
    return Pos(p.line - lines, p.col)


def _second_line_end(source: str) -> int:
    first = source.find("\n")
    second = source.find("\n", first + 1) if first >= 0 else -1
    return len(source) if second < 0 else second


def _first_line(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _holding(body: Sequence[ast.stmt], starts: Sequence[int], line: int) -> int | None:
    for i, stmt in enumerate(body):
        if starts[i] <= line <= (stmt.end_lineno or stmt.lineno):
            return i
    return None


def _clean_cut(
    text: Sequence[str], body: Sequence[ast.stmt], starts: Sequence[int], first: int, last: int
) -> bool:
    """The span begins a logical line at column 0 and ends one, alone on its
    lines: no neighbour on the same line, no continuation into or out of it."""
    a, stmt = starts[first], body[last]
    b = stmt.end_lineno
    if b is None or stmt.end_col_offset is None or body[first].col_offset != 0:
        return False
    if first > 0 and (body[first - 1].end_lineno or a) >= a:
        return False
    if last + 1 < len(body) and starts[last + 1] <= b:
        return False
    if a > 1 and text[a - 2].rstrip("\n").endswith("\\"):
        return False
    if b > len(text):
        return False
    return _TAIL.fullmatch(text[b - 1].encode("utf-8")[stmt.end_col_offset :]) is not None


def _with_footer(text: Sequence[str], last: int, following: int) -> int:
    """The span's last line, its indented comment lines after its code
    included: libcst gives them to the last block's footer (up to the last
    line that starts indented), and an edit after that block goes below them.
    Unindented comments and blank lines go with the next statement."""
    for line in range(following - 1, last, -1):
        if text[line - 1][:1] in (" ", "\t"):
            return line
    return last


def _libcst_may_fail(stmts: Sequence[ast.stmt]) -> bool:
    """Something libcst may not parse or visit where ``ast`` did: nesting
    deeper than ``_MAX_DEPTH``, or ``(x): int = 1``."""
    stack: list[tuple[ast.AST, int]] = [(s, 1) for s in stmts]
    while stack:
        node, depth = stack.pop()
        if depth > _MAX_DEPTH:
            return True
        if isinstance(node, ast.AnnAssign) and _parenthesised(node):
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def _parenthesised(node: ast.AnnAssign) -> bool:
    target = node.target
    return (target.lineno, target.col_offset) != (node.lineno, node.col_offset)


def _nested_statements(stmt: ast.stmt) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, name, ()):
                if isinstance(child, ast.stmt):
                    out.append(child)
                stack.append(child)
    return out


def _line_prefix(text: Sequence[str], node: ast.stmt) -> str:
    """The whitespace before ``node`` when it starts its line, else ''."""
    if node.col_offset == 0 or node.lineno > len(text):
        return ""
    prefix = text[node.lineno - 1].encode("utf-8")[: node.col_offset]
    return prefix.decode("utf-8") if prefix.strip(b" \t") == b"" else ""
