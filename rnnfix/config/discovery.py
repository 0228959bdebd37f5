"""Which ``pyproject.toml`` configures a file, as ruff finds it: the nearest
one above the file that has a ``[tool.rnnfix]`` table (one without is
passed over, as ruff passes over a ``pyproject.toml`` without
``[tool.ruff]``). Each file has its own, so the order of the paths of a run
never changes what a file reports, and the command line, pre-commit, CI and
the editor agree on every file.

The search never leaves the project: it stops at the repository root (the
folder with a ``.git`` folder or file; that folder's own configuration
counts), and it passes over a configuration another user owns (a
``pyproject.toml`` planted in a shared temporary folder or in another
account's home must not configure rnnfix), with a note saying so, unless it
lies in a repository whose ``.git`` has the same owner: that is the
checkout's own configuration (a CI container running as root over a checkout
the runner's user made). ``--config`` names a file on purpose: it is read
whoever owns it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_NAME = "pyproject.toml"


def owned_by_another_user(path: Path | str) -> int | None:
    """The owner's uid when ``path`` exists and someone else owns it; None
    when it is this user's (or the system has no file owners)."""
    if not hasattr(os, "getuid"):
        return None
    try:
        uid = os.lstat(path).st_uid
    except OSError:
        return None
    return uid if uid != os.getuid() else None


def at_repository_root(folder: Path | str) -> bool:
    """A ``.git`` folder (a clone) or file (a worktree, a submodule)."""
    return os.path.lexists(os.path.join(folder, ".git"))


def has_rnnfix_table(path: Path) -> bool:
    """Whether ``path`` configures rnnfix. One that cannot be read, is no
    valid TOML or whose ``tool`` is not a table counts too (ruff stops at
    such a ``pyproject.toml``): loading it then says what is wrong, rather
    than rnnfix silently taking a configuration further up."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    if "tool" not in text:  # no [tool] table at all: no parse needed
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return True
    tool = data.get("tool")
    if tool is None:
        return False
    return not isinstance(tool, dict) or "rnnfix" in tool


class ConfigFinder:
    """``nearest`` for many files: each folder is looked at once a run, by
    its path as given (made absolute, never resolved through links, as ruff
    walks a path's ancestors). ``notes``: one line per configuration passed
    over because another user owns it."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self._folders: dict[str, Path | None] = {}  # absolute folders
        self._given: dict[str, Path | None] = {}  # folders as the paths name them
        self._cwd = os.getcwd()

    def for_file(self, path: Path | str) -> Path | None:
        """``nearest`` for a file a walk found or a run names: looked up by
        its folder as named (a string operation), so that a large tree costs
        a dictionary lookup per file."""
        given = os.path.dirname(os.fspath(path))
        if given not in self._given:
            folder = os.path.normpath(os.path.join(self._cwd, given))
            self._given[given] = self._from(folder)
        return self._given[given]

    def nearest(self, path: Path) -> Path | None:
        """The configuration of the file (or folder) at ``path``, or None."""
        absolute = os.path.normpath(os.path.join(self._cwd, os.fspath(path)))
        return self._from(absolute if os.path.isdir(absolute) else os.path.dirname(absolute))

    def _from(self, folder: str) -> Path | None:
        visited: list[str] = []
        found: Path | None = None
        current = folder
        while True:
            if current in self._folders:
                found = self._folders[current]
                break
            visited.append(current)
            config = os.path.join(current, CONFIG_NAME)
            if os.path.isfile(config) and has_rnnfix_table(Path(config)):
                if self._trusted(Path(config)):
                    found = Path(config)
                    break
            if at_repository_root(current):
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for key in visited:
            self._folders[key] = found
        return found

    def _trusted(self, config: Path) -> bool:
        owner = owned_by_another_user(config)
        if owner is None or _checkout_owner(config.parent) == owner:
            return True
        note = (
            f"ignoring {config}: owned by another user (uid {owner}); "
            f"pass --config {config} to use it"
        )
        if note not in self.notes:
            self.notes.append(note)
        return False


def _checkout_owner(folder: str | Path) -> int | None:
    """The owner of the ``.git`` of the repository ``folder`` is in (at or
    above it), or None outside a repository."""
    current = os.fspath(folder)
    while True:
        git = os.path.join(current, ".git")
        if os.path.lexists(git):
            try:
                return os.lstat(git).st_uid
            except OSError:
                return None
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
