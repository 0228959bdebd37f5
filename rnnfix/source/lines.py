"""Lines as Python counts them: split at ``\\n``, ``\\r\\n`` and ``\\r`` only.

``str.splitlines`` also splits at form feed, vertical tab, ``\\x1c``-``\\x1e``,
U+0085, U+2028 and U+2029, which Python's tokenizer takes for ordinary
characters (in a comment or a string, or ``\\f`` as indentation): every line
number ``ast`` gives, every ``# rnnfix: ignore`` and every column is by these
lines, so everything that indexes a source by line splits with this."""

from __future__ import annotations

import re

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
# What ``str.splitlines`` splits at that Python does not.
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(text: str) -> list[str]:
    """Physical lines, each with its line ending."""
    if _OTHER_BREAKS.search(text) is None:
        return text.splitlines(keepends=True)  # the same lines, faster
    return _LINE.findall(text)


def line_texts(text: str) -> list[str]:
    """Physical lines without their line endings."""
    if _OTHER_BREAKS.search(text) is None:
        return text.splitlines()
    return [line.rstrip("\r\n") for line in _LINE.findall(text)]
