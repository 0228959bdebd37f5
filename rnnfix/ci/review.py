"""Keeping rnnfix's review of a pull request in step with its fixes, in as
few writes as GitHub's rate limits want, and never half-updated.

Each suggestion comment carries a hidden marker with a key of what it
suggests (file, the lines it replaces, the new lines). On a rerun the bot
reads its earlier comments and plans:

- *keep*: same key, still on the same lines of the head (GitHub moves a
  comment whose lines a push did not touch, and gives an outdated one no
  ``line``): no write;
- *edit*: the same, but its text (the findings' messages) changed: one PATCH;
- *create*: new suggestions, all in one new review (one POST: GitHub creates
  the review and all its comments together, or nothing);
- *delete*: the bot's comments nobody wants any more.

The order is create, edit, delete, then the review bodies. A failure at the
create leaves the earlier state as it was. After it, every new suggestion is
visible at once; what a failure further on can leave is a stale comment or an
older message beside the complete new set, and the earlier review's body
still carrying the earlier run's digest, so the next run (a re-run of the
job) sees it is not up to date and finishes the plan from what is there.
The bot never deletes before the new suggestions exist, so no failure loses a
fix that was on the pull request."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rnnfix.ci.github import GitHub

REVIEW_MARKER = "<!-- rnnfix-review"
COMMENT_MARKER = "<!-- rnnfix-suggestion"
SUPERSEDED = "rnnfix: superseded by a later rnnfix review"
_KEY = re.compile(r"<!-- rnnfix-suggestion ([0-9a-f]{16}(?:#\d+)?) -->")


@dataclass(frozen=True)
class Wanted:
    key: str
    payload: dict[str, Any]  # path, line, side, body (marker included), start_line


def key_of(path: str, old: Sequence[str], new: Sequence[str]) -> str:
    data = json.dumps([path, list(old), list(new)]).encode("utf-8", "surrogateescape")
    return hashlib.sha256(data).hexdigest()[:16]


def comment_marker(key: str) -> str:
    return f"{COMMENT_MARKER} {key} -->"


def review_marker(body: str) -> str:
    digest = hashlib.sha256(body.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{REVIEW_MARKER} {digest} -->"


@dataclass
class Plan:
    keep: list[tuple[int, Wanted]] = field(default_factory=list)
    edit: list[tuple[int, Wanted]] = field(default_factory=list)
    create: list[Wanted] = field(default_factory=list)
    delete: list[int] = field(default_factory=list)
    overflow: list[Wanted] = field(default_factory=list)  # over the cap: into the patch

    @property
    def writes(self) -> int:
        return len(self.edit) + len(self.delete) + (1 if self.create else 0)


def plan(existing: Sequence[dict[str, Any]], wanted: Sequence[Wanted], cap: int) -> Plan:
    """What to do with the bot's ``existing`` comments to show ``wanted``
    (in order), at most ``cap`` of them: those already there first (they cost
    no write), then the new ones in order; the rest overflow."""
    by_key = {w.key: w for w in wanted}
    matched: dict[str, dict[str, Any]] = {}
    out = Plan()
    for c in existing:
        body = str(c.get("body") or "")
        if COMMENT_MARKER not in body:
            continue  # a person's comment, or a reply
        match = _KEY.search(body)
        w = by_key.get(match.group(1)) if match else None
        if w is None or w.key in matched or not _same_place(c, w.payload):
            out.delete.append(int(c["id"]))
        else:
            matched[w.key] = c
    for key in list(matched)[cap:]:
        out.delete.append(int(matched.pop(key)["id"]))
    room = cap - len(matched)
    for w in wanted:
        old = matched.get(w.key)
        if old is not None:
            same = str(old.get("body") or "") == w.payload["body"]
            (out.keep if same else out.edit).append((int(old["id"]), w))
        elif room > 0:
            out.create.append(w)
            room -= 1
        else:
            out.overflow.append(w)
    return out


def _same_place(comment: dict[str, Any], payload: dict[str, Any]) -> bool:
    return (
        comment.get("path") == payload["path"]
        and comment.get("line") == payload["line"]
        and (comment.get("start_line") or None) == payload.get("start_line")
        and (comment.get("side") or "RIGHT") == "RIGHT"
    )


def earlier_reviews(gh: GitHub, number: int) -> list[dict[str, Any]]:
    return [
        r
        for r in gh.paginate(f"/pulls/{number}/reviews")
        if REVIEW_MARKER in str(r.get("body") or "")
    ]


def _superseded(r: dict[str, Any]) -> bool:
    return str(r.get("body") or "").startswith(SUPERSEDED)


def up_to_date(todo: Plan, earlier: Sequence[dict[str, Any]], body: str) -> bool:
    return (
        not todo.create
        and not todo.edit
        and not todo.delete
        and bool(earlier)
        and review_marker(body) in str(earlier[-1].get("body") or "")
        and all(_superseded(r) for r in earlier[:-1])
    )


def carry_out(
    gh: GitHub,
    number: int,
    head: str,
    todo: Plan,
    earlier: Sequence[dict[str, Any]],
    body: str,
    post_empty: bool,
) -> str:
    """Do ``todo`` in the order the module's docstring explains; ``body``
    without its marker; ``post_empty``: post a review even without comments
    (its body holds fixes). What happened, in one line."""
    full = f"{body}\n\n{review_marker(body)}"
    created = False
    if todo.create or (post_empty and not earlier):
        payload = {
            "commit_id": head,
            "event": "COMMENT",
            "body": full,
            "comments": [w.payload for w in todo.create],
        }
        gh.request("POST", f"/pulls/{number}/reviews", payload)
        created = True
    for comment_id, w in todo.edit:
        gh.request("PATCH", f"/pulls/comments/{comment_id}", {"body": w.payload["body"]})
    for comment_id in todo.delete:
        gh.request("DELETE", f"/pulls/comments/{comment_id}")
    # Last, the bodies: the latest review holds the summary, the older ones
    # point to it (a failed run's leftovers included).
    if not created and earlier and review_marker(body) not in str(earlier[-1].get("body") or ""):
        gh.request("PUT", f"/pulls/{number}/reviews/{earlier[-1]['id']}", {"body": full})
    note = (
        f"{SUPERSEDED} (commit {head[:12]}); its suggestions that still apply "
        f"stay on their lines.\n\n{REVIEW_MARKER} superseded -->"
    )
    for r in earlier if created else earlier[:-1]:
        if not _superseded(r):
            gh.request("PUT", f"/pulls/{number}/reviews/{r['id']}", {"body": note})
    shown = len(todo.keep) + len(todo.edit) + len(todo.create)
    return (
        f"{shown} suggestion(s) on the pull request ({len(todo.create)} new, "
        f"{len(todo.edit)} updated, {len(todo.keep)} unchanged, {len(todo.delete)} removed)"
    )
