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
import json
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rnnfix.ci import limits, review, run, suggest
from rnnfix.ci.findings import (
    FILTER_MODES,
    Diff,
    Finding,
    Report,
    keep,
    parse_sarif,
    passes,
    workflow_commands,
)
from rnnfix.ci.github import ApiError, GitHub, Pace, read_only
from rnnfix.ci.prdiff import added_lines, commentable_lines, pr_files, split_git_diff

BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
FORK_REASON = (
    "this pull request comes from a fork, and under `pull_request` GitHub gives a fork's "
    "workflow a read-only token whatever the workflow's `permissions` say"
)


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
    filter_mode: str = "added"
    server_url: str = "https://github.com"
    event_name: str = ""
    summary_path: str = ""
    event: dict[str, Any] = field(default_factory=dict)
    workspace: Path = Path()
    failed: bool = False  # rnnfix reported a file it could not check (exit 2)
    pace: Pace | None = None

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
    filter_mode = env.get("RNNFIX_FILTER_MODE", "added").strip() or "added"
    if filter_mode not in FILTER_MODES:
        raise BotError(f"filter-mode must be one of {', '.join(FILTER_MODES)}, not {filter_mode!r}")
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
        server_url=(env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/"),
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        summary_path=env.get("GITHUB_STEP_SUMMARY", ""),
        event=event,
        workspace=Path(env.get("GITHUB_WORKSPACE") or "."),
    )


def main(env: dict[str, str] | None = None, pace: Pace | None = None) -> int:
    """``pace``: the API client's clock (tests pass one that waits nothing)."""
    try:
        inputs = read_inputs(dict(os.environ if env is None else env))
        inputs.pace = pace
        code = {"check": check, "suggest": suggest_mode, "commit": commit}[inputs.mode](inputs)
        return 1 if inputs.failed else code
    except (BotError, ApiError) as exc:
        # One line, as a workflow error annotation; never a traceback.
        line = str(exc).replace("\n", " ")
        print(f"::error title=rnnfix::{line}")
        print(f"rnnfix: {line}", file=sys.stderr)
        return 1


# -- running rnnfix and git -------------------------------------------------


def _git(inputs: Inputs, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    done = run.git(inputs.workspace, args, env)
    if check and done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        if inputs.token:
            reason = reason.replace(inputs.token, "***")
        raise BotError(f"git {args[0]} failed: {reason}")
    return done.stdout


def _rnnfix(inputs: Inputs, *extra: str) -> tuple[int, str, str]:
    command = ["apply", *extra, *inputs.args]
    if inputs.changed_only:
        command += ["--changed-since", _base(inputs)]
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
        f"changed-only and filter-mode need the base commit {base[:12]}: use "
        "actions/checkout with fetch-depth: 0 (or changed-only: false, filter-mode: nofilter)"
    )


def _known(inputs: Inputs, rev: str) -> bool:
    return run.git(inputs.workspace, ["cat-file", "-e", f"{rev}^{{commit}}"]).returncode == 0


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


def _is_fork(pr: dict[str, Any]) -> bool:
    head_repo = (pr.get("head") or {}).get("repo") or {}
    base_repo = (pr.get("base") or {}).get("repo") or {}
    return bool(head_repo.get("full_name") != base_repo.get("full_name"))


def _modified(inputs: Inputs) -> list[str]:
    """Tracked files that differ from ``HEAD`` (relative to the repository root)."""
    out = _git(inputs, "diff", "--name-only", "-z", "HEAD")
    return [name for name in out.split("\0") if name]


def _apply_fixes(inputs: Inputs) -> tuple[tuple[int, str, str], list[str]]:
    """Run ``rnnfix apply`` on the checkout; the files it changed. Files an
    earlier step of the job modified are neither suggested nor committed."""
    before = set(_modified(inputs))
    done = _rnnfix(inputs)
    return done, [n for n in _modified(inputs) if n not in before]


def _report(inputs: Inputs) -> tuple[Report, str]:
    """The findings of one ``--check`` run, and its SARIF text."""
    _, out, _ = _rnnfix(inputs, "--check", "--output-format", "sarif", "--quiet")
    return parse_sarif(out), out


def _filter_sets(inputs: Inputs) -> Diff | None:
    """The pull request's (or push's) diff for ``filter-mode``, from git:
    the base to the working tree. None: no base to compare with."""
    if inputs.filter_mode == "nofilter":
        return None
    if inputs.pull is None and not str(inputs.event.get("before") or "").strip("0"):
        return None
    try:
        base = _base(inputs)
        text = _git(inputs, "diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/", "-U3", base)
    except BotError as exc:
        # Showing every finding beats failing a check that used to pass.
        print(f"::warning title=rnnfix::filter-mode {inputs.filter_mode} is off: {exc}")
        return None
    return {p: (added_lines(t), set(commentable_lines(t))) for p, t in split_git_diff(text).items()}


def _write_private(path: Path, text: str) -> None:
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


def _summary(inputs: Inputs, markdown: str) -> bool:
    """Append to the job summary ($GITHUB_STEP_SUMMARY); False: none."""
    if not inputs.summary_path:
        return False
    with open(inputs.summary_path, "a", encoding="utf-8") as f:
        f.write(markdown.rstrip("\n") + "\n")
    return True


# -- check ------------------------------------------------------------------


def check(inputs: Inputs) -> int:
    """Annotations on stdout (the runner turns them into PR annotations) and a
    SARIF file for code scanning, from one rnnfix run; fails when findings
    remain on the lines ``filter-mode`` keeps."""
    report, sarif = _report(inputs)
    _write_private(inputs.workspace / inputs.sarif_file, sarif)
    shown = keep(report.findings, inputs.filter_mode, _filter_sets(inputs))
    sys.stdout.write(workflow_commands(report, shown))
    _say_filtered(inputs, len(report.findings) - len(shown))
    return 1 if shown else 0


def _say_filtered(inputs: Inputs, hidden: int) -> None:
    if hidden:
        print(
            f"rnnfix: {hidden} finding(s) not shown: outside what filter-mode "
            f"{inputs.filter_mode} keeps (the SARIF file has them all)"
        )


# -- suggest ----------------------------------------------------------------


@dataclass
class Fixes:
    """One suggest run's fixes: the changes ``filter-mode`` keeps, each with
    the findings that caused it."""

    texts: dict[str, tuple[str, str]]
    changes: list[suggest.Change]
    causes: dict[int, list[Finding]]  # id of a change -> the findings behind it
    shown: list[Finding]
    hidden: int

    def patch(self, changes: list[suggest.Change], room: int | None = None) -> tuple[str, int]:
        """One patch of ``changes`` (for ``git apply``), at most ``room``
        characters: as many changes as fit, in order, each file's patch made
        from the changes it keeps so it always applies. (patch, changes left out)."""
        by_path: dict[str, list[suggest.Change]] = {}
        for c in changes:
            by_path.setdefault(c.path, []).append(c)
        out = ""
        for n, (path, cs) in enumerate(by_path.items()):
            old = self.texts[path][0]
            whole = suggest.patch(path, old, cs)
            if room is None or len(out) + len(whole) <= room:
                out += whole
                continue
            lo, hi = 0, len(cs)  # the most changes of this file that fit
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if len(out) + len(suggest.patch(path, old, cs[:mid])) <= room:
                    lo = mid
                else:
                    hi = mid - 1
            if lo:
                out += suggest.patch(path, old, cs[:lo])
            left = len(cs) - lo + sum(len(x) for x in list(by_path.values())[n + 1 :])
            return out, left
        return out, 0


def _fixes(
    inputs: Inputs,
    report: Report,
    names: list[str],
    texts: dict[str, tuple[str, str]],
    commentable: dict[str, dict[int, int]],
    diff: Diff | None,
) -> Fixes:
    """The changes rnnfix made that ``filter-mode`` keeps: a change passes
    when a finding behind it passes, or, for a change no finding maps to,
    when its own lines do."""
    shown = keep(report.findings, inputs.filter_mode, diff)
    shown_ids = {id(f) for f in shown}
    kept: list[suggest.Change] = []
    causes: dict[int, list[Finding]] = {}
    for name in names:
        for c in suggest.changes(name, *texts[name], commentable.get(name, {})):
            behind = [f for f in report.findings if f.path == c.path and _caused(f, c)]
            ok = (
                any(id(f) in shown_ids for f in behind)
                if behind
                else passes(c.path, set(range(c.start, c.end + 1)), inputs.filter_mode, diff)
            )
            if ok:
                kept.append(c)
                causes[id(c)] = behind
    return Fixes(texts, kept, causes, shown, len(report.findings) - len(shown))


def _caused(f: Finding, c: suggest.Change) -> bool:
    """Whether finding ``f`` is behind change ``c``: its own fix changes the
    change's lines (SARIF's fix, computed on the same text), or, for a fix
    SARIF does not carry (a follow-up, a notebook), its line is in or just
    after the change (an inserted statement guards the line it precedes)."""
    if f.fix_lines:
        return f.touches(c.start, c.end)
    return c.start <= f.line <= c.end + 1


def _message(causes: list[Finding]) -> str:
    lines = [f"**{f.code}** {f.message}" for f in causes]
    return "\n".join(dict.fromkeys(lines)) or "rnnfix suggests this fix."


def suggest_mode(inputs: Inputs) -> int:
    pr = _need_pull(inputs)
    report, _ = _report(inputs)
    _, names = _apply_fixes(inputs)
    texts = {n: (_git(inputs, "show", f"HEAD:{n}"), _read(inputs, n)) for n in names}
    if names:  # leave the checkout as it was for later steps
        _git(inputs, "checkout", "HEAD", "--", *names)
    gh = GitHub(inputs.token, inputs.repo, inputs.api_url, inputs.pace)
    number, head = int(pr["number"]), str(pr["head"]["sha"])
    files = gh.paginate(f"/pulls/{number}/files")
    commentable = pr_files(files)
    diff = None if inputs.filter_mode == "nofilter" else _api_filter_sets(files)
    fixes = _fixes(inputs, report, names, texts, commentable, diff)
    _say_filtered(inputs, fixes.hidden)
    inline, elsewhere = suggest.split(fixes.changes, commentable)
    wanted, change_of = _wanted(inline, fixes)
    elsewhere += [c for c in inline if c not in change_of.values()]  # comments too long
    if _is_fork(pr) and inputs.event_name == "pull_request":
        if not fixes.changes and not fixes.shown:
            print("rnnfix: nothing to fix")
            return 0
        return _fallback(inputs, fixes, FORK_REASON, fails=False)
    existing = gh.paginate(f"/pulls/{number}/comments")
    earlier = review.earlier_reviews(gh, number)
    todo = review.plan(existing, wanted, limits.MAX_COMMENTS)
    elsewhere += [change_of[w.key] for w in todo.overflow]
    elsewhere.sort(key=lambda c: (c.path, c.start))
    if not fixes.changes:  # findings without a fix: nothing to suggest (check reports them)
        if not earlier:
            print("rnnfix: nothing to fix; no review posted")
            return 0
        body = f"rnnfix: nothing left to fix as of {head[:12]}."
    else:
        body = _body(inputs, fixes, len(wanted) - len(todo.overflow), elsewhere)
    if review.up_to_date(todo, earlier, body):
        print("rnnfix: the review is up to date")
        return 0
    try:
        done = review.carry_out(gh, number, head, todo, earlier, body, post_empty=True)
    except ApiError as exc:
        if not read_only(exc):
            raise
        reason = (
            FORK_REASON
            if _is_fork(pr)
            else (
                "the token may not write to this pull request: the workflow's `permissions` "
                "lack `pull-requests: write`, or the organisation's default token is read-only"
            )
        )
        return _fallback(inputs, fixes, reason, fails=not _is_fork(pr))
    print(f"rnnfix: {done}")
    return 0


def _api_filter_sets(files: list[dict[str, Any]]) -> Diff:
    """``filter-mode``'s lines from the pull request's files as GitHub shows
    them; a file GitHub gives no patch for (too large) counts as a whole."""
    out: dict[str, tuple[set[int], set[int]] | None] = {}
    for f in files:
        if f.get("status") == "removed":
            continue
        text = str(f.get("patch") or "")
        out[str(f["filename"])] = (
            (added_lines(text), set(commentable_lines(text))) if text else None
        )
    return out


def _wanted(
    inline: list[suggest.Change], fixes: Fixes
) -> tuple[list[review.Wanted], dict[str, suggest.Change]]:
    wanted: list[review.Wanted] = []
    change_of: dict[str, suggest.Change] = {}
    seen: dict[str, int] = {}
    for c in inline:
        key = review.key_of(c.path, c.old, c.new)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}#{seen[key]}"
        payload = c.comment(f"{review.comment_marker(key)}\n{_message(fixes.causes[id(c)])}")
        if len(payload["body"]) > limits.MAX_BODY:
            continue  # a very long suggestion goes into the patch
        wanted.append(review.Wanted(key, payload))
        change_of[key] = c
    return wanted, change_of


def _read(inputs: Inputs, name: str) -> str:
    return (inputs.workspace / name).read_bytes().decode("utf-8", errors="surrogateescape")


def _body(inputs: Inputs, fixes: Fixes, inline: int, elsewhere: list[suggest.Change]) -> str:
    """The review's body, under GitHub's 65,536 characters: the findings,
    then the fixes not shown inline as one patch; what does not fit goes to
    the job summary, and the body says so."""
    room = limits.MAX_BODY - 200  # the marker and the notes below
    head = [f"**rnnfix** found {len(fixes.shown)} PyTorch train/eval mode problem(s)."]
    if inline:
        head.append(f"{inline} fix(es) below as suggestions: accept each with one click.")
    if fixes.hidden:
        head.append(
            f"{fixes.hidden} more finding(s) are outside what filter-mode "
            f"{inputs.filter_mode} shows."
        )
    text = "\n\n".join(head)
    listing = [f"- `{f.path}:{f.line}` **{f.code}** {f.message}" for f in fixes.shown]
    if listing:
        text += "\n\n" + limits.cut_lines(
            listing, min(len("\n".join(listing)), room // 3), "- ... and {} more"
        )
    if elsewhere:
        intro = (
            "\n\nFixes that are not suggestions above (outside this pull request's diff, "
            "in a notebook, or past the "
            f"{limits.MAX_COMMENTS} suggestions one review shows); apply with `git apply`:"
            "\n\n```diff\n"
        )
        patch, left = fixes.patch(elsewhere, room - len(text) - len(intro) - 8)
        text += intro + patch + "```"
        if left:
            where = (
                "the job summary has all of them"
                if _summary(inputs, _summary_patch("rnnfix: the complete patch", fixes, elsewhere))
                else "run `rnnfix apply --diff` for all of them"
            )
            text += f"\n\n{left} more fix(es) do not fit in a review: {where}."
    return text


def _summary_patch(title: str, fixes: Fixes, changes: list[suggest.Change]) -> str:
    """A job-summary section holding the patch of ``changes``, under its 1 MiB."""
    patch, left = fixes.patch(changes, limits.MAX_SUMMARY // 4 - 4096)  # bytes: up to 4 a character
    note = f"\n\n({left} more fix(es): run `rnnfix apply --diff`)" if left else ""
    return f"### {title}\n\n```diff\n{patch}```{note}\n"


def _fallback(inputs: Inputs, fixes: Fixes, reason: str, fails: bool) -> int:
    """No review can be written: the findings as annotations, the fixes as
    one patch in the job summary, and why, truthfully."""
    sys.stdout.write(workflow_commands(Report(), fixes.shown))
    where = ""
    if fixes.changes:
        title = "rnnfix: fixes for this pull request (apply with `git apply`)"
        section = _summary_patch(title, fixes, fixes.changes)
        if _summary(inputs, f"{reason[0].upper()}{reason[1:]}.\n\n{section}"):
            where = "; the fixes are one patch in the job summary"
    level = "error" if fails else "warning"
    what = f"cannot post a review: {reason}; the findings are annotations{where}"
    print(f"::{level} title=rnnfix::{what}")
    print(f"rnnfix: cannot post a review: {reason}", file=sys.stderr)
    return 1 if fails else 0


# -- commit -----------------------------------------------------------------


def commit(inputs: Inputs) -> int:
    pr = _need_pull(inputs)
    if _is_fork(pr):
        print("rnnfix: pull request from a fork (the token cannot push to it): suggesting instead")
        return suggest_mode(inputs)
    (code, out, err), names = _apply_fixes(inputs)
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
    _git(inputs, "add", "--", *names)
    _git(
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
    _git(inputs, "push", url, f"HEAD:refs/heads/{ref}", env=env)
