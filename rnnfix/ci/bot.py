"""The action's entry point: read the inputs (environment variables set by
``action.yml``) and the event, run rnnfix, then check, suggest or commit.

rnnfix itself runs as a subprocess (``python -m rnnfix apply``) with the
user's ``args``, so the bot sees exactly what the command line does, config
included. For ``suggest`` and ``commit`` it fixes the checkout in place and
reads each file's before and after from git (``HEAD`` and the working tree)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rnnfix.ci import suggest
from rnnfix.ci.github import ApiError, GitHub
from rnnfix.ci.prdiff import pr_files

MARKER = "<!-- rnnfix-review"
COMMENT_MARKER = "<!-- rnnfix-suggestion -->"
BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


class BotError(Exception):
    """A one-line reason the step fails (misconfiguration, git failure)."""


@dataclass
class Inputs:
    mode: str
    paths: list[str]
    args: list[str]
    changed_only: bool
    sarif_file: str
    token: str
    repo: str
    api_url: str
    event: dict[str, Any] = field(default_factory=dict)
    workspace: Path = Path()
    failed: bool = False  # rnnfix reported a file it could not check (exit 2)

    @property
    def pull(self) -> dict[str, Any] | None:
        pr = self.event.get("pull_request")
        return pr if isinstance(pr, dict) else None


def read_inputs(env: dict[str, str]) -> Inputs:
    mode = env.get("RNNFIX_MODE", "check").strip() or "check"
    if mode not in ("check", "suggest", "commit"):
        raise BotError(f"unknown mode {mode!r}: use check, suggest or commit")
    event: dict[str, Any] = {}
    if env.get("GITHUB_EVENT_PATH"):
        try:
            event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BotError(f"cannot read the event file: {exc}") from None
    changed = env.get("RNNFIX_CHANGED_ONLY", "auto").strip().lower()
    if changed not in ("auto", "", "true", "false"):
        raise BotError(f"changed-only must be true, false or auto, not {changed!r}")
    return Inputs(
        mode=mode,
        paths=shlex.split(env.get("RNNFIX_PATHS", ".")) or ["."],
        args=shlex.split(env.get("RNNFIX_ARGS", "")),
        changed_only="pull_request" in event if changed in ("auto", "") else changed == "true",
        sarif_file=env.get("RNNFIX_SARIF_FILE", "rnnfix.sarif"),
        token=env.get("GITHUB_TOKEN", ""),
        repo=env.get("GITHUB_REPOSITORY", ""),
        api_url=env.get("GITHUB_API_URL", "https://api.github.com"),
        event=event,
        workspace=Path(env.get("GITHUB_WORKSPACE") or "."),
    )


def main(env: dict[str, str] | None = None) -> int:
    try:
        inputs = read_inputs(dict(os.environ if env is None else env))
        code = {"check": check, "suggest": suggest_mode, "commit": commit}[inputs.mode](inputs)
        return 1 if inputs.failed else code
    except (BotError, ApiError) as exc:
        # One line, as a workflow error annotation; never a traceback.
        line = str(exc).replace("\n", " ")
        print(f"::error title=rnnfix::{line}")
        print(f"rnnfix: {line}", file=sys.stderr)
        return 1


# -- running rnnfix and git -------------------------------------------------


def _git(inputs: Inputs, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", *args], cwd=inputs.workspace, capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise BotError(f"git {args[0]} failed: {reason}")
    return done.stdout


def _rnnfix(inputs: Inputs, *extra: str, capture: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "rnnfix", "apply", *extra, *inputs.args]
    if inputs.changed_only:
        command += ["--changed-since", _base(inputs)]
    command += ["--", *inputs.paths]
    done = subprocess.run(
        command, cwd=inputs.workspace, text=True, capture_output=capture, check=False
    )
    if done.returncode == 2:
        # A file rnnfix could not read or parse fails the step in the end, but
        # the fixes of the other files are still suggested or committed.
        inputs.failed = True
        if capture:
            sys.stderr.write(done.stderr)
    elif done.returncode not in (0, 1):
        tail = (done.stderr or "").strip().splitlines()
        raise BotError("rnnfix failed" + (f": {tail[-1]}" if tail else f" ({done.returncode})"))
    return done


def _base(inputs: Inputs) -> str:
    """The commit the pull request's changes start from."""
    pr = inputs.pull
    if pr is None:
        before = inputs.event.get("before")  # a push event
        if isinstance(before, str) and before.strip("0"):
            return before
        raise BotError("changed-only needs a pull_request or push event; set changed-only: false")
    base = str(pr["base"]["sha"])
    merge_base = _git(inputs, "merge-base", base, "HEAD", check=False).strip()
    if merge_base:
        return merge_base
    if _known(inputs, base):
        return base
    raise BotError(
        f"changed-only needs the base commit {base[:12]}: use actions/checkout with fetch-depth: 0"
    )


def _known(inputs: Inputs, rev: str) -> bool:
    done = subprocess.run(
        ["git", "cat-file", "-e", f"{rev}^{{commit}}"],
        cwd=inputs.workspace,
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _need_pull(inputs: Inputs) -> dict[str, Any]:
    pr = inputs.pull
    if pr is None:
        raise BotError(f"mode {inputs.mode} runs on pull_request events only; use mode check")
    head = str(pr["head"]["sha"])
    if _git(inputs, "rev-parse", "HEAD").strip() != head:
        raise BotError(
            f"mode {inputs.mode} needs the pull request's head checked out: "
            "actions/checkout with ref: ${{ github.event.pull_request.head.sha }}"
        )
    return pr


def _modified(inputs: Inputs) -> list[str]:
    """Tracked files that differ from ``HEAD`` (relative to the repository root)."""
    out = _git(inputs, "diff", "--name-only", "-z", "HEAD")
    return [name for name in out.split("\0") if name]


def _apply_fixes(inputs: Inputs) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run ``rnnfix apply`` on the checkout; the files it changed. Files an
    earlier step of the job modified are neither suggested nor committed."""
    before = set(_modified(inputs))
    done = _rnnfix(inputs, capture=True)
    return done, [n for n in _modified(inputs) if n not in before]


# -- check ------------------------------------------------------------------


def check(inputs: Inputs) -> int:
    """Annotations on stdout (the runner turns them into PR annotations), a
    SARIF file for code scanning; fails when rnnfix finds anything."""
    done = _rnnfix(inputs, "--check", "--output-format", "github")
    sarif = _rnnfix(inputs, "--check", "--output-format", "sarif", "--quiet", capture=True)
    (inputs.workspace / inputs.sarif_file).write_text(sarif.stdout, encoding="utf-8")
    return 1 if done.returncode else 0


# -- suggest ----------------------------------------------------------------


def suggest_mode(inputs: Inputs) -> int:
    pr = _need_pull(inputs)
    findings = _findings(inputs)
    _, names = _apply_fixes(inputs)
    texts = {n: (_git(inputs, "show", f"HEAD:{n}"), _read(inputs, n)) for n in names}
    if names:  # leave the checkout as it was for later steps
        _git(inputs, "checkout", "HEAD", "--", *names)
    gh = GitHub(inputs.token, inputs.repo, inputs.api_url)
    number, head = int(pr["number"]), str(pr["head"]["sha"])
    commentable = pr_files(gh.paginate(f"/pulls/{number}/files"))
    found = [c for n in names for c in suggest.changes(n, *texts[n], commentable.get(n, {}))]
    inline, elsewhere = suggest.split(found, commentable)
    comments = [c.comment(f"{COMMENT_MARKER}\n{_message(c, findings)}") for c in inline]
    body = _body(inline, elsewhere, texts, findings)
    digest = hashlib.sha256(json.dumps([head, body, comments]).encode()).hexdigest()[:16]
    marker = f"{MARKER} {digest} -->"
    earlier = [
        r for r in gh.paginate(f"/pulls/{number}/reviews") if MARKER in str(r.get("body") or "")
    ]
    if earlier and marker in str(earlier[-1].get("body")):
        print("rnnfix: the review is up to date")
        return 0
    if not found:
        if earlier:
            review = earlier[-1]
            _clear(gh, number)
            note = f"rnnfix: nothing left to fix as of {head[:12]}.\n\n{marker}"
            gh.request("PUT", f"/pulls/{number}/reviews/{review['id']}", {"body": note})
            print("rnnfix: nothing to fix; the earlier review now says so")
        else:
            print("rnnfix: nothing to fix; no review posted")
        return 0
    full = f"{body}\n\n{marker}"
    if earlier:
        review = earlier[-1]
        _clear(gh, number)
        gh.request("PUT", f"/pulls/{number}/reviews/{review['id']}", {"body": full})
        for comment in comments:
            gh.request("POST", f"/pulls/{number}/comments", {**comment, "commit_id": head})
        print(f"rnnfix: review updated with {len(comments)} suggestion(s)")
    else:
        payload = {"commit_id": head, "event": "COMMENT", "body": full, "comments": comments}
        gh.request("POST", f"/pulls/{number}/reviews", payload)
        print(f"rnnfix: review posted with {len(comments)} suggestion(s)")
    return 0


def _read(inputs: Inputs, name: str) -> str:
    return (inputs.workspace / name).read_bytes().decode("utf-8", errors="surrogateescape")


def _findings(inputs: Inputs) -> list[dict[str, Any]]:
    done = _rnnfix(inputs, "--check", "--output-format", "json", "--quiet", capture=True)
    try:
        data = json.loads(done.stdout or "{}")
    except ValueError:
        return []
    items = data.get("diagnostics", data) if isinstance(data, dict) else data
    return [d for d in items if isinstance(d, dict)] if isinstance(items, list) else []


def _rel(inputs_path: str) -> str:
    return inputs_path.removeprefix("./")


def _message(change: suggest.Change, findings: list[dict[str, Any]]) -> str:
    lines = [
        f"**{f['code']}** {f['message']}"
        for f in findings
        if _rel(str(f.get("path"))) == change.path
        and f.get("cell") is None
        # the line after too: an inserted statement guards the line it precedes
        and change.start <= int(f.get("line") or 0) <= change.end + 1
    ]
    return "\n".join(dict.fromkeys(lines)) or "rnnfix suggests this fix."


def _body(
    inline: list[suggest.Change],
    elsewhere: list[suggest.Change],
    texts: dict[str, tuple[str, str]],
    findings: list[dict[str, Any]],
) -> str:
    parts = [f"**rnnfix** found {len(findings)} PyTorch train/eval mode problem(s)."]
    if inline:
        parts.append(f"{len(inline)} fix(es) below as suggestions: accept each with one click.")
    if findings:
        parts.append(
            "\n".join(
                f"- `{_rel(str(f['path']))}:{f['line']}` **{f['code']}** {f['message']}"
                for f in findings
            )
        )
    by_path: dict[str, list[suggest.Change]] = {}
    for c in elsewhere:
        by_path.setdefault(c.path, []).append(c)
    if by_path:
        patches = "".join(suggest.patch(p, texts[p][0], cs) for p, cs in by_path.items())
        parts.append(
            "Fixes that touch lines outside this pull request's diff "
            "(apply with `git apply`):\n\n```diff\n" + patches + "```"
        )
    return "\n\n".join(parts)


def _clear(gh: GitHub, number: int) -> None:
    """Delete the suggestions of earlier runs (those of the review and those
    an update posted beside it), before the review is rewritten."""
    for comment in gh.paginate(f"/pulls/{number}/comments"):
        if COMMENT_MARKER in str(comment.get("body") or ""):
            gh.request("DELETE", f"/pulls/comments/{comment['id']}")


# -- commit -----------------------------------------------------------------


def commit(inputs: Inputs) -> int:
    pr = _need_pull(inputs)
    head_repo = (pr.get("head") or {}).get("repo") or {}
    base_repo = (pr.get("base") or {}).get("repo") or {}
    if head_repo.get("full_name") != base_repo.get("full_name"):
        print("rnnfix: pull request from a fork (no write access): suggesting instead")
        return suggest_mode(inputs)
    done, names = _apply_fixes(inputs)
    sys.stdout.write(done.stdout)
    if done.returncode != 2:  # exit 2 already wrote its stderr
        sys.stderr.write(done.stderr)
    if not names:
        print("rnnfix: nothing to fix")
        return done.returncode
    applied = re.search(r"(\d+) fix(?:es)? applied", done.stderr or "")
    count = applied.group(1) if applied else "the"
    message = (
        f"Fix PyTorch train/eval mode bugs (rnnfix)\n\n"
        f"Applied {count} safe fix(es) with `rnnfix apply` in:\n"
        + "".join(f"- {n}\n" for n in names)
    )
    _git(inputs, "add", "--", *names)
    _git(
        inputs,
        "-c",
        f"user.name={BOT_NAME}",
        "-c",
        f"user.email={BOT_EMAIL}",
        "commit",
        "-q",
        "-m",
        message,
    )
    ref = str(pr["head"]["ref"])
    _git(inputs, "push", "origin", f"HEAD:refs/heads/{ref}")
    print(f"rnnfix: pushed a commit fixing {len(names)} file(s) to {ref}")
    return done.returncode
