"""Mode ``suggest``: rnnfix's fixes as one review of suggestion blocks, each
naming the findings behind it; a fork's pull request (read-only token) gets
annotations and the patch in the job summary instead."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from rnnfix.ci import limits, review, suggest
from rnnfix.ci import workspace as ws
from rnnfix.ci.annotating import write_annotations
from rnnfix.ci.findings import Diff, Finding, Report, keep, passes, place
from rnnfix.ci.github import ApiError, GitHub, read_only
from rnnfix.ci.prdiff import added_lines, commentable_lines, pr_files
from rnnfix.ci.workspace import Inputs

FORK_REASON = (
    "this pull request comes from a fork, and under `pull_request` GitHub gives a fork's "
    "workflow a read-only token whatever the workflow's `permissions` say"
)


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
    hidden = len(report.findings) - len(shown)
    return Fixes(texts, kept, causes, place(shown, diff), hidden)


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
    pr = ws.need_pull(inputs)
    report, _ = ws.sarif_report(inputs)
    _, names = ws.apply_fixes(inputs)
    texts = {n: (ws.git_out(inputs, "show", f"HEAD:{n}"), ws.read_text(inputs, n)) for n in names}
    if names:  # leave the checkout as it was for later steps
        ws.git_out(inputs, "checkout", "HEAD", "--", *names)
    gh = GitHub(inputs.token, inputs.repo, inputs.api_url, inputs.pace)
    number, head = int(pr["number"]), str(pr["head"]["sha"])
    files = gh.paginate(f"/pulls/{number}/files")
    commentable = pr_files(files)
    diff = None if inputs.filter_mode == "nofilter" else _api_filter_sets(files)
    fixes = _fixes(inputs, report, names, texts, commentable, diff)
    ws.say_filtered(inputs, fixes.hidden)
    inline, elsewhere = suggest.split(fixes.changes, commentable)
    wanted, change_of = _wanted(inline, fixes)
    elsewhere += [c for c in inline if c not in change_of.values()]  # comments too long
    if ws.is_fork(pr) and inputs.event_name == "pull_request":
        if not fixes.changes and not fixes.shown:
            print("rnnfix: nothing to fix")
            return 0
        return _fallback(inputs, fixes, FORK_REASON, fails=False) or _left(inputs, fixes)
    existing = gh.paginate(f"/pulls/{number}/comments")
    earlier = review.earlier_reviews(gh, number)
    todo = review.plan(existing, wanted, limits.MAX_COMMENTS)
    elsewhere += [change_of[w.key] for w in todo.overflow]
    elsewhere.sort(key=lambda c: (c.path, c.start))
    if not fixes.changes:  # findings without a fix: nothing to suggest (check reports them)
        if not earlier:
            print("rnnfix: nothing to fix; no review posted")
            return _left(inputs, fixes)
        body = f"rnnfix: nothing left to fix as of {head[:12]}."
    else:
        body = _body(inputs, fixes, len(wanted) - len(todo.overflow), elsewhere)
    if review.up_to_date(todo, earlier, body):
        print("rnnfix: the review is up to date")
        return _left(inputs, fixes)
    try:
        done = review.carry_out(gh, number, head, todo, earlier, body, post_empty=True)
    except ApiError as exc:
        if not read_only(exc):
            raise
        reason = (
            FORK_REASON
            if ws.is_fork(pr)
            else (
                "the token may not write to this pull request: the workflow's `permissions` "
                "lack `pull-requests: write`, or the organisation's default token is read-only"
            )
        )
        return _fallback(inputs, fixes, reason, fails=not ws.is_fork(pr)) or _left(inputs, fixes)
    print(f"rnnfix: {done}")
    return _left(inputs, fixes)


def _left(inputs: Inputs, fixes: Fixes) -> int:
    """``fail-on-findings``: the findings ``filter-mode`` shows fail the step
    once the review (or the fallback) is written; off by default here."""
    if fixes.shown and inputs.fails_on_findings("suggest"):
        print(f"rnnfix: {len(fixes.shown)} finding(s) left and fail-on-findings is on")
        return 1
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
                if ws.add_summary(
                    inputs, _summary_patch("rnnfix: the complete patch", fixes, elsewhere)
                )
                else "run `rnnfix apply --diff` for all of them"
            )
            text += f"\n\n{left} more fix(es) do not fit in a review: {where}."
    return text


def _summary_patch(
    title: str, fixes: Fixes, changes: list[suggest.Change], room: int | None = None
) -> str:
    """A job-summary section holding the patch of ``changes``, in ``room``
    bytes (default: the summary's 1 MiB)."""
    room = limits.MAX_SUMMARY if room is None else room
    patch, left = fixes.patch(changes, room // 4 - 4096)  # bytes: up to 4 a character
    note = f"\n\n({left} more fix(es): run `rnnfix apply --diff`)" if left else ""
    return f"### {title}\n\n```diff\n{patch}```{note}\n"


def _fallback(inputs: Inputs, fixes: Fixes, reason: str, fails: bool) -> int:
    """No review can be written: the findings as annotations, the fixes as
    one patch in the job summary, and why, truthfully. The list of findings
    takes a quarter of the summary, the patch the rest."""
    level = "error" if fails else "warning"
    list_room = limits.MAX_SUMMARY // 4
    write_annotations(inputs, Report(), fixes.shown, {level: 1}, list_room)
    where = ""
    if fixes.changes:
        title = "rnnfix: fixes for this pull request (apply with `git apply`)"
        section = _summary_patch(title, fixes, fixes.changes, limits.MAX_SUMMARY - list_room)
        if ws.add_summary(inputs, f"{reason[0].upper()}{reason[1:]}.\n\n{section}"):
            where = "; the fixes are one patch in the job summary"
    ws.annotate(
        inputs, level, f"cannot post a review: {reason}; the findings are annotations{where}"
    )
    print(f"rnnfix: cannot post a review: {reason}", file=sys.stderr)
    return 1 if fails else 0
