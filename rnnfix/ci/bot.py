"""The action's entry point: read the inputs (environment variables set by
``action.yml``) and the event, run rnnfix, then check, suggest or commit.

rnnfix itself runs as a subprocess (``run.rnnfix``: the workspace off the
import path) with the user's ``args``, so the bot sees exactly what the
command line does, config included. Findings come from one ``--check
--output-format sarif`` run (each with the lines its own fix changes); for
``suggest`` and ``commit`` the bot then fixes the checkout in place and reads
each file's before and after from git (``HEAD`` and the working tree)."""

from __future__ import annotations

import os
import re
import sys

from rnnfix.ci import pushing
from rnnfix.ci import workspace as ws
from rnnfix.ci.annotating import write_annotations
from rnnfix.ci.findings import keep, place
from rnnfix.ci.github import ApiError, Pace
from rnnfix.ci.suggesting import suggest_mode
from rnnfix.ci.workspace import BotError, Inputs

__all__ = ["BotError", "Inputs", "main"]


def main(env: dict[str, str] | None = None, pace: Pace | None = None) -> int:
    """``pace``: the API client's clock (tests pass one that waits nothing)."""
    try:
        inputs = ws.read_inputs(dict(os.environ if env is None else env))
        inputs.pace = pace
        code = {"check": check, "suggest": suggest_mode, "commit": commit}[inputs.mode](inputs)
        return 1 if inputs.failed else code
    except (BotError, ApiError) as exc:
        # One line, as a workflow error annotation; never a traceback.
        line = str(exc).replace("\n", " ")
        print(f"::error title=rnnfix::{line}")
        print(f"rnnfix: {line}", file=sys.stderr)
        return 1


def check(inputs: Inputs) -> int:
    """Annotations on stdout (the runner turns them into PR annotations) and a
    SARIF file for code scanning, from one rnnfix run; fails when findings
    remain on the lines ``filter-mode`` keeps (unless ``fail-on-findings``
    is false)."""
    report, sarif = ws.sarif_report(inputs)
    ws.write_private(inputs.workspace / inputs.sarif_file, sarif)
    diff = ws.filter_sets(inputs)
    shown = place(keep(report.findings, inputs.filter_mode, diff), diff)
    write_annotations(inputs, report, shown)
    ws.say_filtered(inputs, len(report.findings) - len(shown))
    return 1 if shown and inputs.fails_on_findings("check") else 0


def commit(inputs: Inputs) -> int:
    """The safe fixes as one commit pushed to the pull request's branch (a
    fork's too when it allows edits by maintainers); where it cannot be
    pushed, ``suggest`` instead. Findings without a safe fix left fail the
    step (``fail-on-findings``)."""
    pr = ws.need_pull(inputs)
    to = pushing.target(inputs, pr)
    if isinstance(to, str):
        print(f"rnnfix: {to}")
        return suggest_mode(inputs)
    (code, out, err), names = ws.apply_fixes(inputs)
    sys.stdout.write(out)
    if code != 2:  # exit 2 already wrote its stderr
        sys.stderr.write(err)
    if code == 1 and not inputs.fails_on_findings("commit"):
        code = 0  # findings without a safe fix left; a file rnnfix could not read still fails
    if not names:
        print("rnnfix: nothing to fix")
        return code
    applied = re.search(r"(\d+) fix(?:es)? applied", err or "")
    count = applied.group(1) if applied else "the"
    message = (
        f"{pushing.SUBJECT}\n\n"
        f"Applied {count} safe fix(es) with `rnnfix apply` in:\n"
        + "".join(f"- {n}\n" for n in names)
    )
    head = str(pr["head"]["sha"])
    ws.git_out(inputs, "add", "--", *names)
    ws.git_out(
        inputs,
        "-c",
        f"user.name={pushing.BOT_NAME}",
        "-c",
        f"user.email={pushing.BOT_EMAIL}",
        "commit",
        "--no-verify",
        "-q",
        "-m",
        message,
    )
    try:
        skipped = pushing.push(inputs, to, head)
    except BotError as exc:
        if not to.fork:
            raise
        # a fork's branch refuses the workflow's own token (it is the base
        # repository's): undo the commit and suggest the fixes instead
        ws.git_out(inputs, "reset", "-q", "--soft", head)
        ws.git_out(inputs, "checkout", "-q", head, "--", *names)
        ws.annotate(
            inputs,
            "warning",
            f"cannot push to the fork's branch {to.name} ({exc}): suggesting instead; pushing "
            "to a fork needs a maintainer's token (a personal access token or a GitHub App "
            "token), not the workflow's GITHUB_TOKEN",
        )
        return suggest_mode(inputs)
    if skipped:
        print(skipped)
        return code
    print(f"rnnfix: pushed a commit fixing {len(names)} file(s) to {to.name}")
    return code
