"""Which files changed since a git revision (``rnnfix apply --changed-since REF``).

Changed means: differs between REF and the working tree (commits since REF,
staged and unstaged edits; a renamed file under its new name) or is untracked
and not ignored. Deleted files are not listed: there is nothing to check."""

from __future__ import annotations

import subprocess
from pathlib import Path


class GitError(Exception):
    """A one-line reason the changed files cannot be known."""


# A repository's own ``.git/config`` may name commands that git runs for the
# commands below (a tarball or a shared folder ships one). None of them may
# run: the file-system monitor (``core.fsmonitor``, run by ``diff`` and
# ``ls-files``), hooks (none of these commands runs one; kept off in case a
# later git does), external diff and text conversion drivers
# (``--no-ext-diff``, ``--no-textconv``), a pager, and the ``clean`` and
# ``process`` commands of filter drivers, which ``diff`` runs to hash a
# modified file (``filter_options`` finds their names; an empty command is
# no filter). The same approach as pre-commit's ``git -c``.
_SAFE = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.pager=cat",
)  # fmt: skip


def _git(
    args: list[str], cwd: Path, extra: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", "--no-pager", *_SAFE, *extra, *args],
            cwd=cwd,
            capture_output=True,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise GitError("--changed-since needs git, which is not on PATH") from None


def filter_options(root: Path) -> tuple[str, ...]:
    """``-c`` options that turn off every filter driver the repository's
    configuration defines (reading configuration runs nothing)."""
    listed = _git(["config", "--null", "--name-only", "--get-regexp", r"^filter\."], root)
    drivers = set()
    for name in listed.stdout.split(b"\0"):
        driver, _, _ = name.decode(errors="surrogateescape")[len("filter.") :].rpartition(".")
        if driver:
            drivers.add(driver)
    out: list[str] = []
    for driver in sorted(drivers):
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            out += ["-c", f"filter.{driver}.{key}={value}"]
    return tuple(out)


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
    filters = filter_options(root)
    diff = _git(
        ["diff", "--no-ext-diff", "--no-textconv", "--name-only", "-z", "-M", "--diff-filter=d"]
        + [commit, "--"],
        root,
        filters,
    )
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root, filters)
    for done in (diff, untracked):
        if done.returncode != 0:
            reason = done.stderr.decode(errors="replace").strip().splitlines()
            raise GitError(f"--changed-since: git failed: {reason[0] if reason else 'no reason'}")
    names = [*diff.stdout.split(b"\0"), *untracked.stdout.split(b"\0")]
    return {(root / n.decode(errors="surrogateescape")).resolve() for n in names if n}
