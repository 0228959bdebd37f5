"""A file's import bindings read from its import lines, without parsing it.

``ProjectIndex.may_hold`` follows re-exports through files it never
summarises (``torch/__init__.py``, a package's ``__init__``): parsing each of
them whole just to read its imports cost more than the rest of the gate.
Only the logical lines that start with ``import`` or ``from`` are parsed.

The answer for a name must be the one a full parse gives, or None (then the
caller parses): an import the lines below cannot see (after ``;`` or ``:``
on a line, in a file with ``\\r`` line ends) sends every name to the full
parse; a line in a docstring that reads like an import binds a name the
file may not bind, which only makes the gate follow one more re-export
(never skip one), unless two lines bind the same name to different
modules: that name is parsed.
"""

from __future__ import annotations

import ast
import re

from rnnfix.analysis.project.bindings import Binding, import_bindings

# An import statement that does not start its line (``import a; import b``,
# ``try: import x``, ``else: \`` then ``import y``): the lines cannot be trusted.
_HIDDEN = re.compile(rb"[;:][ \t]*(?:\\\n[ \t]*)*(?:from|import)\b")
_START = re.compile(rb"^[ \t]*(?:from|import)\b", re.M)
_IMPORT_WORD = re.compile(rb"\bimport\b")
_COMMENT = re.compile(rb"#[^\n]*")
_MAX_LINES = 200


class TextBindings:
    """Bindings of the import lines, and the names two lines bind differently."""

    def __init__(self, bindings: dict[str, Binding], ambiguous: frozenset[str]) -> None:
        self.bindings = bindings
        self.ambiguous = ambiguous


def text_bindings(data: bytes) -> TextBindings | None:
    """None when the import lines may miss an import of the file."""
    if b"\r" in data or _HIDDEN.search(data):
        return None
    bindings: dict[str, Binding] = {}
    ambiguous: set[str] = set()
    for m in _START.finditer(data):
        statement = _logical_line(data, m.start())
        if statement is None:
            return None
        if not _IMPORT_WORD.search(statement):
            continue  # prose in a docstring ("from the input ..."): no import statement
        try:
            tree = ast.parse(statement.strip())
        except (SyntaxError, ValueError, RecursionError):
            return None
        for local, binding in import_bindings(tree).items():
            if bindings.get(local, binding) != binding:
                ambiguous.add(local)  # the same binding twice is no doubt
            bindings[local] = binding
    return TextBindings(bindings, frozenset(ambiguous))


def _logical_line(data: bytes, start: int) -> bytes | None:
    """The text from ``start`` to the end of its logical line: continued while
    a bracket is open or a line ends with a backslash; None when too long."""
    depth = 0
    pos = start
    for _ in range(_MAX_LINES):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        line = _COMMENT.sub(b"", data[pos:end])
        depth += line.count(b"(") - line.count(b")")
        pos = end + 1
        if (depth <= 0 and not line.rstrip().endswith(b"\\")) or pos > len(data):
            return data[start:end]
    return None
