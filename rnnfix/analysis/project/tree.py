"""Where a project's files are: its root (the nearest folder with a
project marker), the roots an absolute import is looked up in, third-party
folders, and the project's Python files (for the reverse call index). Apart
from ``imported.py``, which imports the index, so that the rules can list
a project's files without a circle."""

from __future__ import annotations

import os
import re
from functools import lru_cache

from rnnfix.source.files import read_head

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_THIRD_PARTY_DIRS = frozenset({"site-packages", "dist-packages"})
# More Python files than this under a project root: a tree too large to read
# for the callers of one function (RNF003 then treats its callers as unseen).
MAX_PROJECT_FILES = 2000


def clear_caches() -> None:
    """Forget what the file system answered (files come and go between runs)."""
    for memo in (_import_roots, _imports_itself, project_root, third_party, python_files_under):
        memo.cache_clear()


def import_roots(folder: str) -> tuple[str, ...]:
    """Where an absolute import of a file in ``folder`` is looked up, nearest
    first: the folder, the folder above its package root, the project root,
    and the working folder when ``folder`` is inside it (a script run from
    the repository's root has it on ``sys.path``: ``optim/trainer.py``, in a
    folder without ``__init__.py``, imports the root's ``utils`` package
    when ``main.py`` imports it; a tree without a ``.git`` has no other
    marker of that root)."""
    roots = _import_roots(folder)
    cwd = _working_folder()
    if cwd is not None and cwd not in roots and _inside(folder, cwd):
        roots = (*roots, cwd)
    return roots


def _working_folder() -> str | None:
    try:
        return os.path.abspath(os.getcwd())
    except OSError:
        return None  # the working folder was removed


def _inside(folder: str, root: str) -> bool:
    return folder == root or folder.startswith(root.rstrip(os.sep) + os.sep)


@lru_cache(maxsize=4096)
def _import_roots(folder: str) -> tuple[str, ...]:
    top = folder
    while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.dirname(top) != top:
        top = os.path.dirname(top)
    if top == folder and _imports_itself(folder):
        # A folder without ``__init__.py`` whose modules import one another
        # as ``<folder>.<module>`` (NGCF's ``utility/batch_test.py``:
        # ``import utility.metrics``) is run with the folder above on
        # ``sys.path``: the scripts that import it live there.
        top = os.path.dirname(folder)
    out = [folder, top]
    project = project_root(folder)
    if project is not None:
        out.append(project)
    return tuple(dict.fromkeys(out))


# ``from utility.metrics import x``, ``import utility.metrics as m``: the
# first name of an absolute import, the folder's own name, then a dot.
_SELF_IMPORT = r"^[ \t]*(?:from|import)[ \t]+{name}\."


@lru_cache(maxsize=4096)
def _imports_itself(folder: str) -> bool:
    """A module of ``folder`` imports a module of ``folder`` through the
    folder's own name (the head of each of at most 50 files read)."""
    name = os.path.basename(folder)
    if not name.isidentifier():
        return False
    pattern = re.compile(_SELF_IMPORT.format(name=re.escape(name)), re.MULTILINE)
    try:
        files = sorted(f for f in os.listdir(folder) if f.endswith(".py"))[:50]
    except OSError:
        return False
    return any(pattern.search(read_head(os.path.join(folder, f))) for f in files)


@lru_cache(maxsize=4096)
def project_root(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` with a project marker."""
    current = folder
    while True:
        if any(os.path.exists(os.path.join(current, m)) for m in PROJECT_MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


@lru_cache(maxsize=4096)
def third_party(folder: str) -> bool:
    current = folder
    while True:
        if os.path.basename(current) in _THIRD_PARTY_DIRS:
            return True
        if os.path.isfile(os.path.join(current, "pyvenv.cfg")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def project_python_files(folder: str) -> tuple[str, ...] | None:
    """The ``.py`` files of the project that ``folder`` belongs to, for the
    reverse call index (RNF003: who calls an evaluation function of a file
    run alone): under the project root, or, without one, the folder above
    the package root ``folder`` is in; no hidden folder, virtual environment
    or ``site-packages``. None when there are more than ``MAX_PROJECT_FILES``."""
    # Not the working folder ``import_roots`` may add: a language server
    # started in ``/`` or a home folder would walk all of it.
    root = project_root(folder) or _import_roots(folder)[-1]
    return python_files_under(root)


@lru_cache(maxsize=16)
def python_files_under(root: str) -> tuple[str, ...] | None:
    found: list[str] = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in _THIRD_PARTY_DIRS
            and d not in ("__pycache__", "node_modules")
            and not os.path.isfile(os.path.join(current, d, "pyvenv.cfg"))
        )
        found += [os.path.join(current, f) for f in sorted(files) if f.endswith(".py")]
        if len(found) > MAX_PROJECT_FILES:
            return None
    return tuple(os.path.abspath(p) for p in found)
