"""Find the user's file:line on the current stack, past torch's own frames.

Called on every RNN forward that could later produce a record, so it is
written for speed: each code object is classified once and cached.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType, FrameType

from rnnfix.verify.records import Site

#: How many user frames a record keeps (innermost first).
MAX_FRAMES = 6

_VERIFY_DIR = os.path.dirname(os.path.abspath(__file__))
_internal_dirs: tuple[str, ...] = ()
_library_dirs: tuple[str, ...] = ()
# id(code) -> (0 user | 1 third-party library | 2 internal, display name, code).
# Keyed by id: hashing a code object hashes its bytecode and constants, every
# time. The code object is kept in the value so its id cannot be reused.
_kind_cache: dict[int, tuple[int, str, CodeType]] = {}


def _init_dirs() -> None:
    global _internal_dirs, _library_dirs
    internal = [_VERIFY_DIR + os.sep]
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if torch_file:
        internal.append(os.path.dirname(os.path.abspath(torch_file)) + os.sep)
    paths = sysconfig.get_paths()
    library = []
    for key in ("stdlib", "platstdlib"):
        if paths.get(key):
            internal.append(os.path.abspath(paths[key]) + os.sep)
    for key in ("purelib", "platlib"):
        if paths.get(key):
            library.append(os.path.abspath(paths[key]) + os.sep)
    # A venv's site-packages lives under stdlib's prefix only by accident of
    # layout; site-packages must count as library, not internal.
    _internal_dirs = tuple(d for d in internal if d not in library)
    _library_dirs = tuple(library) + ("site-packages", "dist-packages")


def _classify(code: CodeType) -> int:
    filename = code.co_filename
    if filename.startswith("<"):
        return 2  # <frozen runpy>, <string>: not a place a user can edit
    path = os.path.abspath(filename)
    if any(marker in path for marker in _library_dirs):
        return 1
    if path.startswith(_internal_dirs):
        return 2
    return 0


#: (file, line, function) triples: cheap to take on every forward; turned
#: into :class:`Site` objects only when a record is made.
RawFrames = tuple[tuple[str, int, str], ...]


def user_frames(start: FrameType | None = None, limit: int = MAX_FRAMES) -> RawFrames:
    """User frames from ``start`` (default: the caller) outwards, at most ``limit``.

    Third-party library frames (site-packages) are kept only when no frame of
    the user's own code is on the stack, so a model inside ``transformers``
    still gets a location.
    """
    if not _internal_dirs:
        _init_dirs()
    frame: FrameType | None = start if start is not None else sys._getframe(1)
    users: list[tuple[str, int, str]] = []
    libraries: list[tuple[str, int, str]] = []
    cache = _kind_cache
    while frame is not None:
        code = frame.f_code
        known = cache.get(id(code))
        if known is None:
            known = cache[id(code)] = (_classify(code), _display(code.co_filename), code)
        kind, name, _ = known
        if kind == 0:
            users.append((name, frame.f_lineno, code.co_name))
            if len(users) >= limit:
                break
        elif kind == 1 and not users and len(libraries) < limit:
            libraries.append((name, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return tuple(users or libraries)


def frame_kind(code: CodeType) -> int:
    """0 user code, 1 a third-party library (site-packages), 2 internal
    (torch, the standard library, rnnfix, generated code)."""
    if not _internal_dirs:
        _init_dirs()
    known = _kind_cache.get(id(code))
    if known is None:
        known = _kind_cache[id(code)] = (_classify(code), _display(code.co_filename), code)
    return known[0]


def display_name(filename: str) -> str:
    return _display(filename)


def to_sites(frames: RawFrames) -> tuple[Site, ...]:
    return tuple(Site(file, line, function) for file, line, function in frames)


def user_sites(start: FrameType | None = None) -> tuple[Site, ...]:
    """:func:`user_frames` as :class:`Site` objects."""
    return to_sites(user_frames(start if start is not None else sys._getframe(1)))


def _display(filename: str) -> str:
    """Relative to the working directory when inside it: short, clickable."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel


# id(code) -> (0 plain | 1 takes ``self`` first | 2 recalibrator, code).
_self_cache: dict[int, tuple[int, CodeType]] = {}

#: Functions of torch that run BatchNorm in train mode under no_grad on
#: purpose, to recompute its running statistics: (file name, function).
_RECALIBRATORS = frozenset({("swa_utils.py", "update_bn")})


def modules_on_stack(start: FrameType | None, module_type: type) -> tuple[list[object], bool]:
    """Instances of ``module_type`` whose methods are running, innermost first
    (each once), and whether a torch function that recomputes BatchNorm
    statistics on purpose (``swa_utils.update_bn``) is on the stack.

    Reads ``self`` of frames whose code takes ``self`` first (``f_locals``):
    call it only when something is about to be recorded.
    """
    frame = start
    found: list[object] = []
    recalibrating = False
    cache = _self_cache
    while frame is not None:
        code = frame.f_code
        known = cache.get(id(code))
        if known is None:
            if (os.path.basename(code.co_filename), code.co_name) in _RECALIBRATORS:
                kind = 2
            else:
                kind = int(code.co_argcount > 0 and code.co_varnames[0] == "self")
            known = cache[id(code)] = (kind, code)
        if known[0] == 2:
            recalibrating = True
        elif known[0] == 1:
            owner = frame.f_locals.get("self")
            if isinstance(owner, module_type) and all(owner is not m for m in found):
                found.append(owner)
        frame = frame.f_back
    return found, recalibrating
