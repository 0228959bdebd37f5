"""The bot's inputs and its workspace: the action's inputs and the event,
rnnfix and git run in the checkout (through ``run``, safely), the findings
of one ``--check --output-format sarif`` run, the pull request's diff for
``filter-mode``, and the files the bot writes (the SARIF file, the job summary)."""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rnnfix.ci import run
from rnnfix.ci.api import Pace
from rnnfix.ci.findings import DEFAULT_FILTER_MODE, FILTER_MODES, Diff, Report, parse_sarif
from rnnfix.ci.prdiff import added_lines, commentable_lines, split_git_diff


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
    filter_mode: str = DEFAULT_FILTER_MODE
    # findings left fail the step: None (auto) in check mode, and in commit
    # mode when some have no safe fix; never in suggest mode
    fail_on_findings: bool | None = None
    server_url: str = "https://github.com"
    event_name: str = ""
    summary_path: str = ""
    event: dict[str, Any] = field(default_factory=dict)
    workspace: Path = Path()
    failed: bool = False  # rnnfix reported a file it could not check (exit 2)
    annotated: dict[str, int] = field(default_factory=dict)  # the bot's own, by level
    pace: Pace | None = None

    def fails_on_findings(self, mode: str) -> bool:
        """Whether findings left fail the step in ``mode`` (``auto``: check's
        do, suggest's do not, also where commit suggests instead; commit's
        follow rnnfix's exit)."""
        if self.fail_on_findings is not None:
            return self.fail_on_findings
        return mode != "suggest"

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
    filter_mode = env.get("RNNFIX_FILTER_MODE", "").strip() or DEFAULT_FILTER_MODE
    if filter_mode not in FILTER_MODES:
        raise BotError(f"filter-mode must be one of {', '.join(FILTER_MODES)}, not {filter_mode!r}")
    fail = env.get("RNNFIX_FAIL_ON_FINDINGS", "auto").strip().lower()
    if fail not in ("auto", "", "true", "false"):
        raise BotError(f"fail-on-findings must be true, false or auto, not {fail!r}")
    return Inputs(
        mode=mode,
        paths=shlex.split(env.get("RNNFIX_PATHS", ".")) or ["."],
        args=shlex.split(env.get("RNNFIX_ARGS", "")),
        changed_only="pull_request" in event if changed in ("auto", "") else changed == "true",
        sarif_file=env.get("RNNFIX_SARIF_FILE", "rnnfix.sarif"),
        token=env.get("GITHUB_TOKEN", ""),
        repo=env.get("GITHUB_REPOSITORY", ""),
        api_url=env.get("GITHUB_API_URL", "https://api.github.com"),
        filter_mode=filter_mode,
        fail_on_findings=None if fail in ("auto", "") else fail == "true",
        server_url=(env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/"),
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        summary_path=env.get("GITHUB_STEP_SUMMARY", ""),
        event=event,
        workspace=Path(env.get("GITHUB_WORKSPACE") or "."),
    )


def git_out(
    inputs: Inputs, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> str:
    done = run.git(inputs.workspace, args, env)
    if check and done.returncode != 0:
        raise BotError(f"git {args[0]} failed: {git_reason(inputs, done.stderr)}")
    return done.stdout


def git_reason(inputs: Inputs, stderr: str) -> str:
    """The line of git's error output that says why, never a ``hint:``: a
    refused push's ``! [rejected] HEAD -> b (fetch first)`` line (with what
    the server said, ``remote: ...``), else the first ``fatal:`` line (git
    follows it with advice over several lines), else the last line; the
    token masked."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip() and not x.startswith("hint:")]
    if not lines:
        return "no reason given"
    reason = next(
        (x for x in lines if "[rejected]" in x or "[remote rejected]" in x),
        next((x for x in lines if x.startswith("fatal:")), lines[-1]),
    )
    said = [x for x in lines if x.startswith("remote:") and x != "remote:"]
    if said and said[-1] != reason:
        reason += f" ({said[-1]})"
    return reason.replace(inputs.token, "***") if inputs.token else reason


def run_rnnfix(inputs: Inputs, *extra: str) -> tuple[int, str, str]:
    command = ["apply", *extra, *inputs.args]
    if inputs.changed_only:
        command += ["--changed-since", base_commit(inputs)]
    command += ["--", *inputs.paths]
    done = run.rnnfix(inputs.workspace, command)
    if done.returncode == 2:
        # A file rnnfix could not read or parse fails the step in the end, but
        # the fixes of the other files are still suggested or committed.
        inputs.failed = True
        sys.stderr.write(done.stderr)
    elif done.returncode not in (0, 1):
        tail = (done.stderr or "").strip().splitlines()
        raise BotError("rnnfix failed" + (f": {tail[-1]}" if tail else f" ({done.returncode})"))
    return done.returncode, done.stdout, done.stderr


def base_commit(inputs: Inputs) -> str:
    """The commit the pull request's changes start from."""
    pr = inputs.pull
    if pr is None:
        before = inputs.event.get("before")  # a push event
        if isinstance(before, str) and before.strip("0"):
            return before
        raise BotError("changed-only needs a pull_request or push event; set changed-only: false")
    base = str(pr["base"]["sha"])
    merge_base = git_out(inputs, "merge-base", base, "HEAD", check=False).strip()
    if merge_base:
        return merge_base
    if known(inputs, base):
        return base
    raise BotError(
        f"changed-only and filter-mode need the base commit {base[:12]}: use "
        "actions/checkout with fetch-depth: 0 (or changed-only: false, filter-mode: nofilter)"
    )


def known(inputs: Inputs, rev: str) -> bool:
    return run.git(inputs.workspace, ["cat-file", "-e", f"{rev}^{{commit}}"]).returncode == 0


def need_pull(inputs: Inputs) -> dict[str, Any]:
    pr = inputs.pull
    if pr is None:
        raise BotError(f"mode {inputs.mode} runs on pull_request events only; use mode check")
    head = str(pr["head"]["sha"])
    if git_out(inputs, "rev-parse", "HEAD").strip() != head:
        raise BotError(
            f"mode {inputs.mode} needs the pull request's head checked out: "
            "actions/checkout with ref: ${{ github.event.pull_request.head.sha }}"
        )
    return pr


def is_fork(pr: dict[str, Any]) -> bool:
    head_repo = (pr.get("head") or {}).get("repo") or {}
    base_repo = (pr.get("base") or {}).get("repo") or {}
    return bool(head_repo.get("full_name") != base_repo.get("full_name"))


def modified(inputs: Inputs) -> list[str]:
    """Tracked files that differ from ``HEAD`` (relative to the repository root)."""
    out = git_out(inputs, "diff", "--name-only", "-z", "HEAD")
    return [name for name in out.split("\0") if name]


def apply_fixes(inputs: Inputs) -> tuple[tuple[int, str, str], list[str]]:
    """Run ``rnnfix apply`` on the checkout; the files it changed. Files an
    earlier step of the job modified are neither suggested nor committed."""
    before = set(modified(inputs))
    done = run_rnnfix(inputs)
    return done, [n for n in modified(inputs) if n not in before]


def sarif_report(inputs: Inputs) -> tuple[Report, str]:
    """The findings of one ``--check`` run, and its SARIF text."""
    _, out, _ = run_rnnfix(inputs, "--check", "--output-format", "sarif", "--quiet")
    return parse_sarif(out), out


def filter_sets(inputs: Inputs) -> Diff | None:
    """The pull request's (or push's) diff for ``filter-mode``, from git:
    the base to the working tree. None: no base to compare with."""
    if inputs.filter_mode == "nofilter":
        return None
    if inputs.pull is None and not str(inputs.event.get("before") or "").strip("0"):
        return None
    try:
        base = base_commit(inputs)
        text = git_out(
            inputs, "diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", "-U3", base
        )
    except BotError as exc:
        # Showing every finding beats failing a check that used to pass.
        annotate(inputs, "warning", f"filter-mode {inputs.filter_mode} is off: {exc}")
        return None
    return {p: (added_lines(t), set(commentable_lines(t))) for p, t in split_git_diff(text).items()}


def annotate(inputs: Inputs, level: str, text: str) -> None:
    """One annotation of the bot's own (counted: GitHub shows 10 a level a step)."""
    inputs.annotated[level] = inputs.annotated.get(level, 0) + 1
    print(f"::{level} title=rnnfix::{' '.join(text.split())}")


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a new file renamed over it, so a
    link the repository planted there is replaced, never followed."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rnnfix-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_summary(inputs: Inputs, markdown: str) -> bool:
    """Append to the job summary ($GITHUB_STEP_SUMMARY); False: none."""
    if not inputs.summary_path:
        return False
    with open(inputs.summary_path, "a", encoding="utf-8") as f:
        f.write(markdown.rstrip("\n") + "\n")
    return True


def say_filtered(inputs: Inputs, hidden: int) -> None:
    if hidden:
        print(
            f"rnnfix: {hidden} finding(s) not shown: outside what filter-mode "
            f"{inputs.filter_mode} keeps (the SARIF file has them all)"
        )


def read_text(inputs: Inputs, name: str) -> str:
    return (inputs.workspace / name).read_bytes().decode("utf-8", errors="surrogateescape")
