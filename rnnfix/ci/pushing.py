"""Mode ``commit``'s push: where to (the pull request's branch, or a fork's
head branch when the fork allows edits by maintainers, as autofix.ci does),
with the action's token, and what to do when the branch is no longer the
commit the job checked out: a re-run after the bot pushed finds its own fix
commit there, or the author pushed again. Neither fails the step with git's
``hint:`` text; each is one line saying what happened."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from rnnfix.ci import run
from rnnfix.ci import workspace as ws
from rnnfix.ci.workspace import Inputs

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
SUBJECT = "Fix PyTorch train/eval mode bugs (rnnfix)"


@dataclass(frozen=True)
class Target:
    repo: str  # owner/name
    url: str
    ref: str  # the branch
    fork: bool

    @property
    def name(self) -> str:
        return f"{self.repo}:{self.ref}" if self.fork else self.ref


def target(inputs: Inputs, pr: dict[str, Any]) -> Target | str:
    """Where the fix commit goes, or why it cannot go anywhere. A fork's
    branch takes pushes from the base repository's maintainers when its
    author allowed edits (``maintainer_can_modify``), and only a token the
    base repository's workflow got under ``pull_request_target``; the fork's
    clone URL is used only on the server the token belongs to."""
    head = pr.get("head") or {}
    repo = (head.get("repo") or {}).get("full_name") or inputs.repo
    ref = str(head["ref"])
    if not ws.is_fork(pr):
        return Target(repo, f"{inputs.server_url}/{repo}.git", ref, fork=False)
    if inputs.event_name != "pull_request_target":
        return "pull request from a fork (the token cannot push to it): suggesting instead"
    if not pr.get("maintainer_can_modify"):
        return "the fork does not allow edits by maintainers: suggesting instead"
    clone = str((head.get("repo") or {}).get("clone_url") or "")
    own = clone if clone.startswith(f"{inputs.server_url}/") else ""
    return Target(repo, own or f"{inputs.server_url}/{repo}.git", ref, fork=True)


def push(inputs: Inputs, to: Target, head: str) -> str | None:
    """Push ``HEAD`` (the fix commit on ``head``) to ``to``; None when pushed,
    else the one line that says why not (the branch moved). A refusal for
    another reason raises ``BotError`` with git's reason line."""
    env = auth_env(inputs)
    fetched = run.git(
        inputs.workspace, ["fetch", "-q", "--no-tags", to.url, f"refs/heads/{to.ref}"], env
    )
    if fetched.returncode != 0:
        reason = ws.git_reason(inputs, fetched.stderr)
        raise ws.BotError(f"git fetch of {to.name} (before the push) failed: {reason}")
    now = ws.git_out(inputs, "rev-parse", "FETCH_HEAD").strip()
    if now != head:
        return _moved(inputs, to, head, now)
    done = run.git(inputs.workspace, ["push", to.url, f"HEAD:refs/heads/{to.ref}"], env)
    if done.returncode == 0:
        return None
    if "[rejected]" in done.stderr:  # moved between the fetch and the push
        return (
            f"::warning title=rnnfix::{to.name} moved while this job pushed: not pushing "
            "(the run for the new head fixes it)"
        )
    raise ws.BotError(f"git push failed: {ws.git_reason(inputs, done.stderr)}")


def _moved(inputs: Inputs, to: Target, head: str, now: str) -> str:
    """The branch is at ``now``, not the ``head`` the job checked out."""
    info = ws.git_out(inputs, "log", "-1", "--format=%ae%x00%P%x00%s", now).strip().split("\0")
    email, parents, subject = (info + ["", "", ""])[:3]
    if email == BOT_EMAIL and parents == head and subject == SUBJECT:
        ours = ws.git_out(inputs, "rev-parse", "HEAD^{tree}").strip()
        theirs = ws.git_out(inputs, "rev-parse", f"{now}^{{tree}}").strip()
        what = "nothing to push" if ours == theirs else "not pushing other fixes over it"
        return (
            f"rnnfix: {to.name} already has rnnfix's fix commit {now[:12]} on top of "
            f"{head[:12]} (an earlier run of this job pushed it): {what}"
        )
    return (
        f"::warning title=rnnfix::{to.name} moved to {now[:12]} since this job checked out "
        f"{head[:12]}: not pushing (the run for the new head fixes it)"
    )


def auth_env(inputs: Inputs) -> dict[str, str]:
    """The action's ``token`` as an HTTP header for the server's URLs, given
    to git in its environment (``GIT_CONFIG_*``), never on a command line or
    in the output. The empty value first drops the header actions/checkout
    left in ``.git/config``, so git sends ours only."""
    if not inputs.token:
        return {}
    basic = base64.b64encode(f"x-access-token:{inputs.token}".encode()).decode()
    key = f"http.{inputs.server_url}/.extraheader"
    return {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": key,
        "GIT_CONFIG_VALUE_0": "",
        "GIT_CONFIG_KEY_1": key,
        "GIT_CONFIG_VALUE_1": f"AUTHORIZATION: basic {basic}",
    }
