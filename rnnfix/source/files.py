"""Reading, decoding, discovering and atomically writing source files.

Everything here reports problems as ``FileProblem`` with a one-line reason, so
the engine can turn them into per-file failures without a traceback.
"""

from __future__ import annotations

import codecs
import io
import os
import re
import stat
import tempfile
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec


SOURCE_SUFFIXES = (".py", ".ipynb")
# ``write_atomic``'s temporary files: ``.<name>.<random>.rnnfix``. One that
# survived a killed run is never taken for code (the suffix is not a source
# suffix) and the next walk over its folder removes it.
TEMP_SUFFIX = ".rnnfix"
_TEMP_NAME = re.compile(r"^\..+\.(?:py|ipynb)\.[A-Za-z0-9_]{8}\.rnnfix$")
MAX_FILE_BYTES = 5 * 1024 * 1024  # research code is never this big; generated data is

# Folders that never hold the user's own training code.
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "__pycache__", ".venv", "venv", ".env", ".tox",
        ".nox", ".eggs", "build", "dist", "node_modules", "site-packages", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints", ".rnnfix_cache",
    }
)  # fmt: skip


# Test code is left alone by default (``include-tests`` turns that off): a test
# asserts what the code does as written, and unittest/pytest collect these.
TEST_DIRS = frozenset({"tests", "test"})


def is_test_name(name: str) -> bool:
    """A file name pytest collects as tests, or its ``conftest.py``."""
    if not name.endswith(".py"):
        return False
    return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")


# What makes a ``*_test.py`` file test code: a function or class pytest
# collects, a ``TestCase``, or a test framework's import. Research code names
# evaluation scripts ``gptj_reward_test.py`` or ``ab_test.py`` (an experiment):
# with none of these they are scripts, checked like any other. When in doubt
# (any sign at all, or a file that cannot be read) the file stays test code.
_TEST_CODE = re.compile(
    r"^[ \t]*(?:(?:async[ \t]+)?def[ \t]+test|class[ \t]+Test)"
    r"|\bTestCase\b"
    r"|^[ \t]*(?:import|from)[ \t]+(?:pytest|unittest|nose2?|absl\.testing|hypothesis)\b",
    re.MULTILINE,
)


def holds_test_code(text: str) -> bool:
    return _TEST_CODE.search(text) is not None


def is_test_source(path: str, text: str) -> bool:
    """``is_test_file`` for a source already read (an analysis's ``ctx``)."""
    name = os.path.basename(path)
    if not is_test_name(name):
        return False
    if name.endswith("_test.py") and not name.startswith("test_") and not holds_test_code(text):
        return False
    return name == "conftest.py" or not imported_by_code([Path(path)])


def _script_named_like_a_test(name: str, path: Path | None) -> bool:
    """``*_test.py`` (not ``test_*.py``, whose name pytest collects even when
    empty) whose text shows no test code: see ``_TEST_CODE``."""
    if path is None or not name.endswith("_test.py") or name.startswith("test_"):
        return False
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return False
    return not holds_test_code(text)


def is_test_file(name: str, path: Path | None = None) -> bool:
    """``is_test_name``, except a ``*_test.py`` script whose file (``path``)
    shows no test code."""
    return is_test_name(name) and not _script_named_like_a_test(name, path)


def is_test_path(rel: PurePath, path: Path | None = None) -> bool:
    """A test file by its path relative to the folder the user gave (the
    folders above it are not the project's: a checkout may live in ``tests/``);
    ``path``, the file on disk, lets a ``*_test.py`` script count as code."""
    return is_test_file(rel.name, path) or any(part in TEST_DIRS for part in rel.parts[:-1])


class FileProblem(Exception):
    """A file that cannot be read, decoded or written; ``str()`` is the reason."""


@dataclass(frozen=True)
class DecodedSource:
    text: str
    encoding: str
    bom: bool
    # Why the text was not decoded as Python would decode it (a coding cookie
    # naming a codec Python does not know), for the run to report; None when it was.
    warning: str | None = None

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def decode(data: bytes) -> DecodedSource:
    """Decode as Python does: BOM, then a coding cookie, else UTF-8; a cookie
    naming a codec Python does not know falls back to UTF-8 with a warning."""
    if b"\0" in data:
        raise FileProblem("binary file (contains NUL bytes)")
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # detect_encoding also fails on undecodable bytes in the first two lines;
        # name the bytes when that is what happened.
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise FileProblem(f"cannot decode as utf-8: {bad}") from None
        if str(exc).startswith("unknown encoding: "):
            # A cookie naming a codec that a package registers at start-up
            # (`# -*- coding: future_fstrings -*-`, a Python 2 back-port of
            # f-strings): the source itself is UTF-8 text that Python 3 parses.
            # Read it as UTF-8 and say so; it is written back as UTF-8, cookie kept.
            codec = str(exc).removeprefix("unknown encoding: ")
            warning = f"coding cookie names an unknown codec ({codec}): read as utf-8"
            return DecodedSource(text, "utf-8", bom, warning)
        raise FileProblem(f"cannot decode: {exc}") from None
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    try:
        text = body.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise FileProblem(f"cannot decode as {encoding}: {exc}") from None
    return DecodedSource(text, encoding, bom)


def read_source(path: Path, max_bytes: int = MAX_FILE_BYTES) -> tuple[bytes, DecodedSource]:
    try:
        st = path.lstat()
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        # Writing through a link would replace it with a regular file, and a
        # link may point out of the tree; the user passes the target instead.
        raise FileProblem("is a symbolic link; pass the file it points to")
    if not stat.S_ISREG(st.st_mode):
        raise FileProblem("not a regular file")
    if st.st_size > max_bytes:
        raise FileProblem(f"file too large ({st.st_size} bytes > {max_bytes}; see max-file-size)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FileProblem(f"cannot read: {exc.strerror or exc}") from None
    return data, decode(data)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_ANY_WRITE = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


def _current_bytes(path: Path) -> bytes | None:
    """What the file holds now; None when it is gone or is a link now."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def check_writable(path: Path) -> None:
    """A read-only file is the user's statement that it must not change, and
    so is a read-only folder (a rename in it replaces the file); as root
    ``os.access`` says yes to everything, so look at the mode bits too."""
    try:
        st = path.stat()
        folder = path.parent.stat()
    except OSError as exc:
        raise FileProblem(f"cannot write: {exc.strerror or exc}") from None
    if not st.st_mode & _ANY_WRITE or not os.access(path, os.W_OK):
        raise FileProblem("cannot write: file is read-only")
    if not folder.st_mode & _ANY_WRITE or not os.access(path.parent, os.W_OK):
        raise FileProblem("cannot write: its folder is read-only")


def write_atomic(path: Path, data: bytes, expected: bytes | None = None) -> None:
    """Temp file in the same folder, fsync, then rename over the original, so an
    interrupted run leaves either the old or the new file; the mode is kept.

    ``expected``: the bytes the fix was computed from. When the file no longer
    holds them (an editor saved it while rnnfix ran), it is not overwritten:
    the user's newer text wins and the file is reported."""
    if not path.exists() and not path.is_symlink():
        raise FileProblem("cannot write: the file vanished during the run")
    check_writable(path)
    mode = stat.S_IMODE(path.stat().st_mode)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    except OSError as exc:
        raise FileProblem(f"cannot write: {exc.strerror or exc}") from None
    replaced = False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        # Right before the rename: a file swapped for a link meanwhile keeps
        # the link (the rename would replace it with a regular file).
        if not stat.S_ISREG(os.lstat(path).st_mode):
            raise FileProblem("is no longer a regular file (a link?); not overwritten")
        if expected is not None and _current_bytes(path) != expected:
            raise FileProblem("changed on disk while rnnfix ran; not overwritten")
        os.replace(tmp, path)
        replaced = True
    except OSError as exc:
        raise FileProblem(f"cannot write: {exc.strerror or exc}") from None
    finally:
        # Also on Ctrl-C / SIGTERM between writing and renaming: the target is
        # still the old file, and no temporary file stays behind. (SIGKILL
        # cannot be caught; the next walk over the folder removes the leftover.)
        if not replaced:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def is_plain_file(path: Path) -> bool:
    """A regular file, not a link: what may be read without blocking (a FIFO,
    ``/dev/zero``) and what rnnfix may write."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


# --- discovery -----------------------------------------------------------------


@dataclass
class Problems:
    """What discovery could not do, one line each: ``errors`` fail the run
    (a folder that cannot be read, an ``exclude`` pattern that is not one),
    ``warnings`` do not (a ``.gitignore`` line git itself ignores)."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def discover(
    paths: Sequence[Path],
    exclude: Sequence[str] = (),
    include_tests: bool = False,
    force_exclude: bool = False,
    problems: Problems | None = None,
) -> Iterator[Path]:
    """Files to process. Folders are walked for ``*.py`` and ``*.ipynb``
    without following links, skipping ``SKIP_DIRS``, virtual environments,
    ``exclude`` patterns, what ``.gitignore`` excludes and (unless
    ``include_tests``) test code below the folder: ``tests/``, ``test/``,
    ``test_*.py``, ``*_test.py``, ``conftest.py``. Paths named explicitly are
    processed as given, as ruff and pytest do (even a non-``.py`` or symlinked
    one, which then fails with a reason), unless ``force_exclude``: then
    ``exclude`` and the test-code default apply to them (files and folders)
    too, relative to the current folder (pre-commit names every changed file).
    ``problems`` collects what could not be read or used; the walk goes on."""
    problems = problems if problems is not None else Problems()
    excluded = _spec(exclude, "exclude", problems.errors) if exclude else None
    seen: set[Path] = set()
    for root in paths:
        if root.is_dir() and not root.is_symlink():
            if force_exclude and _forced_out(root, excluded, include_tests, is_dir=True):
                continue
            for p in _walk(root, excluded, include_tests, problems):
                if p not in seen:
                    seen.add(p)
                    yield p
        elif root not in seen:
            seen.add(root)
            if force_exclude and _forced_out(root, excluded, include_tests):
                continue
            yield root


def left_out(
    path: Path, base: Path, exclude: Sequence[str], include_tests: bool, problems: Problems
) -> bool:
    """Whether a file a folder's walk found is left out by a configuration
    of its own below that folder (``exclude`` relative to ``base``, the
    configuration's folder; its test-code default), as ruff applies each
    folder's configuration to the files below it."""
    try:
        rel = PurePath(os.path.relpath(path.absolute(), base))
    except ValueError:  # another drive
        return False
    if not rel.parts or rel.parts[:1] == ("..",):
        return False
    if exclude:
        key = tuple(exclude)
        if key not in _SPECS:  # compiled once, its bad patterns said once
            _SPECS[key] = _spec(exclude, "exclude", problems.errors)
        if _SPECS[key].match_file(rel.as_posix()):
            return True
    return not include_tests and is_test_path(rel, path)


_SPECS: dict[tuple[str, ...], pathspec.GitIgnoreSpec] = {}


def _forced_out(
    path: Path, excluded: pathspec.GitIgnoreSpec | None, include_tests: bool, is_dir: bool = False
) -> bool:
    try:
        rel = PurePath(os.path.relpath(path.absolute(), Path.cwd()))
    except ValueError:  # another drive
        rel = PurePath(path.name)
    if rel.parts[:1] == ("..",):
        rel = PurePath(path.name)  # outside the current folder: only its name counts
    if not rel.parts:
        return False  # the current folder itself
    if excluded is not None and excluded.match_file(rel.as_posix() + ("/" if is_dir else "")):
        return True
    if include_tests:
        return False
    return any(p in TEST_DIRS for p in rel.parts) if is_dir else is_test_path(rel, path)


def _walk(
    root: Path, excluded: pathspec.GitIgnoreSpec | None, include_tests: bool, problems: Problems
) -> Iterator[Path]:
    # Strings, not ``Path`` objects, until a file is yielded: building a
    # ``Path`` per entry was most of what discovering a large tree cost (and
    # of a warm run). ``rel``: the folder's path below ``root``, "/"-joined.
    ignores = _GitIgnores(root, problems.warnings)
    stack: list[tuple[str, str]] = [(os.fspath(root), "")]
    named_like_tests: list[Path] = []  # test-named files, unless the code imports them
    while stack:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=_name)
        except OSError as exc:
            # A virtual environment is skipped unread, also one that can be
            # entered but not listed; any other folder gets one line, and
            # the rest of the tree is still checked.
            if not rel or not os.path.exists(os.path.join(folder, "pyvenv.cfg")):
                problems.errors.append(
                    f"{Path(folder)}: cannot read the folder ({exc.strerror or exc})"
                )
            continue
        # Asked of the folder's own listing, not with a system call each:
        # is it a virtual environment, has it a ``.gitignore``.
        names = {entry.name for entry in entries}
        if rel and "pyvenv.cfg" in names and os.path.exists(os.path.join(folder, "pyvenv.cfg")):
            continue
        if ".gitignore" in names:
            ignores.load(rel)
        subdirs = []
        for entry in entries:
            name = entry.name
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir()
                is_file = not is_dir and entry.is_file()
            except OSError as exc:
                problems.errors.append(f"{Path(entry.path)}: cannot read ({exc.strerror or exc})")
                continue
            entry_rel = f"{rel}/{name}" if rel else name
            if is_dir:
                if name in SKIP_DIRS or name.endswith(".egg-info"):
                    continue
                if not include_tests and name in TEST_DIRS:
                    continue
                if ignores.ignored(entry_rel, is_dir=True):
                    continue
                if excluded is not None and _matches(excluded, root, Path(entry.path), True):
                    continue
                subdirs.append((entry.path, entry_rel))
            elif _TEMP_NAME.match(name) and is_file:
                _remove_leftover(Path(entry.path))
            elif name.endswith(SOURCE_SUFFIXES) and is_file:
                p = Path(entry.path)
                if ignores.ignored(entry_rel, is_dir=False) or _matches(excluded, root, p, False):
                    continue
                if not include_tests and is_test_file(name, p):
                    if name.endswith(".py") and name != "conftest.py":
                        named_like_tests.append(p)
                    continue
                yield p
        stack.extend(reversed(subdirs))
    yield from imported_by_code(named_like_tests, root)


def imported_by_code(candidates: Sequence[Path], root: Path | None = None) -> list[Path]:
    """The test-named files (``batch_test.py``, ``test_utils.py``) that a
    non-test ``.py`` file of their own folder or of the folder above imports
    (``from utility.batch_test import *`` in NGCF's ``main.py``): a module
    the program itself imports is its code, whatever it is called; pytest's
    test modules are imported by nothing but pytest. Only the two folders
    are read (the folder above only inside ``root``, the folder walked, when
    given), so that a tree with test-named files costs a few reads, not a
    scan of every file."""
    if not candidates:
        return []
    found: list[Path] = []
    texts: dict[Path, str] = {}
    for candidate in candidates:
        stem = re.escape(candidate.stem)
        pattern = re.compile(
            rf"^[ \t]*(?:from[ \t]+[\w.]*\b{stem}[ \t]+import"
            rf"|(?:from[ \t]+[\w.]+[ \t]+)?import[ \t][^\n#]*\b{stem}\b)",
            re.MULTILINE,
        )
        folders = [candidate.parent]
        if root is None or (candidate.parent != root and root in candidate.parent.parents):
            folders.append(candidate.parent.parent)
        if any(pattern.search(_text(f, texts)) for f in _code_files(folders)):
            found.append(candidate)
    return found


def _code_files(folders: Sequence[Path]) -> Iterator[Path]:
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.endswith(".py") and not is_test_name(name):
                yield folder / name


def _text(path: Path, texts: dict[Path, str]) -> str:
    if path not in texts:
        texts[path] = read_head(path)
    return texts[path]


# How much of a file is searched for its imports.
_HEAD_BYTES = 64 * 1024


def read_head(path: str | os.PathLike[str]) -> str:
    """The first 64 KiB of a neighbouring file, where its imports are, as
    text; "" for one that is not a regular file (a FIFO would block the
    read), a link (it may lead anywhere) or cannot be read."""
    if os.path.islink(path) or not os.path.isfile(path):
        return ""
    try:
        with open(path, "rb") as handle:
            return handle.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _remove_leftover(p: Path) -> None:
    """A temporary file of a run that was killed between writing it and
    renaming it over its target: the target is intact (old), this is junk."""
    try:
        p.unlink()
    except OSError:
        pass


def _matches(spec: pathspec.GitIgnoreSpec | None, root: Path, p: Path, is_dir: bool) -> bool:
    if spec is None:
        return False
    rel = p.relative_to(root).as_posix() + ("/" if is_dir else "")
    return bool(spec.match_file(rel))


def _spec(
    lines: Sequence[str], where: str, problems: list[str], numbered: bool = False
) -> pathspec.GitIgnoreSpec:
    """``lines`` as one spec; a line that is no valid pattern (``!``, ``\\``:
    git accepts and ignores them) is left out, with a line in ``problems``."""
    # pathspec is imported here: a run on the files it names reads no
    # ``.gitignore`` and has no ``exclude``, and need not pay for it.
    import pathspec

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:
        pass
    good = []
    for number, line in enumerate(lines, start=1):
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except ValueError:
            label = f"{where}:{number}" if numbered else where
            problems.append(f"{label}: {line!r} is not a valid pattern; ignored")
            continue
        good.append(line)
    return pathspec.GitIgnoreSpec.from_lines(good)


class _GitIgnores:
    """``.gitignore`` files of the walked tree and of its ancestors up to the
    repository root, each applied relative to its own folder. Paths are
    strings relative to the walked folder, "/"-joined (what git matches),
    so that asking costs no system call and no ``Path``: the walk never
    follows links, so a path below the folder is the resolved folder joined
    with its relative part (``resolve()`` per file was once most of the time
    of discovering a large tree)."""

    def __init__(self, given: Path, warnings: list[str]) -> None:
        # (the folder's resolved path with a trailing "/", its spec)
        self._specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        self._warnings = warnings
        root = given.resolve()
        ancestors = []
        for parent in root.parents:
            ancestors.append(parent)
            if os.path.exists(parent / ".git"):
                break
        else:
            ancestors = []
        if os.path.exists(root / ".git"):
            ancestors = []
        for folder in reversed(ancestors):
            self._add(folder)
        self._root = root
        self._loaded: set[str] = set()

    def _add(self, folder: Path) -> None:
        f = folder / ".gitignore"
        if os.path.isfile(f):
            try:
                lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                return
            spec = _spec(lines, str(f), self._warnings, numbered=True)
            self._specs.append((_posix(folder).rstrip("/") + "/", spec))

    def load(self, rel: str) -> None:
        """The ``.gitignore`` of the folder at ``rel`` ("" for the walked one),
        if it has one."""
        if rel not in self._loaded:
            self._loaded.add(rel)
            self._add(self._root / rel if rel else self._root)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        if not self._specs:
            return False
        real = f"{_posix(self._root).rstrip('/')}/{rel}"
        suffix = "/" if is_dir else ""
        for base, spec in self._specs:
            if real.startswith(base) and spec.match_file(real[len(base) :] + suffix):
                return True
        return False


def _posix(path: Path) -> str:
    return path.as_posix()
