"""The files outside a run that its files import: what lets ``rnnfix apply
train.py`` (or a pre-commit run, which passes a few files) know what ``from
utils import evaluate`` and ``from models import Net`` do.

``imported_files(paths)`` resolves each run file's imports on disk, the way
Python would from the places a script of the project runs with on
``sys.path``: the file's own folder (a script run from its folder), the
folder above its package root (``pkg/train.py`` importing ``pkg.models``) and
the project root (the nearest folder with ``pyproject.toml``, ``setup.py``,
``setup.cfg`` or ``.git``). It returns the imported files that are not in
the run; the project index (``rnnfix.analysis.project.index``) then summarises them
beside the run's own files, and fixes still go only into the run's files.

It follows as far as the index does: the imported file itself (its
summaries are computed without an index: one file deep), a name a file
re-exports (``from .engine import fit`` in a package's ``__init__.py``, up
to ``_MAX_REEXPORTS`` steps), and the imports of imported files
(``_IMPORTED_DEPTH`` steps: the index follows a class's parts into the
files its file imports, ``ProjectView.mode_free``). Nothing outside the project is read: a file
outside the project root, in ``site-packages``/``dist-packages`` or under a
virtual environment (a folder with ``pyvenv.cfg``) stays unknown, as
third-party code always is.

Cheap by construction: a run file is parsed only when one of its import
lines is relative or names a module or folder that exists in one of its
roots and is not a file of the run: a folder run of a whole project parses
only the files that import modules it leaves out (allennlp: 10 of 351).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from rnnfix.analysis.project.bindings import Binding, import_bindings, stars
from rnnfix.analysis.project.index import normalise
from rnnfix.analysis.project.tree import (
    clear_caches,
    import_roots,
    project_root,
    third_party,
)

# An import line: ``from <dots><dotted> import``, or ``import <dotted> [as x], ...``.
_IMPORT_LINE = re.compile(
    r"[ \t]*(?:from[ \t]*(\.*)([A-Za-z_][\w.]*)?[ \t]+import\b|import[ \t]+([^\n#;\\(]+))"
)
_MAX_REEXPORTS = 3
_IMPORTED_DEPTH = 2  # imports of imported files followed this many steps


def imported_files(paths: Iterable[Path]) -> list[str]:
    """Absolute paths of the ``.py`` files outside ``paths`` that the files
    of ``paths`` import (and the re-exports they go through), sorted."""
    run = {normalise(p) for p in paths}
    # The file system answers afresh each run (files come and go between runs).
    clear_caches()
    _is_file.cache_clear()
    finder = _Finder(run)
    for path in sorted(run):
        finder.scan(path)
    # The imports of imported files, a few steps: a model class of
    # ``model.py`` built from the layers of ``modules.py`` is known only
    # through both (``ProjectView.mode_free`` follows a class's parts across
    # files). Each is summarised only if a lookup reaches it.
    frontier = sorted(finder.found)
    for _ in range(_IMPORTED_DEPTH):
        before = set(finder.found)
        for path in frontier:
            finder.scan(path)
        frontier = sorted(finder.found - before)
    return sorted(finder.found)


def imports_of(path: str) -> list[str]:
    """``imported_files`` of the one file ``path``, within the run being
    made (its memos kept): what a project file beyond the run imports, read
    to judge its calls into the run (RNF003's reverse call index)."""
    finder = _Finder({path})
    finder.scan(path)
    return sorted(finder.found)


class _Finder:
    def __init__(self, run: set[str]) -> None:
        self.run = run
        self.found: set[str] = set()
        self._done: set[tuple[str, int, tuple[str, ...], int]] = set()
        self._packages: dict[str, bool] = {}
        self._lines: dict[tuple[str, tuple[str | None, ...]], bool] = {}
        self._bindings: dict[str, dict[str, Binding]] = {}

    def scan(self, path: str) -> None:
        text = _python_text(path)
        if text is None:
            return
        folder = os.path.dirname(path)
        # Lines first (str methods are fast), the regex only on import lines.
        matches = (_IMPORT_LINE.match(ln) for ln in text.splitlines() if "import" in ln)
        lines = {m.group(1, 2, 3) for m in matches if m is not None}
        if not any(self._line_outside(folder, line) for line in lines):
            return
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            return
        # ``from __init__ import *`` among them: the module itself (RNF005
        # reads the ``torch`` it binds).
        for binding in import_bindings(tree).values():
            self._follow(path, binding, 0)

    def _line_outside(self, folder: str, line: tuple[str | None, ...]) -> bool:
        # The files of a folder import the same names: answered once.
        key = (folder, line)
        if key not in self._lines:
            self._lines[key] = self._may_name_outside(folder, *line)
        return self._lines[key]

    def _may_name_outside(
        self, folder: str, dots: str | None, module: str | None, names: str | None
    ) -> bool:
        """A pre-filter on one import line: a module it names (the longest
        prefix of its dotted name that exists) is a file outside the run, or a
        package with a module outside the run (``from pkg import models``:
        ``models`` may be one)."""
        if dots:
            root = folder
            for _ in range(len(dots) - 1):
                root = os.path.dirname(root)
            parts = module.split(".") if module else []
            return self._outside(root, parts, 0)
        modules = [module] if module else (names or "").split(",")
        for name in modules:
            parts = name.strip().split(" ")[0].split(".")
            if all(p.isidentifier() for p in parts) and any(
                self._outside(root, parts, 1) for root in import_roots(folder)
            ):
                return True
        return False

    def _outside(self, root: str, parts: list[str], shortest: int) -> bool:
        for i in range(len(parts), shortest - 1, -1):
            stem = os.path.join(root, *parts[:i])
            if i and _is_file(stem + ".py"):
                return stem + ".py" not in self.run
            init = os.path.join(stem, "__init__.py")
            if _is_file(init):
                return init not in self.run or self._package_outside(stem)
        return False

    def _package_outside(self, folder: str) -> bool:
        """A module or subpackage of ``folder`` is not a file of the run."""
        if folder not in self._packages:
            try:
                entries = os.listdir(folder)
            except OSError:
                entries = []
            modules = (
                os.path.join(folder, e, "__init__.py")
                if not e.endswith(".py")
                else os.path.join(folder, e)
                for e in entries
            )
            self._packages[folder] = any(m not in self.run and _is_file(m) for m in modules)
        return self._packages[folder]

    def _follow(self, importer: str, binding: Binding, depth: int) -> None:
        level, parts = binding
        key = (os.path.dirname(importer), level, parts, depth)
        if key in self._done:
            return
        self._done.add(key)
        found = resolve_on_disk(importer, level, parts)
        if found is None:
            return
        file, rest = found
        if file == importer:
            return
        if file in self.run:
            return  # scanned on its own: its re-exports are its imports
        self.found.add(file)
        if depth >= _MAX_REEXPORTS:
            return
        # Re-exports: the name imported from ``file`` is itself an import
        # there; a whole package's ``__init__.py`` re-exports all of its imports.
        package = os.path.basename(file) == "__init__.py"
        if not rest and not package:
            return
        if file not in self._bindings:
            self._bindings[file] = _bindings(file)
        bindings = self._bindings[file]
        if rest:
            named = bindings.get(rest[0])
            if named is not None:
                self._follow(file, (named[0], named[1] + rest[1:]), depth + 1)
            else:  # ``from .tensor import *`` may bind it
                for level, parts in stars(bindings):
                    self._follow(file, (level, parts + rest), depth + 1)
        else:
            for each in bindings.values():
                self._follow(file, each, depth + 1)


def resolve_on_disk(
    importer: str, level: int, parts: tuple[str, ...]
) -> tuple[str, tuple[str, ...]] | None:
    """(file, names inside it) for ``parts`` imported by ``importer``: the
    longest prefix that is a module of the project, in the first root (nearest
    first) that has one; None for a module outside the project."""
    folder = os.path.dirname(importer)
    if level:
        for _ in range(level - 1):
            folder = os.path.dirname(folder)
        roots, shortest = [folder], 0
    else:
        roots, shortest = list(import_roots(folder)), 1
    for root in roots:
        for i in range(len(parts), shortest - 1, -1):
            found = _module_file(root, parts[:i])
            if found is not None:
                return found, parts[i:]
    return None


def _module_file(root: str, parts: tuple[str, ...]) -> str | None:
    stem = os.path.join(root, *parts)
    candidates = [stem + ".py", os.path.join(stem, "__init__.py")] if parts else []
    if not parts:
        candidates = [os.path.join(root, "__init__.py")]
    for candidate in candidates:
        if os.path.isfile(candidate) and _inside_project(candidate):
            return candidate
    return None


@lru_cache(maxsize=4096)
def _is_file(path: str) -> bool:
    return os.path.isfile(path)


def _inside_project(path: str) -> bool:
    """Not third-party code: the file (symlinks resolved) is not in
    ``site-packages``/``dist-packages`` nor under a virtual environment, and
    lies inside the project root of the folder it was found in, when there is one."""
    real = os.path.realpath(path)
    folder = os.path.dirname(path)
    for checked in {folder, os.path.dirname(real)}:
        if third_party(checked):
            return False
    project = project_root(folder)
    if project is None:
        return True
    base = os.path.realpath(project)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _bindings(path: str) -> dict[str, Binding]:
    text = _python_text(path)
    if text is None:
        return {}
    try:
        return import_bindings(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError):
        return {}


def _python_text(path: str) -> str | None:
    """The Python source of a file (a notebook's code cells), or None."""
    from rnnfix.source.files import FileProblem, read_source

    try:
        text = read_source(Path(path))[1].text
    except FileProblem:
        return None
    if not path.endswith(".ipynb"):
        return text
    from rnnfix.source import notebooks

    try:
        return notebooks.parse(text).python
    except FileProblem:
        return None
