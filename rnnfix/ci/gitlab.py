"""``python -m rnnfix.ci.gitlab``: rnnfix's patch as one merge-request note on
GitLab, kept up to date (found again by a hidden marker, edited in place).
Run by ``templates/rnnfix.gitlab-ci.yml`` when ``RNNFIX_MR_NOTE`` is true;
standard library only, like the GitHub bot.

GitLab's job token (``CI_JOB_TOKEN``) may not write notes (GitLab lists the
few endpoints a job token reaches; merge-request notes are not among them),
so the note needs a project access token with the ``api`` scope and at least
the Reporter role, in a masked CI/CD variable ``RNNFIX_GITLAB_TOKEN``."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

from rnnfix.ci import limits, run
from rnnfix.ci.api import Api, ApiError, Pace

MARKER = "<!-- rnnfix-note -->"
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
MAX_NOTE = 1_000_000  # characters: GitLab's limit for a note


class GitLab(Api):
    name = "GitLab API"
    hints = {
        401: "the token is missing, expired or revoked",
        403: "the token needs the api scope and at least the Reporter role",
        404: "not found, or the token cannot see the project",
    }

    def __init__(self, token: str, api_url: str, pace: Pace | None = None) -> None:
        super().__init__(api_url, {"PRIVATE-TOKEN": token, "User-Agent": "rnnfix-ci"}, pace)


class NoteError(Exception):
    """One line: why the note cannot be posted."""


def main(env: dict[str, str] | None = None, pace: Pace | None = None) -> int:
    env = dict(os.environ if env is None else env)
    try:
        return _note(env, pace)
    except (NoteError, ApiError) as exc:
        print(f"rnnfix: {exc}", file=sys.stderr)
        return 1


def _note(env: dict[str, str], pace: Pace | None) -> int:
    iid = env.get("CI_MERGE_REQUEST_IID", "")
    if not iid:
        print("rnnfix: not a merge-request pipeline: no note to post")
        return 0
    token = env.get("RNNFIX_GITLAB_TOKEN", "")
    if not token:
        raise NoteError(
            "RNNFIX_GITLAB_TOKEN is not set: GitLab's job token cannot write merge-request "
            "notes; give a project access token (api scope, Reporter role) as a masked variable"
        )
    api_url = env.get("CI_API_V4_URL", "https://gitlab.com/api/v4")
    project = env.get("CI_PROJECT_ID", "")
    workspace = Path(env.get("CI_PROJECT_DIR") or ".")
    args = ["apply", "--diff", "--quiet", *shlex.split(env.get("RNNFIX_ARGS", ""))]
    base = env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA", "")
    if base:
        args += ["--changed-since", base]
    args += ["--", *(shlex.split(env.get("RNNFIX_PATHS", ".")) or ["."])]
    done = run.rnnfix(workspace, args)
    if done.returncode not in (0, 1, 2):
        tail = (done.stderr or "").strip().splitlines()
        raise NoteError("rnnfix failed" + (f": {tail[-1]}" if tail else ""))
    sys.stderr.write(done.stderr)
    patch = done.stdout
    gl = GitLab(token, api_url, pace)
    notes_url = f"/projects/{project}/merge_requests/{iid}/notes"
    ours = [n for n in gl.paginate(notes_url) if MARKER in str(n.get("body") or "")]
    body = _body(patch, env.get("CI_COMMIT_SHA", "")[:12])
    if body is None:
        if not ours:
            print("rnnfix: nothing to fix; no note posted")
            return 1 if done.returncode == 2 else 0
        body = f"rnnfix: nothing left to fix as of {env.get('CI_COMMIT_SHA', '')[:12]}.\n\n{MARKER}"
    if ours and ours[-1].get("body") == body:
        print("rnnfix: the note is up to date")
    elif ours:
        gl.request("PUT", f"{notes_url}/{ours[-1]['id']}", {"body": body})
        print("rnnfix: note updated")
    else:
        gl.request("POST", notes_url, {"body": body})
        print("rnnfix: note posted")
    return 1 if done.returncode == 2 else 0


def _body(patch: str, sha: str) -> str | None:
    if not patch.strip():
        return None
    files = _per_file(patch)
    room = MAX_NOTE - 1_000
    cut, partial = limits.cut_patch(files, room)
    note = (
        "\n\nThe patch is cut to fit in a note: run `rnnfix apply --diff` for all of it."
        if partial
        else ""
    )
    at = f" (commit {sha})" if sha else ""
    return (
        f"**rnnfix** proposes these fixes for PyTorch train/eval mode bugs{at}; "
        f"apply them with `git apply`:\n\n```diff\n{cut}```{note}\n\n{MARKER}"
    )


def _per_file(patch: str) -> list[str]:
    """A unified diff split into one diff per file. A hunk's lines are
    counted from its ``@@`` header, so a removed line that reads ``-- x``
    (``--- x`` in the diff) is never taken for the next file's header."""
    out: list[str] = []
    old = new = 0  # lines left in the current hunk
    for line in patch.splitlines(keepends=True):
        if old > 0 or new > 0:
            if line.startswith("-"):
                old -= 1
            elif line.startswith("+"):
                new -= 1
            elif not line.startswith("\\"):
                old, new = old - 1, new - 1
        elif line.startswith("--- ") or not out:
            out.append("")
        else:
            match = _HUNK.match(line)
            if match:
                old = int(match.group(1) if match.group(1) is not None else 1)
                new = int(match.group(2) if match.group(2) is not None else 1)
        out[-1] += line
    return out


if __name__ == "__main__":
    sys.exit(main())
