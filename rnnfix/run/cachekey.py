"""The secret that signs the result cache: 32 random bytes of this user's own,
kept outside every repository (``$XDG_CACHE_HOME/rnnfix/key``, else
``~/.cache/rnnfix/key``), readable by this user only.

A repository's ``.rnnfix_cache/`` is data a stranger may have written: its
entries count only when signed with this key (``rnnfix.run.cache``), so a
planted entry cannot hide a finding or make ``apply`` write anything.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

KEY_BYTES = 32
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class KeyUnavailable(Exception):
    """A one-line reason the cache key cannot be read or made."""


def key_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "")
    # The XDG spec: a relative value is invalid and ignored.
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "rnnfix"


def user_key() -> bytes:
    """This user's cache key, made on first use: written to a temporary file
    created 0600, then hard-linked into place, so two runs that start at once
    agree on one key and no run ever reads a half-written one."""
    folder = key_folder()
    path = folder / "key"
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise KeyUnavailable(f"{path}: cannot read the cache key ({exc.strerror})") from None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = folder / f".key-{secrets.token_hex(8)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(secrets.token_bytes(KEY_BYTES))
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another run made it first: use that one
        finally:
            tmp.unlink(missing_ok=True)
        return _read(path)
    except OSError as exc:
        raise KeyUnavailable(f"{path}: cannot make the cache key ({exc.strerror})") from None


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KeyUnavailable(f"{path}: the cache key is not a regular file")
        if hasattr(os, "geteuid") and (st.st_uid != os.geteuid() or st.st_mode & 0o077):
            # Another user could read (and so forge with) or have written it.
            raise KeyUnavailable(f"{path}: the cache key is not private to this user")
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != KEY_BYTES:
        raise KeyUnavailable(f"{path}: the cache key has the wrong size")
    return data
