"""``per-file-ignores``: rule codes to skip in the files a glob matches, with
ruff's semantics.

A pattern matches a file when it matches the file's name (``"__init__.py"``)
or, taken relative to the project root (the folder of the ``pyproject.toml``
the setting is read from), the file's whole path (``"scripts/*.py"``). As in
ruff (globset's defaults), ``*`` and ``**`` both match across folders,
``?`` one character, ``[...]`` a set and ``{a,b}`` either. A pattern that
starts with ``!`` applies to the files it does *not* match
(``"!src/**" = ["RNF005"]``: RNF005 only in ``src/``).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

_BRACES = re.compile(r"\{([^{}]*)\}")

PerFileIgnores = tuple[tuple[str, tuple[str, ...]], ...]


def ignored_codes(path: str, root: str | None, table: PerFileIgnores) -> tuple[str, ...]:
    """The codes ``table`` ignores in the file at ``path`` (relative to the
    working folder, or absolute)."""
    if not table or path.startswith("<"):  # "<stdin>", "<string>": no file
        return ()
    absolute = _posix(Path(path).resolve())
    base = os.path.basename(absolute)
    top = _posix(Path(root).resolve()) if root else _posix(Path.cwd().resolve())
    codes: list[str] = []
    for pattern, ignored in table:
        negated = pattern.startswith("!")
        glob = pattern[1:] if negated else pattern
        if _matches(glob, base, absolute, top) != negated:
            codes.extend(ignored)
    return tuple(codes)


def _matches(glob: str, base: str, absolute: str, top: str) -> bool:
    for alternative in _expand(glob.replace("\\", "/")):
        full = alternative if alternative.startswith("/") else f"{top}/{alternative}"
        if fnmatch.fnmatchcase(base, alternative):
            return True
        # "*" crosses "/" as in globset; "a/**/b" also matches "a/b".
        if any(fnmatch.fnmatchcase(absolute, g) for g in (full, full.replace("/**/", "/"))):
            return True
    return False


def _expand(glob: str) -> Iterator[str]:
    """``{a,b}`` alternatives (not nested), as globset reads them."""
    m = _BRACES.search(glob)
    if m is None:
        yield glob
        return
    for choice in m.group(1).split(","):
        yield from _expand(glob[: m.start()] + choice + glob[m.end() :])


def _posix(path: Path) -> str:
    return path.as_posix()


def validate(table: object, source: str) -> PerFileIgnores:
    """``[tool.rnnfix.per-file-ignores]`` as read from TOML: a table of
    pattern -> list of codes (or one code); raises ``ValueError`` with a message."""
    if not isinstance(table, dict):
        raise ValueError(f"{source}: per-file-ignores must be a table of pattern = [codes]")
    out: list[tuple[str, tuple[str, ...]]] = []
    for pattern, codes in table.items():
        if isinstance(codes, str):
            codes = [codes]
        if not isinstance(codes, Sequence) or not all(isinstance(c, str) for c in codes):
            raise ValueError(f"{source}: per-file-ignores {pattern!r} must be a list of codes")
        if not pattern.lstrip("!"):
            raise ValueError(f"{source}: per-file-ignores has an empty pattern")
        out.append((pattern, tuple(c.strip().upper() for c in codes if c.strip())))
    return tuple(out)
