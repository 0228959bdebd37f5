"""Which files changed since a git revision (``rnnfix apply --changed-since REF``).

Changed means: differs between REF and the working tree (commits since REF,
staged and unstaged edits; a renamed file under its new name) or is untracked
and not ignored. Deleted files are not listed: there is nothing to check."""

from __future__ import annotations

import subprocess
from pathlib import Path


class GitError(Exception):
    """A one-line reason the changed files cannot be known."""


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise GitError("--changed-since needs git, which is not on PATH") from None


def changed_files(ref: str, where: Path) -> set[Path]:
    """Absolute, resolved paths of the files changed since ``ref`` in the git
    repository holding ``where`` (a file or folder)."""
    cwd = where if where.is_dir() else where.parent
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise GitError(f"--changed-since: {cwd} is not inside a git repository")
    root = Path(top.stdout.decode().strip())
    # ``--end-of-options`` keeps a REF starting with '-' from reading as an option.
    known = _git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], root
    )
    if known.returncode != 0:
        raise GitError(f"--changed-since: unknown revision {ref!r}")
    commit = known.stdout.decode().strip()
    diff = _git(
        ["diff", "--name-only", "-z", "-M", "--diff-filter=d", commit, "--"],
        root,
    )
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root)
    for done in (diff, untracked):
        if done.returncode != 0:
            reason = done.stderr.decode(errors="replace").strip().splitlines()
            raise GitError(f"--changed-since: git failed: {reason[0] if reason else 'no reason'}")
    names = [*diff.stdout.split(b"\0"), *untracked.stdout.split(b"\0")]
    return {(root / n.decode(errors="surrogateescape")).resolve() for n in names if n}
