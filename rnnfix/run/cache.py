"""The result cache: a second run over an unchanged tree answers without
parsing anything, as ruff's cache does.

Where: ``.rnnfix_cache/`` at the project root (the folder of the nearest
``pyproject.toml``, ``setup.py`` or ``.git`` above the paths given, never
above the repository root nor one another user owns; else the paths' common
folder), with a ``.gitignore`` of its own so it never shows up in
``git status``. One JSON file per (rnnfix code, settings) pair holds an entry
per file of the run.

An entry is used only when all of these are what they were when it was made:

- the file's bytes (a BLAKE2 digest);
- rnnfix's version *and* its own code (the bytes of every one of its
  modules, so an editable install that changed gives fresh results, even
  when an edit kept a module's size and mtime);
- the settings (they name the cache file);
- the set of files of the run (a file added to the run can change what an
  import resolves to);
- the files outside the run that its files import (``rnnfix apply train.py``
  reads ``utils.py``; ``rnnfix.analysis.project.imported``): a module that appears
  or goes away changes what an import resolves to;
- the bytes of every other file the result consulted through the project
  index (``FileResult.consulted``), in the run or imported from outside it
  (``FileDigests`` reads those), so a helper that changed in another file
  invalidates its callers.

- the Python that runs rnnfix (what parses, and what counts as newer
  syntax, depends on its version).

The cache is an optimisation, never a source of truth: a corrupt, unreadable
or unwritable cache is ignored with a warning and the run goes on. It stores
JSON, never pickles (a repository's cache folder must not be able to run code
when rnnfix loads it), and only what the analysis found, never output text.
A run that writes or shows a diff analyses a file with a fix again, from
its source (its output then checked to parse, as every fix's is); a
``--check`` is answered from the findings. So the common warm runs
(pre-commit, CI: ``--check``, or a tree with nothing to fix) stay as fast
as before, and the text rnnfix writes never comes from a cache entry.
Entries count only when the file is signed with this user's
key (``rnnfix.run.cachekey``; see ``ResultCache``): a repository that ships a
``.rnnfix_cache/`` cannot make rnnfix replay a result it did not compute.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from rnnfix._version import __version__
from rnnfix.analysis.context import DroppedFix, Finding, Fix
from rnnfix.config.discovery import at_repository_root, owned_by_another_user
from rnnfix.config.settings import Settings
from rnnfix.run.cachekey import KeyUnavailable, user_key

CACHE_DIR = ".rnnfix_cache"
_FORMAT = 2
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FD = {os.open, os.replace, os.unlink} <= os.supports_dir_fd
_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def digest(data: bytes) -> str:
    # SHA-256 runs in hardware on current CPUs: twice blake2b's speed here,
    # and hashing every file is most of what a warm run does.
    return hashlib.sha256(data).hexdigest()[:32]


def cache_root(paths: Sequence[Path]) -> Path:
    """Where ``.rnnfix_cache/`` goes: the nearest folder at or above the
    common folder of ``paths`` that holds a project marker; without one, that
    common folder itself (a tree outside any project keeps its cache beside
    it rather than in whatever folder the command ran from)."""
    if not paths:
        return Path.cwd()
    common = Path(_common_folder(paths))
    start = common if common.is_dir() else common.parent
    for folder in (start, *start.parents):
        # A marker another user owns (a pyproject.toml in a shared /tmp)
        # does not make its folder the project's; nor does a search go on
        # above the repository root.
        if any(_own(folder / marker) for marker in _ROOT_MARKERS):
            return folder
        if at_repository_root(folder):
            break
    return start


def _own(marker: Path) -> bool:
    return marker.exists() and owned_by_another_user(marker) is None


_PACKAGE = Path(__file__).resolve().parent.parent  # rnnfix/
_code: str | None = None


def _common_folder(paths: Sequence[Path]) -> str:
    """``os.path.commonpath`` of the absolute paths, by one string prefix
    test per path (commonpath splits every path: a tenth of a warm run's
    time on a large tree)."""
    cwd = os.getcwd()
    absolute = [os.path.normpath(os.path.join(cwd, p)) for p in map(os.fspath, paths)]
    common = absolute[0]
    for p in absolute[1:]:
        while not (p == common or p.startswith(common.rstrip(os.sep) + os.sep)):
            parent = os.path.dirname(common)
            if parent == common:
                return os.path.commonpath(absolute)  # no common root (another drive)
            common = parent
    return common


def _code_fingerprint() -> str:
    """rnnfix's version and the bytes of every one of its own modules (and
    libcst's version file: whether a fix applies depends on its parser).

    Bytes, not sizes and mtimes: an edit that keeps a module's size within
    the file system's timestamp granularity (or a checkout that restores
    mtimes) must not replay results of the code before it. Reading and
    hashing rnnfix's 1.5 MB of source costs a few milliseconds; once per
    process."""
    global _code
    if _code is None:
        h = hashlib.sha256()
        for module in _modules(_PACKAGE):
            try:
                data = module.read_bytes()
            except OSError:
                data = b"\0unreadable"
            h.update(f"{module.relative_to(_PACKAGE).as_posix()}\0{len(data)}\0".encode())
            h.update(data)
        h.update(b"libcst\0" + _libcst_version())
        _code = h.hexdigest()[:32]
    return f"{__version__}:{_FORMAT}:{_code}"


def _modules(package: Path) -> list[Path]:
    """Every ``.py`` file below ``package`` (``__pycache__`` left out), sorted."""
    found: list[Path] = []
    stack = [package]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py") and entry.is_file():
                found.append(Path(entry.path))
            elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return sorted(found)


def _libcst_version() -> bytes:
    """libcst's ``_version.py``, found without importing libcst (that costs
    a tenth of a second, and a warm run never needs it)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("libcst")
    except (ImportError, ValueError):
        return b"absent"
    if spec is None or not spec.submodule_search_locations:
        return b"absent"
    for folder in spec.submodule_search_locations:
        try:
            return (Path(folder) / "_version.py").read_bytes()
        except OSError:
            continue
    return b"unknown"


def run_fingerprint(keys: Iterable[str]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for key in sorted(keys):
        h.update(key.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


_UNKNOWN: Any = object()


class FileDigests(Mapping[str, str]):
    """Digests of the run's files, and of any other file asked for, read on
    first use: a result may consult a file outside the run (an import
    ``rnnfix.analysis.project.imported`` found), whose bytes key it too. A file that
    cannot be read has no digest (a lookup that needs it misses, and a
    result that consulted it is not stored)."""

    def __init__(self, known: Mapping[str, str], max_bytes: int) -> None:
        self._known: dict[str, str | None] = dict(known)
        self._max_bytes = max_bytes

    def __getitem__(self, key: str) -> str:
        if key not in self._known:
            path = Path(key)
            try:
                # Never a file larger than the run would read (``max-file-size``).
                small = path.stat().st_size <= self._max_bytes
                self._known[key] = digest(path.read_bytes()) if small else None
            except OSError:
                self._known[key] = None
        value = self._known[key]
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        # Mapping.get goes through __getitem__ and an exception per miss:
        # a warm run asks once per file each result consulted.
        known = self._known.get(key, _UNKNOWN)
        if known is _UNKNOWN:
            try:
                return self[key]
            except KeyError:
                return default
        return default if known is None else known

    def __iter__(self) -> Iterator[str]:
        return (k for k, v in self._known.items() if v is not None)

    def __len__(self) -> int:
        return sum(v is not None for v in self._known.values())


class ResultCache:
    """Entries by absolute path. ``warnings`` collects one-line reasons the
    cache was not used or not saved; the CLI prints them.

    The file is ``<signature>\n<JSON>``: an HMAC-SHA256 of the JSON (and of
    the file's name) under this user's key (``rnnfix.run.cachekey``). A file
    whose signature does not match, one written by another scheme or another
    user, or one planted in a repository, is ignored; so is the whole cache
    when the folder is a symbolic link. Nothing in the folder is followed:
    every file in it is opened relative to the folder's own descriptor with
    ``O_NOFOLLOW``, and created with ``O_EXCL``."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.folder = root / CACHE_DIR
        name = hashlib.blake2b(
            f"{_code_fingerprint()}:{_python()}:{settings!r}".encode(), digest_size=12
        ).hexdigest()
        self.file = self.folder / f"{name}.json"
        self.warnings: list[str] = []
        self._entries: dict[str, dict[str, Any]] = {}
        self._dirty = False
        self._key: bytes | None = None
        try:
            self._key = user_key()
        except KeyUnavailable as exc:
            self.warnings.append(f"{exc}; the cache is not used")
            return
        self._load()

    def _sign(self, payload: bytes) -> str:
        assert self._key is not None
        return hmac.new(self._key, self.file.name.encode() + b"\0" + payload, "sha256").hexdigest()

    def _folder_fd(self, create: bool) -> _Folder | None:
        """The cache folder, open never through a link; None when it does not
        exist (and ``create`` is false) or is refused."""
        try:
            st = os.lstat(self.folder)
        except FileNotFoundError:
            if not create:
                return None
            os.mkdir(self.folder)
            st = os.lstat(self.folder)
        if stat.S_ISLNK(st.st_mode):
            self._refuse(f"{self.folder}: is a symbolic link; the cache is not used")
            return None
        return _Folder(self.folder)

    def _refuse(self, reason: str) -> None:
        self.warnings.append(reason)
        self._key = None  # neither read nor written from here on
        self._entries = {}

    def _load(self) -> None:
        try:
            folder = self._folder_fd(create=False)
            if folder is None:
                return
            try:
                fd = folder.open(self.file.name, os.O_RDONLY | _NOFOLLOW)
            finally:
                folder.close()
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise OSError(0, "not a regular file")
                raw = fh.read()
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self._refuse(f"{self.file}: is a symbolic link; the cache is not used")
                return
            reason = exc.strerror or type(exc).__name__
            self.warnings.append(f"{self.file}: cannot read the cache ({reason}); ignored")
            return
        try:
            signature, _, payload = raw.partition(b"\n")
            if not hmac.compare_digest(signature, self._sign(payload).encode()):
                raise ValueError("not signed with this user's key")
            data = json.loads(payload)
            if not isinstance(data, dict) or data.get("format") != _FORMAT:
                raise ValueError("unknown format")
            entries = data["entries"]
            if not isinstance(entries, dict):
                raise ValueError("entries is not a table")
        except (ValueError, KeyError, UnicodeDecodeError, RecursionError) as exc:
            self.warnings.append(f"{self.file}: corrupt cache ({exc}); ignored")
            return
        self._entries = entries

    def lookup(
        self, key: str, file_digest: str, run: str, digests: Mapping[str, str]
    ) -> dict[str, Any] | None:
        """The stored result of ``key`` (an absolute path) if every input it
        depended on is unchanged; ``digests``: the files of this run."""
        entry = self._entries.get(key)
        if not isinstance(entry, dict):
            return None
        if entry.get("digest") != file_digest or entry.get("run") != run:
            return None
        consulted = entry.get("consulted")
        if not isinstance(consulted, dict):
            return None
        for other, other_digest in consulted.items():
            if digests.get(other) != other_digest:
                return None
        result = entry.get("result")
        return result if isinstance(result, dict) else None

    def store(
        self,
        key: str,
        file_digest: str,
        run: str,
        digests: Mapping[str, str],
        result: dict[str, Any],
        consulted: Iterable[str],
    ) -> None:
        if self._key is None:
            return
        deps = {other: digests[other] for other in consulted if other in digests}
        if len(deps) != len(set(consulted)):
            return  # it looked at a file outside the run: nothing to key it on
        self._entries[key] = {
            "digest": file_digest,
            "run": run,
            "consulted": deps,
            "result": result,
        }
        self._dirty = True

    def save(self) -> None:
        """Write the cache atomically; drop entries of files that are gone."""
        if not self._dirty or self._key is None:
            return
        entries = {k: v for k, v in self._entries.items() if os.path.exists(k)}
        payload = json.dumps({"format": _FORMAT, "entries": entries}, separators=(",", ":"))
        body = payload.encode("utf-8", "surrogateescape")
        signed = self._sign(body).encode() + b"\n" + body
        try:
            folder = self._folder_fd(create=True)
            if folder is None:
                return
            try:
                _write_in(folder, signed, self.file.name)
            finally:
                folder.close()
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            self.warnings.append(f"{self.folder}: cannot write the cache ({reason}); ignored")


class _Folder:
    """A folder whose files are opened relative to its own descriptor, so a
    link swapped in for the folder is never followed; where the OS has no
    ``dir_fd`` (Windows), by path (the folder was checked not to be a link)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW) if _DIR_FD else None

    def _at(self, name: str) -> tuple[str, dict[str, int]]:
        if self.fd is None:
            return str(self.path / name), {}
        return name, {"dir_fd": self.fd}

    def open(self, name: str, flags: int, mode: int = 0o777) -> int:
        where, at = self._at(name)
        return os.open(where, flags, mode, **at)

    def replace(self, src: str, dst: str) -> None:
        if self.fd is None:
            os.replace(self.path / src, self.path / dst)
        else:
            os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        where, at = self._at(name)
        os.unlink(where, **at)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)


def _write_in(folder: _Folder, data: bytes, name: str) -> None:
    """``data`` into ``name`` of the folder open as ``folder``, atomically;
    a ``.gitignore`` beside it unless one is there. ``O_EXCL`` never opens
    an existing name, a dangling link included."""
    create = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    try:
        fd = folder.open(".gitignore", create, 0o644)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("# Automatically created by rnnfix.\n*\n")
    tmp = f".tmp-{secrets.token_hex(8)}.json"
    fd = folder.open(tmp, create, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        folder.replace(tmp, name)
    except BaseException:
        with contextlib.suppress(OSError):
            folder.unlink(tmp)
        raise


def _python() -> str:
    """The interpreter keys the cache too: what parses (and what counts as
    newer syntax) depends on its version."""
    return f"{sys.implementation.name}-{sys.version}"


# -- (de)serialising results -------------------------------------------------

_FINDING_FIELDS = tuple(f.name for f in dataclasses.fields(Finding) if f.name != "fix")


def finding_to_json(f: Finding) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(f, name) for name in _FINDING_FIELDS}
    if f.fix is not None:
        out["fix"] = {"safe": f.fix.safe, "description": f.fix.description}
    return out


def finding_from_json(data: Mapping[str, Any]) -> Finding:
    fix_data = data.get("fix")
    fix = (
        None
        if fix_data is None
        else Fix(edits=(), safe=bool(fix_data["safe"]), description=str(fix_data["description"]))
    )
    fields = {name: data[name] for name in _FINDING_FIELDS if name in data}
    return Finding(fix=fix, **fields)


def dropped_to_json(d: DroppedFix) -> dict[str, Any]:
    return {"finding": finding_to_json(d.finding), "reason": d.reason}


def dropped_from_json(data: Mapping[str, Any]) -> DroppedFix:
    return DroppedFix(finding=finding_from_json(data["finding"]), reason=str(data["reason"]))
