"""The CI bot end to end: a real git repository, an event file, rnnfix as a
subprocess, and a fake GitHub API; no network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ci.conftest import CLEAN, FIXTURES, ONE_LINE, FakeGitHub, git, make_pr, set_fork

MULTI = (FIXTURES / "RNF003" / "after_eval_train_accuracy.py").read_text()
# the RNF002 bug at line 4, then filler, so a PR edit at the end leaves it outside the diff
FAR = ONE_LINE + "".join(f"x{i} = {i}\n" for i in range(20))


def test_check_annotations_and_sarif(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"old.py": ONE_LINE}, {"wrap.py": ONE_LINE, "ok.py": CLEAN})
    assert api.run(pr.env(api, "check")) == 1
    out = capfd.readouterr().out
    assert "::warning" in out and "file=wrap.py" in out and "RNF002" in out
    assert "old.py" not in out  # unchanged by the pull request
    sarif = json.loads((pr.repo / "rnnfix.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["RNF002"]
    assert api.requests == []


def test_check_clean_and_all_files(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"old.py": ONE_LINE}, {"ok.py": CLEAN})
    assert api.run(pr.env(api, "check")) == 0
    # every file, but filter-mode diff_context (the default) shows only the pull request's hunks
    assert api.run(pr.env(api, "check", RNNFIX_CHANGED_ONLY="false")) == 0
    assert "1 finding(s) not shown" in capfd.readouterr().out
    env = pr.env(api, "check", RNNFIX_CHANGED_ONLY="false", RNNFIX_FILTER_MODE="nofilter")
    assert api.run(env) == 1
    assert "file=old.py" in capfd.readouterr().out


def test_suggest_single_and_multi_line(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE, "train.py": MULTI})
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest")) == 0
    (review,) = api.sent("POST", "/pulls/7/reviews")
    assert review["commit_id"] == pr.head and review["event"] == "COMMENT"
    assert "<!-- rnnfix-review" in review["body"]
    by_path = {c["path"]: c for c in review["comments"]}
    single = by_path["wrap.py"]
    assert single["line"] == 4 and "start_line" not in single
    assert single["body"].endswith("```suggestion\nmodel.train()\n```")
    assert "RNF002" in single["body"]
    multi = by_path["train.py"]
    assert (multi["start_line"], multi["line"], multi["side"]) == (17, 18, "RIGHT")
    assert multi["body"].endswith(
        "```suggestion\nwith torch.no_grad():\n    for x, y in train_loader:\n"
        "        correct += (model(x).argmax(1) == y).sum().item()\n```"
    )
    assert git(pr.repo, "status", "--porcelain") == ""  # the checkout is left as it was


def test_fix_outside_the_diff_goes_into_the_body(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"far.py": FAR}, {"far.py": FAR + "y = 1\n"})
    api.files = pr.patches()
    # filter-mode diff_context (the default): the bug is far from the PR's hunk
    assert api.run(pr.env(api, "suggest")) == 0
    assert api.sent("POST") == []
    assert api.run(pr.env(api, "suggest", RNNFIX_FILTER_MODE="file")) == 0
    (review,) = api.sent("POST", "/pulls/7/reviews")
    assert review["comments"] == []
    assert "```diff\n--- a/far.py\n+++ b/far.py\n" in review["body"]
    assert "-model.module.train()\n+model.train()\n" in review["body"]


def test_nothing_to_fix_posts_nothing(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"old.py": ONE_LINE}, {"ok.py": CLEAN})
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest")) == 0
    assert [m for m, _, _ in api.requests if m != "GET"] == []


def test_new_push_updates_the_review(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    api.files = pr.patches()
    api.reviews = [{"id": 5, "body": "older\n\n<!-- rnnfix-review 0123 -->"}]
    api.review_comments = [
        {"id": 11, "body": "<!-- rnnfix-suggestion -->\nin the review", "path": "wrap.py"},
        {"id": 12, "body": "<!-- rnnfix-suggestion -->\nposted beside it by an update"},
        {"id": 13, "body": "a person's comment stays"},
    ]
    assert api.run(pr.env(api, "suggest")) == 0
    # the new suggestion first, in one new review; then the stale ones go
    methods = [(m, p.split("?")[0]) for m, p, _ in api.requests if m != "GET"]
    assert methods == [
        ("POST", "/repos/o/r/pulls/7/reviews"),
        ("DELETE", "/repos/o/r/pulls/comments/11"),
        ("DELETE", "/repos/o/r/pulls/comments/12"),
        ("PUT", "/repos/o/r/pulls/7/reviews/5"),
    ]
    (review,) = api.sent("POST", "/pulls/7/reviews")
    (comment,) = review["comments"]
    assert review["commit_id"] == pr.head and comment["line"] == 4
    (put,) = api.sent("PUT", "/pulls/7/reviews/5")
    assert put["body"].startswith("rnnfix: superseded by a later rnnfix review")
    assert [c["id"] for c in api.review_comments if "person" in c["body"]] == [13]


def test_same_push_again_changes_nothing(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest")) == 0
    (review,) = api.sent("POST", "/pulls/7/reviews")
    api.requests.clear()
    api.reviews = [{"id": 5, "body": review["body"]}]
    assert api.run(pr.env(api, "suggest")) == 0
    assert [m for m, _, _ in api.requests if m != "GET"] == []


def test_commit_pushes_one_commit(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"old.py": ONE_LINE}, {"wrap.py": ONE_LINE})
    assert api.run(pr.env(api, "commit")) == 0
    remote = ["--git-dir", str(pr.remote)]
    log = git(tmp_path, *remote, "log", "-2", "--format=%an|%s|%P", "feature")
    first, second = log.splitlines()
    author, subject, parent = first.split("|")
    assert author == "github-actions[bot]" and subject.startswith("Fix PyTorch train/eval")
    assert parent == pr.head and second.startswith("t|pr|")
    fixed = git(tmp_path, *remote, "show", "feature:wrap.py")
    assert "model.train()" in fixed and "module.train" not in fixed
    assert "module.train" in git(tmp_path, *remote, "show", "feature:old.py")  # not in the PR
    assert api.requests == []


def test_commit_from_a_fork_falls_back_to_annotations(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    set_fork(pr)
    api.files = pr.patches()
    assert api.run(pr.env(api, "commit")) == 0
    assert [m for m, _, _ in api.requests if m != "GET"] == []  # known up front: no write tried
    assert git(tmp_path, "--git-dir", str(pr.remote), "rev-parse", "feature").strip() == pr.head
    out = capfd.readouterr().out
    assert "::warning title=rnnfix (RNF002),file=wrap.py,line=4," in out
    assert "read-only token whatever the workflow's `permissions` say" in out
    assert "-model.module.train()\n+model.train()\n" in pr.summary.read_text()


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (401, {}, "401 Unauthorized: Bad credentials: the token is missing"),
        (403, {}, "403 Forbidden: Bad credentials: the token lacks a permission"),
        (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "0"}, "403 rate limit exceeded"),
        (429, {"Retry-After": "60"}, "429 rate limit exceeded"),
    ],
)
def test_api_errors_are_one_line(
    tmp_path: Path,
    api: FakeGitHub,
    capfd: pytest.CaptureFixture[str],
    status: int,
    headers: dict[str, str],
    expected: str,
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    api.routes.append(("GET", r".*/files", (status, {"message": "Bad credentials"}, headers)))
    assert api.run(pr.env(api, "suggest")) == 1
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out
    (line,) = [x for x in captured.err.splitlines() if x.startswith("rnnfix:")]
    assert expected in line and "GET /repos/o/r/pulls/7/files" in line
    assert "::error title=rnnfix::GitHub API" in captured.out


def test_rejected_review_is_one_line(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    api.files = pr.patches()
    api.routes.append(("POST", r".*/reviews", (422, {"message": "Validation Failed"}, {})))
    assert api.run(pr.env(api, "suggest")) == 1
    err = capfd.readouterr().err
    assert "422 Unprocessable Entity: Validation Failed" in err and "Traceback" not in err


def test_unreachable_api(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    env = pr.env(api, "suggest", GITHUB_API_URL="http://127.0.0.1:9")
    assert api.run(env) == 1
    assert "cannot reach http://127.0.0.1:9" in capfd.readouterr().err


def test_misconfiguration(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    assert api.run(pr.env(api, "review")) == 1
    git(pr.repo, "checkout", "-q", pr.base)  # not the head: line numbers would be wrong
    assert api.run(pr.env(api, "suggest")) == 1
    err = capfd.readouterr().err
    assert "unknown mode 'review'" in err and "pull request's head checked out" in err


def test_a_file_that_does_not_parse_fails_the_step_after_suggesting(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(
        tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE, "broken.py": "def f(:\nm.module.eval()\n"}
    )
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest")) == 1
    (review,) = api.sent("POST", "/pulls/7/reviews")
    assert [c["path"] for c in review["comments"]] == ["wrap.py"]
    assert "broken.py" in capfd.readouterr().err


def test_commit_leaves_out_files_an_earlier_step_modified(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"old.py": ONE_LINE}, {"wrap.py": ONE_LINE})
    (pr.repo / "old.py").write_text(ONE_LINE + "# edited by an earlier step\n")
    assert api.run(pr.env(api, "commit")) == 0
    changed = git(
        tmp_path, "--git-dir", str(pr.remote), "show", "--name-only", "--format=", "feature"
    )
    assert changed.split() == ["wrap.py"]


def test_changed_only_without_the_base_commit(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    event = json.loads(pr.event_path.read_text())
    event["pull_request"]["base"]["sha"] = "f" * 40  # a shallow clone lacks it
    pr.event_path.write_text(json.dumps(event))
    assert api.run(pr.env(api, "check")) == 1
    assert "fetch-depth: 0" in capfd.readouterr().err


def test_fixed_since_the_last_push_the_review_says_so(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"fine.py": CLEAN})
    api.files = pr.patches()
    api.reviews = [{"id": 5, "body": "older\n\n<!-- rnnfix-review 0123 -->"}]
    api.review_comments = [{"id": 11, "body": "<!-- rnnfix-suggestion -->\nold"}]
    assert api.run(pr.env(api, "suggest")) == 0
    assert [p for m, p, _ in api.requests if m == "DELETE"] == ["/repos/o/r/pulls/comments/11"]
    (put,) = api.sent("PUT", "/pulls/7/reviews/5")
    assert put["body"].startswith("rnnfix: nothing left to fix") and "rnnfix-review" in put["body"]
    assert api.sent("POST") == []
