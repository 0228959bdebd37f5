"""New cell sources spliced into a notebook's JSON text in place.

For a notebook whose JSON layout ``json.dumps`` does not reproduce (written by
an old tool, minified by Colab, a stray trailing space), only the ``source``
values of the changed cells are rewritten, each in the style of the value it
replaces; every other byte stays. ``rnnfix.source.notebooks`` checks that the result
loads as the notebook it meant to write before using it.
"""

from __future__ import annotations

import json

_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


class _Unexpected(Exception):
    pass


def source_spans(text: str) -> dict[int, tuple[int, int]]:
    """Cell index -> (start, end) of its ``source`` value in ``text``; empty
    when the text is not laid out as expected."""
    try:
        return _cells(text)
    except (_Unexpected, ValueError, IndexError):
        return {}


def splice(text: str, sources: dict[int, str | list[str]]) -> str | None:
    """``text`` with the ``source`` of each cell in ``sources`` replaced; None
    when a cell's source cannot be found."""
    spans = source_spans(text)
    if not all(index in spans for index in sources):
        return None
    ascii_only = text.isascii()
    out: list[str] = []
    done = 0
    for index in sorted(sources, key=lambda i: spans[i][0]):
        start, end = spans[index]
        out.append(text[done:start])
        out.append(_styled(sources[index], text[start:end], ascii_only))
        done = end
    out.append(text[done:])
    return "".join(out)


def _styled(value: str | list[str], old: str, ascii_only: bool) -> str:
    """``value`` as JSON, laid out like ``old`` (the value it replaces): the
    same text before the first element, between elements, after the last."""
    if isinstance(value, str) or not value or not old.startswith("["):
        return json.dumps(value, ensure_ascii=ascii_only)
    items = [json.dumps(v, ensure_ascii=ascii_only) for v in value]
    elements = _elements(old, 0)
    if not elements:
        return json.dumps(value, ensure_ascii=ascii_only)
    before, after = old[: elements[0][0]], old[elements[-1][1] :]
    if len(elements) > 1:
        between = old[elements[0][1] : elements[1][0]]
    elif "\n" in before:
        between = "," + before[before.rfind("\n") :]
    else:
        between = ", "
    return before + between.join(items) + after


def _skip(text: str, i: int) -> int:
    while text[i] in _WS:
        i += 1
    return i


def _expect(text: str, i: int, char: str) -> int:
    i = _skip(text, i)
    if text[i] != char:
        raise _Unexpected(char)
    return i + 1


def _members(text: str, i: int) -> list[tuple[str, int, int]]:
    """(key, value start, value end) of the object starting at ``i``."""
    i = _expect(text, i, "{")
    out: list[tuple[str, int, int]] = []
    i = _skip(text, i)
    if text[i] == "}":
        return out
    while True:
        key, i = _DECODER.raw_decode(text, _skip(text, i))
        i = _skip(text, _expect(text, i, ":"))
        _, end = _DECODER.raw_decode(text, i)
        out.append((key, i, end))
        i = _skip(text, end)
        if text[i] == "}":
            return out
        i = _expect(text, i, ",")


def _elements(text: str, i: int) -> list[tuple[int, int]]:
    """(start, end) of each element of the array starting at ``i``."""
    i = _expect(text, i, "[")
    out: list[tuple[int, int]] = []
    i = _skip(text, i)
    if text[i] == "]":
        return out
    while True:
        i = _skip(text, i)
        _, end = _DECODER.raw_decode(text, i)
        out.append((i, end))
        i = _skip(text, end)
        if text[i] == "]":
            return out
        i = _expect(text, i, ",")


def _cells(text: str) -> dict[int, tuple[int, int]]:
    # The last of duplicate keys wins, as in json.loads.
    cells = {key: (start, end) for key, start, end in _members(text, 0)}.get("cells")
    if cells is None:
        return {}
    spans: dict[int, tuple[int, int]] = {}
    for index, (start, _) in enumerate(_elements(text, cells[0])):
        if text[start] != "{":
            continue
        members = {key: (s, e) for key, s, e in _members(text, start)}
        if "source" in members:
            spans[index] = members["source"]
    return spans
