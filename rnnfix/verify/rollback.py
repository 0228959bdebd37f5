"""``rnnfix apply PATH --verify CMD``: keep a fix only if the command proves it.

The apply step has already written the fixed files; this runs ``CMD`` under
the sanitizer and, if it fails or shows a finding, writes every changed file
back to the exact bytes it had before.
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
) -> VerifyResult:
    """Run ``command`` under the sanitizer; on a FAIL verdict restore
    ``changed`` (path -> original bytes) and list the paths in
    ``result.rolled_back``. ``command`` is a shell-like string or word list;
    a first word ending in ``.py`` runs with this Python, as in ``verify``.
    """
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
    restored = [str(path) for path, original in changed.items() if restore_bytes(path, original)]
    return dataclasses.replace(result, rolled_back=tuple(restored))


def restore_bytes(path: Path, data: bytes) -> bool:
    """Atomically make ``path`` hold exactly ``data``, keeping its mode.

    Temp file in the same folder + ``os.replace``: an interrupted rollback
    leaves the file either fixed or original, never half-written. Returns
    False when the file already holds ``data`` (nothing written).
    """
    path = Path(path)
    try:
        if path.read_bytes() == data:
            return False
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".rnnfix")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
