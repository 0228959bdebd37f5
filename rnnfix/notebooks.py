"""Jupyter notebooks: their code cells as one Python module, and back.

Code cells are joined into one module, each preceded by a marker statement
``__rnnfix_cell__(k)``, so that a fix inserted at the top of a cell stays in
that cell; IPython syntax (``%magic``, ``!shell``, ``obj?``) is masked as
``__rnnfix_magic__(m)`` with its indentation, and ``%%cell`` magics leave the
whole cell out. After fixing, the module is split back at the markers and the
JSON is written in the layout it was read in; a notebook whose JSON layout we
cannot reproduce byte for byte is reported instead of reformatted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from rnnfix.files import FileProblem

_MAGIC = re.compile(r"^\s*[%!]|^\s*\w[\w.]*\?\??\s*$|^\s*\?")
_CELL = re.compile(r"^__rnnfix_cell__\((\d+)\)\r?\n?$")
_MASKED = re.compile(r"^(\s*)__rnnfix_magic__\((\d+)\)(\r?\n?)$")
# (indent, sort_keys) as written by nbformat (1, True) and by other tools.
_LAYOUTS: tuple[tuple[int, bool], ...] = ((1, True), (1, False), (2, False), (2, True), (4, False))


@dataclass
class Notebook:
    data: dict[str, Any]
    python: str  # the code cells as one module
    cell_lines: list[tuple[int, int]] = field(default_factory=list)  # (cell index, first line)
    magics: list[str] = field(default_factory=list)
    layout: tuple[int, bool] | None = None  # (indent, sort_keys) that reproduce the file
    trailing_newline: bool = True

    def locate(self, line: int) -> tuple[int, int]:
        """A line of ``python`` as (1-based cell number, line within the cell)."""
        cell, first = 0, 1
        for index, start in self.cell_lines:
            if start <= line:
                cell, first = index, start
        return cell + 1, line - first + 1


def parse(text: str) -> Notebook:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FileProblem(f"not a notebook: invalid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise FileProblem("not a notebook: no list of cells")
    if data.get("nbformat", 4) < 4:
        raise FileProblem(f"notebook format {data.get('nbformat')} is not supported (need 4)")
    nb = Notebook(data, "")
    parts: list[str] = []
    line = 1
    for index, cell in enumerate(data["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = _cell_text(cell, index)
        if source.lstrip().startswith("%%"):
            continue  # a cell magic: the body is not Python
        parts.append(f"__rnnfix_cell__({index})\n")
        line += 1
        nb.cell_lines.append((index, line))
        body = "".join(_mask(ln, nb.magics) for ln in source.splitlines(keepends=True))
        if body and not body.endswith("\n"):
            body += "\n"
        parts.append(body)
        line += body.count("\n")
    nb.python = "".join(parts)
    for layout in _LAYOUTS:
        dumped = _dump(data, layout)
        if dumped == text.rstrip("\n"):
            nb.layout = layout
            nb.trailing_newline = text.endswith("\n")
            break
    return nb


def _cell_text(cell: dict[str, Any], index: int) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise FileProblem(f"not a notebook: cell {index + 1} has a source that is not text")


def _mask(line: str, magics: list[str]) -> str:
    if not _MAGIC.match(line):
        return line
    stripped = line.rstrip("\r\n")
    indent = stripped[: len(stripped) - len(stripped.lstrip())]
    magics.append(stripped.lstrip())
    return f"{indent}__rnnfix_magic__({len(magics) - 1}){line[len(stripped) :] or ''}"


def render(nb: Notebook, python: str) -> str:
    """The notebook JSON with the code cells taken from ``python``."""
    if nb.layout is None:
        raise FileProblem("cannot rewrite: the notebook's JSON layout is not nbformat's")
    cells: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in python.splitlines(keepends=True):
        m = _CELL.match(line)
        if m:
            current = cells.setdefault(int(m.group(1)), [])
            continue
        if current is None:
            raise FileProblem("cannot rewrite: a fix moved code out of the notebook's cells")
        masked = _MASKED.match(line)
        if masked:
            line = masked.group(1) + nb.magics[int(masked.group(2))] + masked.group(3)
        current.append(line)
    if sorted(cells) != [index for index, _ in nb.cell_lines]:
        raise FileProblem("cannot rewrite: a fix moved a notebook cell boundary")
    data = json.loads(json.dumps(nb.data))  # a deep copy
    for index, lines in cells.items():
        cell = data["cells"][index]
        old = _cell_text(cell, index)
        text = "".join(lines)
        if not old.endswith("\n") and text.endswith("\n"):
            text = text[:-1]
        if text == old:
            continue
        if isinstance(cell["source"], list):
            cell["source"] = text.splitlines(keepends=True)
        else:
            cell["source"] = text
    out = _dump(data, nb.layout)
    return out + "\n" if nb.trailing_newline else out


def _dump(data: object, layout: tuple[int, bool]) -> str:
    indent, sort_keys = layout
    return json.dumps(data, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
