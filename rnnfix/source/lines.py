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


_ENDING = re.compile(r"\r\n|\r|\n")


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


def endings_kept(old: str, new: str) -> str:
    """``new`` (``old`` as libcst rewrote it) with each line libcst wrote
    ending as the line it follows does (as the line it precedes, at the top).

    libcst ends every line it writes with the module's first line ending: in
    a file whose line endings differ (LF lines and a bare-CR continuation,
    CRLF lines after an LF one) an inserted ``model.train()`` would take the
    first line's, not its neighbours'. A written line is one of the lines
    ``new`` adds or rewrites (by ``difflib``) that ends with libcst's ending
    and is not, stripped, one of the lines it stands for that did."""
    first = _ENDING.search(old)
    if first is None or len(set(_ENDING.findall(old))) < 2:
        return new  # one kind of ending: libcst's is the file's
    default = first.group(0)
    import difflib

    old_lines, new_lines = split_lines(old), split_lines(new)
    matcher = difflib.SequenceMatcher(
        None,
        [line.rstrip("\r\n") for line in old_lines],
        [line.rstrip("\r\n") for line in new_lines],
        autojunk=False,
    )
    out = list(new_lines)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        kept = {line.strip() for line in old_lines[i1:i2] if _ending(line) == default}
        for j in range(j1, j2):
            line = out[j]
            if _ending(line) != default or line.strip() in kept:
                continue
            if j > 0:
                ending = _ending(out[j - 1])
            elif i1 < len(old_lines):
                ending = _ending(old_lines[i1])
            else:
                continue
            if ending:
                out[j] = line.rstrip("\r\n") + ending
    return "".join(out)
