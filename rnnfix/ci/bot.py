"""The action's entry point: read the inputs (environment variables set by
``action.yml``) and the event, run rnnfix, then check, suggest or commit.

rnnfix itself runs as a subprocess (``run.rnnfix``: the workspace off the
import path) with the user's ``args``, so the bot sees exactly what the
command line does, config included. Findings come from one ``--check
--output-format sarif`` run (each with the lines its own fix changes); for
``suggest`` and ``commit`` the bot then fixes the checkout in place and reads
each file's before and after from git (``HEAD`` and the working tree)."""

from __future__ import annotations

import base64
import os
import re
import sys
from typing import Any

from rnnfix.ci import workspace as ws
from rnnfix.ci.findings import keep, workflow_commands
from rnnfix.ci.github import ApiError, Pace
from rnnfix.ci.suggesting import suggest_mode
from rnnfix.ci.workspace import BotError, Inputs

__all__ = ["BotError", "Inputs", "main"]

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


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
    remain on the lines ``filter-mode`` keeps."""
    report, sarif = ws.sarif_report(inputs)
    ws.write_private(inputs.workspace / inputs.sarif_file, sarif)
    shown = keep(report.findings, inputs.filter_mode, ws.filter_sets(inputs))
    sys.stdout.write(workflow_commands(report, shown))
    ws.say_filtered(inputs, len(report.findings) - len(shown))
    return 1 if shown else 0


def commit(inputs: Inputs) -> int:
    pr = ws.need_pull(inputs)
    if ws.is_fork(pr):
        print("rnnfix: pull request from a fork (the token cannot push to it): suggesting instead")
        return suggest_mode(inputs)
    (code, out, err), names = ws.apply_fixes(inputs)
    sys.stdout.write(out)
    if code != 2:  # exit 2 already wrote its stderr
        sys.stderr.write(err)
    if not names:
        print("rnnfix: nothing to fix")
        return code
    applied = re.search(r"(\d+) fix(?:es)? applied", err or "")
    count = applied.group(1) if applied else "the"
    message = (
        f"Fix PyTorch train/eval mode bugs (rnnfix)\n\n"
        f"Applied {count} safe fix(es) with `rnnfix apply` in:\n"
        + "".join(f"- {n}\n" for n in names)
    )
    ws.git_out(inputs, "add", "--", *names)
    ws.git_out(
        inputs,
        "-c",
        f"user.name={BOT_NAME}",
        "-c",
        f"user.email={BOT_EMAIL}",
        "commit",
        "--no-verify",
        "-q",
        "-m",
        message,
    )
    ref = str(pr["head"]["ref"])
    _push(inputs, pr, ref)
    print(f"rnnfix: pushed a commit fixing {len(names)} file(s) to {ref}")
    return code


def _push(inputs: Inputs, pr: dict[str, Any], ref: str) -> None:
    """Push with the action's ``token``: as an HTTP header for the server's
    URL, given to git in its environment (``GIT_CONFIG_*``), never on a
    command line or in the output. The empty value first drops the header
    actions/checkout left in ``.git/config``, so git sends ours only."""
    repo = ((pr.get("head") or {}).get("repo") or {}).get("full_name") or inputs.repo
    url = f"{inputs.server_url}/{repo}.git"
    env: dict[str, str] = {}
    if inputs.token:
        basic = base64.b64encode(f"x-access-token:{inputs.token}".encode()).decode()
        key = f"http.{inputs.server_url}/.extraheader"
        env = {
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": key,
            "GIT_CONFIG_VALUE_0": "",
            "GIT_CONFIG_KEY_1": key,
            "GIT_CONFIG_VALUE_1": f"AUTHORIZATION: basic {basic}",
        }
    ws.git_out(inputs, "push", url, f"HEAD:refs/heads/{ref}", env=env)
