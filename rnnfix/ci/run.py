"""Starting rnnfix and git in a repository the bot does not trust.

The workspace is a pull request's checkout: under ``pull_request_target`` it
is a fork's code next to a write token. Nothing it ships may run:

- rnnfix starts with the workspace off the import path. ``python -m`` puts
  the current folder first on ``sys.path``, so a planted ``json.py`` would be
  imported; ``-P`` (3.11+) and ``PYTHONSAFEPATH=1`` drop it, and on 3.10 a
  ``-c`` start removes it by hand.
- git runs with the settings that make git run commands neutralised, as
  pre-commit does: no fsmonitor hook, no hooks folder, no external diff or
  textconv driver, no pager, no ``ext::`` transport. ``.git/config`` is the
  checkout's, but an earlier step of the job may have written to it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

# ``-c`` settings on every git call (those git reads from the repository's
# config or attributes and that run a program).
GIT_SAFE = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "protocol.ext.allow=never",
)
# ``-c`` cannot reach these: ``git diff`` and ``git show`` take flags instead.
DIFF_SAFE = ("--no-ext-diff", "--no-textconv")

# Python 3.10 has no -P: start from -c (whose sys.path[0] is the current
# folder, '') and drop that entry before anything is imported from it.
_SAFE_START = (
    "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
    "import runpy; runpy.run_module('rnnfix', run_name='__main__', alter_sys=True)"
)


def python_command() -> list[str]:
    """How to start ``python -m rnnfix`` with the current folder off the path."""
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", "rnnfix"]
    return [sys.executable, "-c", _SAFE_START]  # pragma: no cover - 3.10 only


def safe_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: ``PYTHONSAFEPATH=1`` (so a Python that rnnfix
    starts keeps the workspace off its path too) and no pager."""
    env = dict(os.environ)
    env["PYTHONSAFEPATH"] = "1"
    env["GIT_PAGER"] = "cat"
    env.pop("GIT_EXTERNAL_DIFF", None)
    if extra:
        env.update(extra)
    return env


def git_command(args: Sequence[str]) -> list[str]:
    args = list(args)
    if args and args[0] in ("diff", "show", "log"):
        args[1:1] = DIFF_SAFE
    return ["git", *GIT_SAFE, *args]


def git(
    cwd: Path, args: Sequence[str], env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` in ``cwd``, hardened; ``env``: extra variables (a token's
    config, never on the command line where other processes can read it)."""
    return subprocess.run(
        git_command(args),
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env=safe_env(env),
    )


def rnnfix(
    cwd: Path, args: Sequence[str], capture: bool = True
) -> subprocess.CompletedProcess[str]:
    """``rnnfix ARGS`` in ``cwd`` (the workspace, for its config), safely."""
    return subprocess.run(
        [*python_command(), *args],
        cwd=cwd,
        text=True,
        capture_output=capture,
        check=False,
        env=safe_env(),
    )
