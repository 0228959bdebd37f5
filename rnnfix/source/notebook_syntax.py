"""IPython syntax in a notebook cell, masked so that the cell parses as Python.

The rules are IPython's own (``IPython/core/inputtransformer2.py``):

- an escaped command (``%magic``, ``%%magic``, ``!cmd``, ``!!cmd``, ``?obj``,
  ``??obj``, and the autocall escapes ``,f a``, ``;f a``, ``/f a``) is
  recognised only as the first token of a LOGICAL line: never inside open
  brackets, never inside a string that continues over lines, never after a
  backslash continuation. A line inside brackets that starts with ``%`` is the
  modulo operator;
- ``x = %magic`` and ``x = !cmd``: the first ``=`` of a logical line outside
  brackets, followed by ``%name`` or ``!``;
- ``obj?`` / ``obj??``: a logical line whose last token is ``?``;
- an escaped command or assignment runs to the end of its physical line and
  over every following line that the previous one continues with a trailing
  backslash.

None of these is valid Python, so masking never changes the meaning of code
that parses. Each piece of IPython syntax becomes ``__rnnfix_magic__(k)``
(an expression, so ``x = %timeit -o f()`` still binds ``x``); a piece that
spans several physical lines becomes ``__rnnfix_magic__(k`` with its closing
parenthesis on the piece's last line, so line numbers within the cell stay
those of the notebook. ``unmask`` puts the original text back, byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The escapes IPython recognises at the start of a logical line.
_ESCAPES = frozenset("!?%,;/")
# Characters that make an ``=`` part of another operator (``==``, ``<=``, ``+=``, ``:=``...).
_OPERATOR_CHARS = frozenset("=!<>+-*/%&|^@:~")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
MASK_NAME = "__rnnfix_magic__"  # another where a cell holds it (``rnnfix.source.notebooks``)
# Cell magics whose body is Python run in the user's namespace: the cell is
# part of the program (IPython transforms and runs the body).
PYTHON_BODY_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
_CELL_MAGIC = re.compile(r"%%(\w+)(\??)")


# IPython's line magics and default shell aliases that users call without
# ``%`` (automagic): ``pip install x`` in a cell of its own.
_AUTOMAGICS = frozenset(
    {
        "pip", "conda", "mamba", "cd", "pwd", "env", "set_env", "load_ext", "reload_ext",
        "matplotlib", "pylab", "time", "timeit", "run", "who", "whos", "reset", "autoreload",
        "history", "store", "bookmark", "dhist", "pushd", "popd", "ls", "ll", "cat", "cp", "mv",
        "rm", "rmdir", "mkdir", "clear", "less", "man", "pinfo", "psearch", "xmode", "config",
    }
)  # fmt: skip
_AUTOMAGIC = re.compile(r"[ \t]*([A-Za-z_]\w*)[ \t]+[^=\s]")


def split_lines(text: str) -> list[str]:
    """Physical lines as Python counts them (``\\n``, ``\\r\\n``, ``\\r``), each
    with its line ending; ``str.splitlines`` would also split at form feeds
    and Unicode separators, which Python does not."""
    return _LINE.findall(text)


def cell_magic(text: str) -> str | None:
    """The name of the cell magic a cell starts with (``time`` for ``%%time``),
    as IPython finds it: the first non-blank line starts with ``%%``; ``?`` for
    ``%%name?`` (help, not a magic)."""
    for line in split_lines(text):
        body = line.lstrip(" \t")
        if not body.strip():
            continue
        if not body.startswith("%%"):
            return None
        m = _CELL_MAGIC.match(body)
        if m is None or m.group(2):
            return "?"
        return m.group(1)
    return None


def is_automagic(text: str) -> bool:
    """A one-line cell that calls a line magic without its ``%``
    (``pip install torch``): IPython's automagic applies to cells of one line
    that are not Python; rnnfix asks only for those that do not parse."""
    lines = [ln for ln in split_lines(text) if ln.strip()]
    if len(lines) != 1:
        return False
    m = _AUTOMAGIC.match(lines[0])
    return m is not None and m.group(1) in _AUTOMAGICS


def has_python_body(text: str) -> bool:
    """A cell magic whose body is Python, on an unindented first line (IPython
    dedents an indented cell first; that case stays opaque)."""
    name = cell_magic(text)
    if name not in PYTHON_BODY_MAGICS:
        return False
    first = next(ln for ln in split_lines(text) if ln.strip())
    return first.startswith("%%")


def mask(text: str, magics: list[str], name: str = MASK_NAME) -> str:
    """``text`` with its IPython syntax replaced by masks; ``magics`` receives
    the original pieces (a mask's number is its index there). ``name``: the
    mask's identifier, one that no cell of the notebook contains."""
    lines = split_lines(text)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        body = line.lstrip(" \t\f")
        if body[:1] in _ESCAPES:
            end = _continued(lines, i)
            out.extend(_masked(lines, i, len(line) - len(body), end, magics, name))
            i = end + 1
            continue
        logical = _scan(lines, i)
        if logical.assign_magic is not None:
            row, col = logical.assign_magic
            end = _continued(lines, row)
            out.extend(lines[i:row])
            out.extend(_masked(lines, row, col, end, magics, name))
            i = end + 1
        elif logical.help:
            out.extend(_masked(lines, i, len(line) - len(body), logical.end, magics, name))
            i = logical.end + 1
        else:
            out.extend(lines[i : logical.end + 1])
            i = logical.end + 1
    return "".join(out)


def unmask(text: str, magics: list[str], name: str = MASK_NAME) -> str:
    pattern = re.compile(re.escape(name) + r"\((\d+)\s*\)")
    return pattern.sub(lambda m: magics[int(m.group(1))], text)


def _newline(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def _continued(lines: list[str], row: int) -> int:
    """The last physical line of the piece starting at ``row``: each line ending
    in a backslash continues onto the next."""
    end = row
    while (
        end + 1 < len(lines) and _newline(lines[end]) and lines[end].rstrip("\r\n").endswith("\\")
    ):
        end += 1
    return end


def _masked(
    lines: list[str], row: int, col: int, end: int, magics: list[str], name: str
) -> list[str]:
    first, last = lines[row], lines[end]
    piece = first[col:] + "".join(lines[row + 1 : end + 1])
    magics.append(piece[: len(piece) - len(_newline(last))])
    k = len(magics) - 1
    if row == end:
        return [f"{first[:col]}{name}({k}){_newline(first)}"]
    middle = [_newline(ln) for ln in lines[row + 1 : end]]
    return [f"{first[:col]}{name}({k}{_newline(first)}", *middle, f"){_newline(last)}"]


@dataclass
class _Logical:
    end: int  # its last physical line
    assign_magic: tuple[int, int] | None = None  # (row, col) of the ``%``/``!`` after ``=``
    help: bool = False  # its last token is ``?``


def _scan(lines: list[str], start: int) -> _Logical:
    """One logical line of Python from physical line ``start``: brackets,
    strings (triple-quoted, or continued with a backslash), comments and
    backslash continuations decide where it ends."""
    depth = 0
    quote: str | None = None
    seen_assign = False
    last = ""  # the last significant character outside strings and comments
    row = start
    while True:
        content = lines[row].rstrip("\r\n")
        col, continued, comment = 0, False, False
        while col < len(content):
            ch = content[col]
            if quote is not None:
                if ch == "\\":
                    continued = col + 1 >= len(content)
                    col += 2
                elif content.startswith(quote, col):
                    col += len(quote)
                    quote, last = None, ch
                else:
                    col += 1
                continue
            if ch == "#":
                comment = True
                break
            if ch in "'\"":
                quote = ch * 3 if content.startswith(ch * 3, col) else ch
                col += len(quote)
                continue
            if ch == "\\" and col + 1 >= len(content):
                continued = True
                break
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth = max(0, depth - 1)
            elif ch == "=" and depth == 0 and not seen_assign and _plain_assign(content, col):
                seen_assign = True
                at = _magic_after(content, col + 1)
                if at is not None:
                    return _Logical(row, assign_magic=(row, at))
            if not ch.isspace():
                last = ch
            col += 1
        if quote is not None and len(quote) == 1 and not continued:
            quote = None  # an unterminated string: the parser will say so
        if comment:
            last = "#"
        more = quote is not None or depth > 0 or continued
        if not more or row + 1 >= len(lines):
            return _Logical(row, help=last == "?")
        row += 1


def _plain_assign(content: str, col: int) -> bool:
    before = content[col - 1] if col > 0 else ""
    after = content[col + 1] if col + 1 < len(content) else ""
    return before not in _OPERATOR_CHARS and after != "="


def _magic_after(content: str, col: int) -> int | None:
    """Where ``%name`` or ``!cmd`` starts after an assignment's ``=``."""
    while col < len(content) and content[col] in " \t":
        col += 1
    rest = content[col : col + 2]
    if rest[:1] == "%" and (rest[1:2].isalpha() or rest[1:2] == "_"):
        return col
    if rest[:1] == "!" and rest[1:2] != "=":
        return col
    return None
