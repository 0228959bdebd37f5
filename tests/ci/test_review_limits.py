"""Issue 26.2: a pull request with hundreds of fixes, reruns after new pushes,
GitHub's rate limits and a run that fails midway, against the stand-in."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rnnfix.ci import limits
from rnnfix.ci.limits import MAX_BODY, MAX_COMMENTS, cut_patch
from tests.ci.conftest import CLEAN, SECONDARY, FakeGitHub, PullRequest, git, make_pr

CAP = 5
HEADER = "import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(2, 2))\n"


def many(n: int, fixed: frozenset[int] = frozenset(), pad: int = 0) -> str:
    """``n`` RNF002 bugs, each its own change (line 4 + 2i); ``fixed`` by hand;
    ``pad``: characters of comment on each (long lines make long patches)."""
    return HEADER + "".join(
        f"model{'' if i in fixed else '.module'}.train()  # {i}{' ' * bool(pad)}{'x' * pad}\n"
        f"x{i} = {i}\n"
        for i in range(n)
    )


def push(pr: PullRequest, api: FakeGitHub, text: str) -> None:
    """A new commit on the pull request's branch, checked out as its head."""
    (pr.repo / "many.py").write_text(text)
    git(pr.repo, "commit", "-q", "-am", "push")
    pr.head = git(pr.repo, "rev-parse", "HEAD").strip()
    event = json.loads(pr.event_path.read_text())
    event["pull_request"]["head"]["sha"] = pr.head
    pr.event_path.write_text(json.dumps(event))
    api.files = pr.patches()


def writes(api: FakeGitHub) -> list[str]:
    return [f"{m} {p.split('?')[0]}" for m, p, _ in api.requests if m != "GET"]


def numbers(api: FakeGitHub) -> list[int]:
    """Which bugs the bot's comments on the pull request suggest fixing."""
    out = []
    for c in api.ours():
        match = re.search(r"```suggestion\nmodel\.train\(\)  # (\d+)\n```", c["body"])
        assert match, c["body"]
        out.append(int(match.group(1)))
    return sorted(out)


@pytest.fixture
def big(tmp_path: Path, api: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> PullRequest:
    """8 fixes past a cap of 5 (the real cap, 50, is tested once above: each
    rnnfix run on hundreds of fixes takes seconds)."""
    monkeypatch.setattr(limits, "MAX_COMMENTS", CAP)
    api.max_review_comments = CAP
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"many.py": many(8)})
    api.files = pr.patches()
    return pr


def test_two_hundred_fixes_one_capped_review(tmp_path: Path, api: FakeGitHub) -> None:
    big = make_pr(tmp_path, {"ok.py": CLEAN}, {"many.py": many(200)})
    api.files = big.patches()
    assert api.run(big.env(api, "suggest")) == 0
    assert writes(api) == ["POST /repos/o/r/pulls/7/reviews"]
    (review,) = api.sent("POST", "/pulls/7/reviews")
    assert len(review["comments"]) == MAX_COMMENTS == 50
    assert numbers(api) == list(range(50))
    assert len(review["body"]) <= MAX_BODY
    # the other 150 are one patch in the body, whole: it applies
    body = review["body"]
    patch = body[body.index("```diff\n") + 8 : body.rindex("```")]
    assert patch.count("+model.train()") == 150 and "+model.train()  # 49\n" not in patch
    (big.repo / "p.diff").write_text(patch)
    git(big.repo, "apply", "--check", "p.diff")
    # every comment says why
    assert all("**RNF002**" in c["body"] for c in review["comments"])


def test_long_fixes_cut_to_fit_and_the_rest_in_the_summary(
    tmp_path: Path, api: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 40 fixes of 3,000-character lines: the 35 past the cap make a 200 kB patch
    monkeypatch.setattr(limits, "MAX_COMMENTS", CAP)
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"many.py": many(40, pad=3000)})
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest")) == 0
    (review,) = api.sent("POST", "/pulls/7/reviews")
    body = review["body"]
    assert len(body) <= MAX_BODY and api.statuses[-1] == 200
    assert "more fix(es) do not fit in a review: the job summary has all of them" in body
    patch = body[body.index("```diff\n") + 8 : body.index("```", body.index("```diff\n") + 8)]
    shown = patch.count("+model.train()")
    assert 0 < shown < 35 and f"{35 - shown} more fix(es)" in body
    (pr.repo / "p.diff").write_text(patch)
    git(pr.repo, "apply", "--check", "p.diff")  # made of whole changes: it applies
    summary = pr.summary.read_text()
    assert summary.count("+model.train()") == 35


def test_cut_patch_keeps_whole_hunks() -> None:
    one = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +5 @@\n-c\n+d\n"
    two = "--- a/g\n+++ b/g\n@@ -1 +1 @@\n-x\n+y\n"
    assert cut_patch([one, two], 1000) == (one + two, False)
    text, cut = cut_patch([one, two], len(one) + 5)
    assert (text, cut) == (one, True)
    first = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"
    assert cut_patch([one, two], len(first) + 3) == (first, True)
    assert cut_patch([one, two], 10) == ("", True)  # not even a hunk: nothing, never half


def test_rerun_updates_in_place(big: PullRequest, api: FakeGitHub) -> None:
    assert api.run(big.env(api, "suggest")) == 0
    first = {c["id"] for c in api.ours()}
    api.requests.clear()
    # the author fixes bugs 0 and 1 by hand and pushes
    push(big, api, many(8, frozenset(range(2))))
    assert api.run(big.env(api, "suggest")) == 0
    # 2 new suggestions in one review, then the 2 no longer wanted go, then
    # the first review points to the new one: 4 writes (not a delete and a
    # post for every suggestion)
    done = writes(api)
    assert done[0] == "POST /repos/o/r/pulls/7/reviews"
    assert done[-1] == f"PUT /repos/o/r/pulls/7/reviews/{api.reviews[0]['id']}"
    assert len(done) == 4 and all(w.startswith("DELETE ") for w in done[1:-1])
    (new,) = api.sent("POST", "/pulls/7/reviews")
    assert len(new["comments"]) == 2
    assert numbers(api) == list(range(2, 7))  # bug 7 is past the cap: in the body
    assert len({c["id"] for c in api.ours()} & first) == 3  # untouched, not recreated
    assert "+model.train()  # 7\n" in new["body"]
    assert api.reviews[0]["body"].startswith("rnnfix: superseded")
    # the same push again: nothing to write
    api.requests.clear()
    assert api.run(big.env(api, "suggest")) == 0
    assert writes(api) == []


def test_a_changed_message_is_an_edit(big: PullRequest, api: FakeGitHub) -> None:
    assert api.run(big.env(api, "suggest")) == 0
    comment = api.ours()[0]
    comment["body"] = comment["body"].replace("**RNF002**", "**RNF002** (older wording)")
    api.requests.clear()
    assert api.run(big.env(api, "suggest")) == 0
    assert writes(api) == [f"PATCH /repos/o/r/pulls/comments/{comment['id']}"]
    assert "older wording" not in comment["body"]


def test_outdated_comments_are_replaced(big: PullRequest, api: FakeGitHub) -> None:
    assert api.run(big.env(api, "suggest")) == 0
    stale = api.ours()[:3]
    for c in stale:
        c["line"] = None  # GitHub's outdated comment: its lines changed
    api.requests.clear()
    assert api.run(big.env(api, "suggest")) == 0
    (review,) = api.sent("POST", "/pulls/7/reviews")
    assert len(review["comments"]) == 3
    assert len([w for w in writes(api) if w.startswith("DELETE")]) == 3
    assert numbers(api) == list(range(CAP))


def test_writes_are_paced(big: PullRequest, api: FakeGitHub) -> None:
    assert api.run(big.env(api, "suggest")) == 0
    push(big, api, many(8, frozenset(range(3))))
    assert api.run(big.env(api, "suggest")) == 0  # 1 POST + 3 DELETE + 1 PUT
    times = api.writes[1:]
    assert len(times) == 5
    assert all(b - a >= 1.0 for a, b in zip(times, times[1:], strict=False))
    assert max(times.count(t) for t in times) == 1


def test_secondary_rate_limit_is_waited_out(big: PullRequest, api: FakeGitHub) -> None:
    assert api.run(big.env(api, "suggest")) == 0
    push(big, api, many(8, frozenset(range(3))))
    api.writes_per_minute = 2  # a tight secondary limit, and no pacing
    api.requests.clear()
    assert api.run(big.env(api, "suggest"), write_interval=0.0) == 0
    limited = [i for i, s in enumerate(api.statuses) if s == 403]
    assert limited  # GitHub said wait ...
    assert 60.0 in api.clock.slept  # ... and the bot waited Retry-After
    assert numbers(api) == list(range(3, 8))  # and finished: nothing half-done


@pytest.mark.parametrize(
    "reply",
    [
        (429, {"message": "Too Many Requests"}, {"Retry-After": "7"}),
        (403, {"message": SECONDARY}, {}),
        (403, {"message": "API rate limit exceeded"}, {"X-RateLimit-Remaining": "0"}),
    ],
)
def test_rate_limit_answers_are_retried(
    big: PullRequest, api: FakeGitHub, reply: tuple[int, dict[str, str], dict[str, str]]
) -> None:
    status, body, headers = reply
    if "X-RateLimit-Remaining" in headers:
        headers = {**headers, "X-RateLimit-Reset": str(int(api.clock.t) + 30)}
    api.inject.append(("POST", r".*/pulls/7/reviews", (status, body, headers)))
    assert api.run(big.env(api, "suggest")) == 0
    assert api.statuses.count(status) == 1 and len(api.sent("POST", "/reviews")) == 2
    assert api.clock.slept[-1] == {429: 7.0}.get(
        status, 31.0 if "X-RateLimit-Remaining" in headers else 60.0
    )
    assert len(api.ours()) == CAP


def test_an_hourly_limit_fails_the_step_in_one_line(
    big: PullRequest, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    reset = str(int(api.clock.t) + 3000)  # longer than the bot waits
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}
    api.routes.append(("POST", r".*/reviews", (403, {"message": "rate limit"}, headers)))
    assert api.run(big.env(api, "suggest")) == 1
    assert "403 rate limit exceeded (resets at" in capfd.readouterr().err
    assert api.clock.slept == []


def test_a_failure_midway_leaves_no_half_review(big: PullRequest, api: FakeGitHub) -> None:
    assert api.run(big.env(api, "suggest")) == 0
    before = numbers(api)
    push(big, api, many(8, frozenset(range(2))))
    # the first write fails: nothing changed
    api.fail_after_writes = len(api.writes)
    assert api.run(big.env(api, "suggest")) == 1
    assert numbers(api) == before and len(api.reviews) == 1
    # the run dies after its first write (all new suggestions, in one review)
    api.fail_after_writes = len(api.writes) + 1
    assert api.run(big.env(api, "suggest")) == 1
    assert set(range(2, 7)) <= set(numbers(api))  # the complete new set is there
    assert not api.reviews[0]["body"].startswith("rnnfix: superseded")
    # a re-run finishes from what is there: no duplicates, the stale ones go
    api.fail_after_writes = None
    api.requests.clear()
    assert api.run(big.env(api, "suggest")) == 0
    assert not api.sent("POST")
    assert numbers(api) == list(range(2, 7))
    assert api.reviews[0]["body"].startswith("rnnfix: superseded")
    assert not api.reviews[1]["body"].startswith("rnnfix: superseded")
