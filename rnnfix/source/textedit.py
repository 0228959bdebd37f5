"""The commonest edits applied as text, without libcst (issue 28).

Most fixes insert one line: ``model.train()`` at the head of a training
loop, ``model.eval()`` after a load, ``@torch.no_grad()`` above a function.
libcst costs about 0.35 s to import and as much again to parse and print a
large function, for a change a text splice makes in microseconds. This
module makes that splice where it gives, byte for byte, what
``rewrite.apply_edits`` (libcst) gives, and says ``None`` (libcst decides)
wherever it could differ:

- an edit other than ``InsertStatements`` and ``AddDecorator`` (wraps,
  replacements, removals and imports re-indent or re-read the file);
- inserted code that is not one printable ASCII line that ``ast`` reads as
  one statement (libcst's errors and messages stay libcst's), a decorator
  that is not one expression;
- form feeds, CRs, a BOM or a coding declaration anywhere;
- an anchor that is not the start of a statement alone at the head of its
  line (after ``;``, after ``if x:``, after a backslash), a decorator that
  is not a function's;
- blank lines or comments right above where the code goes (libcst moves the
  code above those that belong to the anchor, and which belong to it
  depends on the indentation of the block before), code after the anchor
  on its last line (``a = 1; b = 2``), an anchor at the end of a file
  without a final newline, and an "after" insertion after a compound
  statement (the comments that end its block are libcst's to place).

Where libcst puts each edit (``rewrite._EditTransformer``): "before" code
above the anchor (above its decorators), "after" code below its last line,
a decorator below the function's last decorator (directly above ``def``
when it has none), each at the anchor's indentation. Several edits at one
place keep the order libcst gives them: "after" code of the statement
above, then "before" code, then decorators, each kind in the order of the
edits. ``tests/test_textedit.py`` compares this module with libcst on every
fixture's fixes and on generated programs.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from rnnfix.source.edits import AddDecorator, Edit, InsertStatements
from rnnfix.source.span import _libcst_may_fail, file_indent, lines_of, unusual_text

_PRINTABLE = re.compile(r"[ -~]+")
_LIBCST_INDENT = "    "  # libcst's unit for a file with no indented line
_AFTER, _BEFORE, _DECORATOR = 0, 1, 2  # the order of edits that meet at one offset


def apply_edits(source: str, edits: Sequence[Edit], tree: ast.Module | None = None) -> str:
    """``rewrite.apply_edits`` (same result, same errors), as text where this
    module can be sure of the result: libcst is imported only otherwise.
    ``tree``: ``source``'s ``ast``, parsed here when not given (a source
    ``ast`` cannot read goes to libcst, whose error it then is)."""
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
    new = text_edits(source, tree, edits) if tree is not None else None
    if new is not None:
        return new
    from rnnfix.source.rewrite import apply_edits as with_libcst

    return with_libcst(source, edits, tree)


def text_edits(source: str, tree: ast.Module, edits: Sequence[Edit]) -> str | None:
    """``source`` with ``edits`` as libcst would apply them, or None when
    this module cannot be sure of that (see the module's doc)."""
    if not edits or unusual_text(source):
        return None
    if _libcst_may_fail(tree.body):
        return None  # libcst refuses the whole file; so must this
    lines = lines_of(source)
    starts = _statement_starts(tree)
    offsets = _line_offsets(lines)
    inserts: list[tuple[int, int, int, str]] = []  # (offset, kind, order, text)
    # The file's indentation unit, as libcst detects it: what it indents the
    # blocks of inserted code with (read only for code of several lines).
    unit: str | None = None
    for order, edit in enumerate(dict.fromkeys(edits)):
        found = _place(edit, lines, starts)
        if found is None:
            return None
        line, kind, indent, codes = found
        if unit is None and any(level for level, _ in codes):
            unit = file_indent(tree, lines) or _LIBCST_INDENT
        text = "".join(indent + (unit or "") * level + part + "\n" for level, part in codes)
        inserts.append((offsets[line], kind, order, text))
    out: list[str] = []
    at = 0
    for offset, _, _, text in sorted(inserts):
        out.append(source[at:offset])
        out.append(text)
        at = offset
    out.append(source[at:])
    return "".join(out)


def _place(
    edit: Edit, lines: Sequence[str], starts: dict[tuple[int, int], ast.stmt]
) -> tuple[int, int, str, list[tuple[int, str]]] | None:
    """Where ``edit``'s lines go: the 0-based index of the line they go
    before (``len(lines)`` at the end), their kind, the anchor's indentation
    and each line as (block depth in the inserted code, text)."""
    if isinstance(edit, InsertStatements):
        stmt = starts.get((edit.anchor.line, edit.anchor.col))
        if stmt is None or not edit.code:
            return None
        codes: list[tuple[int, str]] = []
        for code in edit.code:
            lines_of_code = _statement_lines(code)
            if lines_of_code is None:
                return None
            codes += lines_of_code
        indent = _alone_at_head(lines, stmt.lineno, edit.anchor.col)
        if indent is None:
            return None
        if edit.where == "before":
            first = _first_line(stmt, lines)
            if first is None or not _code_above(lines, first):
                return None
            return first - 1, _BEFORE, indent, codes
        if _compound(stmt) or not _ends_its_line(lines, stmt):
            return None
        end = stmt.end_lineno
        assert end is not None
        if not lines[end - 1].endswith("\n"):
            return None  # the last line of a file without a final newline
        return end, _AFTER, indent, codes
    if isinstance(edit, AddDecorator):
        stmt = starts.get((edit.function.line, edit.function.col))
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        if not _one_expression(edit.decorator):
            return None
        indent = _alone_at_head(lines, stmt.lineno, edit.function.col)
        if indent is None:
            return None
        if stmt.decorator_list:
            last = stmt.decorator_list[-1]
            if not _ends_its_line(lines, last):
                return None
            line = last.end_lineno
            assert line is not None
        else:
            # No decorator yet: the new one goes directly above ``def``, below
            # the comments and blank lines above it (libcst's leading lines).
            line = stmt.lineno - 1
        return line, _DECORATOR, indent, [(0, "@" + edit.decorator)]
    return None


def _compound(stmt: ast.stmt) -> bool:
    return any(isinstance(getattr(stmt, f, None), list) for f in ("body", "orelse", "cases"))


def _statement_starts(tree: ast.Module) -> dict[tuple[int, int], ast.stmt]:
    """Every statement by where it starts (line, column in UTF-8 bytes: the
    same as characters where only whitespace comes before, which
    ``_alone_at_head`` checks)."""
    out: dict[tuple[int, int], ast.stmt] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            out[(node.lineno, node.col_offset)] = node
    return out


def _line_offsets(lines: Sequence[str]) -> list[int]:
    out = [0]
    for line in lines:
        out.append(out[-1] + len(line))
    return out


def _alone_at_head(lines: Sequence[str], line: int, col: int) -> str | None:
    """The whitespace before column ``col`` of ``line``, when that is all
    there is and the line above does not continue into it."""
    if line < 1 or line > len(lines):
        return None
    prefix = lines[line - 1][:col]
    if prefix.strip(" \t") or len(prefix) != col:
        return None
    if line > 1 and lines[line - 2].rstrip("\n").endswith("\\"):
        return None
    return prefix


def _first_line(stmt: ast.stmt, lines: Sequence[str]) -> int | None:
    """The line a statement starts on, its decorators included; None when a
    decorator's ``@`` is not at the head of its line."""
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", [])
    if not decorators:
        return stmt.lineno
    first = min(d.lineno for d in decorators)
    if not lines[first - 1].lstrip(" \t").startswith("@"):
        return None
    if first > 1 and lines[first - 2].rstrip("\n").endswith("\\"):
        return None
    return first


def _code_above(lines: Sequence[str], line: int) -> bool:
    """The line above ``line`` holds code (not blank, not only a comment),
    or there is none: nothing libcst would count as leading lines of the
    statement at ``line``."""
    if line == 1:
        return False  # the module's header comments are libcst's to place
    above = lines[line - 2].strip()
    return bool(above) and not above.startswith("#") and not above.endswith("\\")


def _ends_its_line(lines: Sequence[str], node: ast.AST) -> bool:
    """Nothing but spaces and a comment after ``node`` on its last line."""
    end, col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
    if end is None or col is None or end > len(lines):
        return False
    raw = lines[end - 1].encode("utf-8")
    if len(raw) < col:
        return False
    rest = raw[col:].decode("utf-8", "replace").rstrip("\n").strip(" \t")
    return not rest or (rest.startswith("#") and not rest.endswith("\\"))


def _statement_lines(code: str) -> list[tuple[int, str]] | None:
    """The lines of one inserted statement as (block depth, text without
    indentation), when libcst prints it as exactly these lines: printable
    ASCII that ``ast`` reads as one statement, no comment, no whitespace
    around it, no continuation. Code of several lines (``if flag:\\n
    model.train()``) also needs every line to start one statement, at a
    multiple of the unit its first indented line uses, one level deeper at
    most than the line before: libcst then indents each block with the
    file's unit, and this module does the same. None otherwise."""
    if code != code.strip() or "#" in code or "\\" in code:
        return None
    lines = code.split("\n")
    if not all(_PRINTABLE.fullmatch(line) for line in lines):
        return None
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return None
    if len(body) != 1:
        return None
    if len(lines) == 1:
        return [(0, code)]
    starts: dict[int, int] = {}
    for node in ast.walk(body[0]):
        if isinstance(node, ast.stmt):
            if node.lineno in starts:
                return None  # two statements on one line (``;``, ``if a: b``)
            starts[node.lineno] = node.col_offset
    unit = next((line[: len(line) - len(line.lstrip())] for line in lines[1:]), "")
    if not unit or unit.strip(" ") and unit.strip("\t"):
        return None  # no indentation, or spaces and tabs mixed in it
    out: list[tuple[int, str]] = []
    for number, line in enumerate(lines, 1):
        text = line.lstrip(" \t")
        width = len(line) - len(text)
        level, rest = divmod(width, len(unit))
        if rest or line[:width] != unit * level or starts.get(number) != width:
            return None
        if line != line.rstrip() or (out and level > out[-1][0] + 1):
            return None
        out.append((level, text))
    return out


def _one_expression(code: str) -> bool:
    if not _PRINTABLE.fullmatch(code) or code != code.strip() or "#" in code:
        return False
    try:
        ast.parse(code, mode="eval")
    except SyntaxError:
        return False
    return True
