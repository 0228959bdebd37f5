"""``rnnfix apply PATH --verify CMD``: keep a fix only if the command proves it.

The apply step has already written the fixed files; this runs ``CMD`` under
the sanitizer and, if it fails or shows a finding, writes every changed file
back to the exact bytes it had before, unless it was edited since rnnfix
wrote it (that edit is kept and the file reported).
"""

from __future__ import annotations

import dataclasses
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from rnnfix.verify.result import VerifyResult
from rnnfix.verify.runner import command_from_words, run_verify, split_command


class EditedSinceWritten(Exception):
    """The file no longer holds the bytes rnnfix wrote: someone saved it
    while the command ran. Rolling back would lose that edit."""


def verify_and_rollback(
    changed: Mapping[Path, bytes],
    command: str | Sequence[str],
    timeout: float | None = 600.0,
    *,
    mode: str = "raise",
    until_clean_cycle: bool = False,
    strict: bool = False,
    cwd: Path | str | None = None,
    capture: bool = False,
    written: Mapping[Path, bytes | None] | None = None,
) -> VerifyResult:
    """Run ``command`` under the sanitizer; on a FAIL verdict restore
    ``changed`` (path -> original bytes) and list the paths in
    ``result.rolled_back``. ``command`` is a shell-like string or word list;
    a first word ending in ``.py`` runs with this Python, as in ``verify``.

    Only a file that still holds what rnnfix wrote is rolled back
    (``written``: path -> those bytes; by default what the files hold when
    this is called): one edited while the command ran keeps the edit and is
    listed in ``result.not_rolled_back``.
    """
    if written is None:
        written = {path: _current(path) for path in changed}
    argv = command_from_words(split_command(command))
    result = run_verify(
        argv,
        timeout=timeout,
        mode=mode,
        until_clean_cycle=until_clean_cycle,
        strict=strict,
        cwd=cwd,
        capture=capture,
    )
    if result.ok:
        return result
    restored, edited = [], []
    for path, original in changed.items():
        try:
            if restore_bytes(path, original, written=written.get(path)):
                restored.append(str(path))
        except EditedSinceWritten:
            edited.append(str(path))
    return dataclasses.replace(result, rolled_back=tuple(restored), not_rolled_back=tuple(edited))


def _current(path: Path) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def restore_bytes(path: Path, data: bytes, written: bytes | None = None) -> bool:
    """Atomically make ``path`` hold exactly ``data``, keeping its mode.

    Temp file in the same folder + ``os.replace``: an interrupted rollback
    leaves the file either fixed or original, never half-written. Returns
    False when the file already holds ``data`` (nothing written).
    ``written``: the bytes rnnfix wrote; when the file holds anything else
    (checked again right before the rename), ``EditedSinceWritten``.
    """
    path = Path(path)
    try:
        current = path.read_bytes()
        if current == data:
            return False
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        current, mode = None, None
    if written is not None and current != written:
        raise EditedSinceWritten(str(path))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".rnnfix")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if written is not None and _current(path) != written:
            raise EditedSinceWritten(str(path))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
