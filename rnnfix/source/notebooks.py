"""Jupyter notebooks: their code cells as one Python module, and back.

Code cells are joined into one module, each preceded by a marker statement
``__rnnfix_cell__(k)`` (another identifier where a cell holds that text),
so that a fix inserted at the top of a cell stays in that cell; IPython
syntax (``%magic``, ``!shell``, ``obj?``...) is masked by
``rnnfix.source.notebook_syntax`` with IPython's own rules. A cell that
starts with a cell magic whose body is Python (``%%time``...) is part of the program, its
magic line masked; other cell magics (``%%bash``, ``%%writefile``...) leave the
cell out. A cell that does not parse even so is left out too and named in
``skipped`` (IPython runs each cell on its own: the others still run). After
fixing, the module is split back at the markers and the JSON is written in the
layout it was read in: ``json.dumps`` with nbformat's settings when they
reproduce the file byte for byte, else only the changed cells' ``source``
values are spliced into the text (``rnnfix.source.notebook_json``); the file is never
reformatted.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from rnnfix.source import notebook_json, notebook_syntax
from rnnfix.source.files import FileProblem
from rnnfix.source.notebook_syntax import split_lines

# The markers' identifiers: ``__rnnfix_cell__`` and ``__rnnfix_magic__``,
# or, in a notebook whose cells hold ``__rnnfix`` themselves, ``__rnnfixN_``
# ones with the first N no cell contains (``_marker_names``): a cell's own
# text is never taken for a marker.
_PREFIX = "__rnnfix"
_IMPORT = re.compile(r"(import|from)\s")
# (indent, sort_keys) as written by nbformat (1, True) and by other tools.
_LAYOUTS: tuple[tuple[int, bool], ...] = ((1, True), (1, False), (2, False), (2, True), (4, False))


@dataclass
class Notebook:
    data: dict[str, Any]
    python: str  # the code cells as one module
    cell_lines: list[tuple[int, int]] = field(default_factory=list)  # (cell index, first line)
    magics: list[str] = field(default_factory=list)
    # Code cells left out because they do not parse: (1-based cell number, reason).
    skipped: list[tuple[int, str]] = field(default_factory=list)
    # Cells that start with a cell magic with a Python body: index -> number of its mask.
    magic_heads: dict[int, int] = field(default_factory=dict)
    # Cells indented as a whole, which IPython runs dedented: index -> the
    # indentation removed from each of their lines (and put back on render).
    dedents: dict[int, str] = field(default_factory=dict)
    text: str = ""  # the file as read
    layout: tuple[int, bool] | None = None  # (indent, sort_keys) that reproduce the file
    trailing_newline: bool = True
    cell_name: str = "__rnnfix_cell__"
    mask_name: str = notebook_syntax.MASK_NAME

    @property
    def _cell(self) -> re.Pattern[str]:
        return re.compile(r"^" + re.escape(self.cell_name) + r"\((\d+)\)\r?\n?$")

    def cell_starts(self, python: str) -> list[tuple[int, int]]:
        """(cell index, first line) of each cell of a module built by ``parse``."""
        cell = self._cell
        out = []
        for number, line in enumerate(split_lines(python), start=1):
            m = cell.match(line)
            if m:
                out.append((int(m.group(1)), number + 1))
        return out

    def locate(self, line: int, python: str | None = None) -> tuple[int, int]:
        """A line of ``python`` (by default the module as read; a fixed one
        has its cells at other lines) as (1-based cell number, line within the
        cell)."""
        starts = self.cell_lines if python is None else self.cell_starts(python)
        cell, first = 0, 1
        for index, start in starts:
            if start <= line:
                cell, first = index, start
        return cell + 1, line - first + 1


def _marker_names(sources: list[str]) -> tuple[str, str]:
    if not any(_PREFIX in text for text in sources):
        return "__rnnfix_cell__", notebook_syntax.MASK_NAME
    n = 1
    while any(f"{_PREFIX}{n}_" in text for text in sources):
        n += 1
    return f"{_PREFIX}{n}_cell__", f"{_PREFIX}{n}_magic__"


def parse(text: str) -> Notebook:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FileProblem(f"not a notebook: invalid JSON ({exc})") from None
    except RecursionError:
        raise FileProblem("not a notebook: JSON nested too deeply") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise FileProblem("not a notebook: no list of cells")
    version = data.get("nbformat", 4)
    if not isinstance(version, int) or isinstance(version, bool) or version < 4:
        raise FileProblem(f"notebook format {version!r} is not supported (need 4)")
    nb = Notebook(data, "", text=text)
    code = [
        (index, _cell_text(cell, index))
        for index, cell in enumerate(data["cells"])
        if isinstance(cell, dict) and cell.get("cell_type") == "code"
    ]
    nb.cell_name, nb.mask_name = _marker_names([source for _, source in code])
    parts: list[str] = []
    line = 1
    for index, source in code:
        body = _python_of(nb, index, source)
        if body is None:
            continue
        if body and not body.endswith(("\n", "\r")):
            body += "\n"
        parts.append(f"{nb.cell_name}({index})\n")
        line += 1
        nb.cell_lines.append((index, line))
        parts.append(body)
        line += len(split_lines(body))
    nb.python = "".join(parts)
    for layout in _LAYOUTS:
        dumped = _dump(data, layout)
        if dumped == text.rstrip("\n"):
            nb.layout = layout
            nb.trailing_newline = text.endswith("\n")
            break
    return nb


def _python_of(nb: Notebook, index: int, source: str) -> str | None:
    """A code cell as Python with its IPython syntax masked; None for a cell
    that is not Python (another cell magic) or that does not parse."""
    python_body = notebook_syntax.has_python_body(source)
    if notebook_syntax.cell_magic(source) is not None and not python_body:
        return None  # %%bash, %%writefile...: the body is not Python
    magics = list(nb.magics)  # masks are numbered across the notebook
    masked = notebook_syntax.mask(source, magics, nb.mask_name)
    prefix = _common_indent(masked)
    if prefix:
        masked = _dedent(masked, prefix)
    try:
        ast.parse(masked)
    except SyntaxError as exc:
        if notebook_syntax.is_automagic(source):
            return None  # ``pip install x``: a magic, not Python
        msg = (exc.msg or "invalid syntax").splitlines()[0]
        nb.skipped.append((index + 1, f"line {exc.lineno}: cannot parse: {msg}"))
        return None
    except (ValueError, RecursionError, MemoryError) as exc:
        nb.skipped.append((index + 1, f"cannot parse: {type(exc).__name__}: {exc}"))
        return None
    if python_body:
        nb.magic_heads[index] = len(nb.magics)  # the first mask of the cell
    if prefix:
        nb.dedents[index] = prefix
    nb.magics = magics
    return masked


def _common_indent(text: str) -> str:
    """The indentation of a cell's first line when every line with code
    has it (IPython's ``leading_indent``: such a cell runs dedented)."""
    lines = [line for line in split_lines(text) if line.strip()]
    if not lines:
        return ""
    first = lines[0]
    prefix = first[: len(first) - len(first.lstrip(" \t"))]
    if not prefix or not all(line.startswith(prefix) for line in lines):
        return ""
    return prefix


def _dedent(text: str, prefix: str) -> str:
    # Blank lines stay as they are, so that putting ``prefix`` back on every
    # line with code gives the cell's exact text.
    return "".join(line[len(prefix) :] if line.strip() else line for line in split_lines(text))


def _indent(text: str, prefix: str) -> str:
    return "".join(prefix + line if line.strip() else line for line in split_lines(text))


def _cell_text(cell: dict[str, Any], index: int) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise FileProblem(f"not a notebook: cell {index + 1} has a source that is not text")


def render(nb: Notebook, python: str) -> str:
    """The notebook JSON with the code cells taken from ``python``."""
    cells: dict[int, list[str]] = {}
    current: list[str] | None = None
    above: list[str] = []  # imports a fix added at the top of the module
    marker = nb._cell
    for line in split_lines(python):
        m = marker.match(line)
        if m:
            current = cells.setdefault(int(m.group(1)), [])
            continue
        if current is None:
            if line.strip() and not _IMPORT.match(line):
                raise FileProblem("cannot rewrite: a fix moved code out of the notebook's cells")
            above.extend([line] if line.strip() else [])
            continue
        current.append(line)
    if sorted(cells) != [index for index, _ in nb.cell_lines]:
        raise FileProblem("cannot rewrite: a fix moved a notebook cell boundary")
    if above:  # they go at the top of the first cell that runs Python
        top = cells[nb.cell_lines[0][0]]
        at = _after_cell_magic(top) if nb.cell_lines[0][0] in nb.magic_heads else 0
        top[at:at] = above
    data = json.loads(json.dumps(nb.data))  # a deep copy
    changed: dict[int, str | list[str]] = {}
    for index, lines in cells.items():
        head = nb.magic_heads.get(index)
        if head is not None:
            first = re.match(re.escape(nb.mask_name) + r"\((\d+)\)", "".join(lines).lstrip())
            if first is None or int(first.group(1)) != head:
                raise FileProblem("cannot rewrite: a fix moved code above a cell magic")
        cell = data["cells"][index]
        old = _cell_text(cell, index)
        body = "".join(lines)
        if index in nb.dedents:
            body = _indent(body, nb.dedents[index])
        text = notebook_syntax.unmask(body, nb.magics, nb.mask_name)
        if not old.endswith(("\n", "\r")) and text.endswith("\n"):
            text = text[:-1]
        if text == old:
            continue
        if isinstance(cell["source"], list):
            cell["source"] = split_lines(text)
        else:
            cell["source"] = text
        changed[index] = cell["source"]
    if nb.layout is not None:
        out = _dump(data, nb.layout)
        return out + "\n" if nb.trailing_newline else out
    # A layout json.dumps does not reproduce: splice the changed sources in.
    spliced = notebook_json.splice(nb.text, changed)
    if spliced is None or json.loads(spliced) != data:
        raise FileProblem("cannot rewrite: the notebook's JSON layout is not one rnnfix can keep")
    return spliced


def _after_cell_magic(lines: list[str]) -> int:
    """The index of the line after a cell's leading cell magic line."""
    for i, line in enumerate(lines):
        if line.strip():
            return i + 1
    return len(lines)


def code_cells(text: str) -> list[tuple[int, str]] | None:
    """(1-based cell number, source) of each code cell of a notebook's JSON;
    None when ``text`` is not a notebook."""
    try:
        data = json.loads(text)
        cells = data["cells"]
        return [
            (i + 1, _cell_text(c, i))
            for i, c in enumerate(cells)
            if isinstance(c, dict) and c.get("cell_type") == "code"
        ]
    except (ValueError, TypeError, KeyError, FileProblem):
        return None


def _dump(data: object, layout: tuple[int, bool]) -> str:
    indent, sort_keys = layout
    return json.dumps(data, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
