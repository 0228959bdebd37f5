"""Issue 38.6-38.9 against the stand-ins: a finding a deleted line causes,
a commit-mode job run again after the bot pushed, more annotations than
GitHub shows, and forks (commit mode's push to a fork, findings that fail
the check)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rnnfix.ci import limits
from tests.ci.conftest import (
    ANNOTATIONS_PER_LEVEL,
    CLEAN,
    ONE_LINE,
    FakeGitHub,
    PullRequest,
    add_fork,
    annotations_shown,
    git,
    make_pr,
    set_fork,
    step_summary,
)

ROOT = Path(__file__).parents[2]

# -- 38.6: the pull request deletes the loop head's model.train() ------------

TRAINED = '''"""Training with validation at the end of each epoch."""
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
val_data = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(2)]

for epoch in range(3):
    model.train()
    for x, y in train_data:
        x = x.float()
        y = y.float()
        prediction = model(x)
        loss = nn.functional.mse_loss(prediction, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    model.eval()
    with torch.no_grad():
        val_loss = sum(nn.functional.mse_loss(model(x), y).item() for x, y in val_data)
    print(f"epoch {epoch}: val {val_loss:.3f}")
'''
# the pull request only deletes line 11; RNF001 then reports the training
# step (line 17 of the new file, outside the hunk) and inserts train() before
# line 11, a line of the hunk
DELETED = TRAINED.replace("    model.train()\n", "", 1)


def lines_of(out: str, path: str) -> list[int]:
    return sorted(
        int(line.split(",line=")[1].split(",")[0])
        for line in out.splitlines()
        if f"file={path}," in line
    )


def test_a_deleted_train_call_fails_check_by_default(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"train.py": TRAINED}, {"train.py": DELETED})
    assert api.run(pr.env(api, "check")) == 1
    out = capfd.readouterr().out
    # reported on the hunk's line where its fix goes, naming the finding's own line
    (annotation,) = [line for line in out.splitlines() if "file=train.py" in line]
    assert annotation.startswith(
        "::warning title=rnnfix (RNF001),file=train.py,line=11,endLine=11::"
    )
    assert "::train.py:17:9: RNF001 " in annotation
    assert "shown on line 11, where its fix goes in this pull request's diff" in annotation
    sarif = json.loads((pr.repo / "rnnfix.sarif").read_text())  # the SARIF keeps the real place
    (result,) = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 17


def test_filter_mode_added_is_still_an_option(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"train.py": TRAINED}, {"train.py": DELETED})
    assert api.run(pr.env(api, "check", RNNFIX_FILTER_MODE="added")) == 0
    assert "1 finding(s) not shown: outside what filter-mode added keeps" in capfd.readouterr().out


def test_a_deleted_train_call_is_suggested_by_default(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"train.py": TRAINED}, {"train.py": DELETED})
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest")) == 0
    (review,) = api.sent("POST", "/pulls/7/reviews")
    (comment,) = review["comments"]
    assert comment["line"] == 11 and "**RNF001**" in comment["body"]
    assert "```suggestion\n    model.train()\n    for x, y in train_data:\n```" in comment["body"]


def test_diff_context_is_the_documented_default() -> None:
    from rnnfix.ci.workspace import read_inputs

    assert read_inputs({}).filter_mode == "diff_context"
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    spec = action["inputs"]["filter-mode"]
    assert spec["default"] == "diff_context"
    assert "diff_context (the default" in spec["description"]
    readme = (ROOT / "README.md").read_text()
    assert "`diff_context` (the default" in readme


# -- 38.7: a commit-mode job run again after the bot pushed --------------------


def rerun(pr: PullRequest) -> None:
    """What a re-run of the job does: the same event, actions/checkout of
    the same head sha."""
    git(pr.repo, "checkout", "-q", "--detach", pr.head)


def remote_head(pr: PullRequest, remote: Path | None = None) -> str:
    return git(pr.repo, "--git-dir", str(remote or pr.remote), "rev-parse", "feature").strip()


def test_commit_rerun_after_the_bot_pushed_says_so(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    assert api.run(pr.env(api, "commit")) == 0
    pushed = remote_head(pr)
    assert pushed != pr.head
    capfd.readouterr()
    rerun(pr)
    assert api.run(pr.env(api, "commit")) == 0
    out, err = capfd.readouterr()
    assert "hint:" not in out + err and "git push failed" not in out + err
    (line,) = [x for x in out.splitlines() if "fix commit" in x]
    assert line == (
        f"rnnfix: feature already has rnnfix's fix commit {pushed[:12]} on top of "
        f"{pr.head[:12]} (an earlier run of this job pushed it): nothing to push"
    )
    assert remote_head(pr) == pushed


def test_commit_rerun_after_someone_pushed_does_not_push(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    (pr.repo / "more.py").write_text("y = 2\n")
    git(pr.repo, "add", "more.py")
    git(pr.repo, "commit", "-q", "-m", "the author's next commit")
    theirs = git(pr.repo, "rev-parse", "HEAD").strip()
    git(pr.repo, "push", "-q", "origin", "HEAD:refs/heads/feature")
    rerun(pr)
    assert api.run(pr.env(api, "commit")) == 0
    out, err = capfd.readouterr()
    assert "hint:" not in out + err
    (line,) = [x for x in out.splitlines() if "moved" in x]
    assert line == (
        f"::warning title=rnnfix::feature moved to {theirs[:12]} since this job checked out "
        f"{pr.head[:12]}: not pushing (the run for the new head fixes it)"
    )
    assert remote_head(pr) == theirs


def test_a_rejected_push_names_git_s_reason_not_its_hint(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    hook = pr.remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'protected branch' >&2\nexit 1\n")
    hook.chmod(0o755)
    assert api.run(pr.env(api, "commit")) == 1
    err = capfd.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("rnnfix: git push failed")]
    assert "hint:" not in line and "! [remote rejected] HEAD -> feature" in line
    assert line.endswith("(remote: protected branch)")


# -- 38.8: more annotations than GitHub shows ----------------------------------

HEADER = "import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(2, 2))\n"


def many(n: int) -> str:
    return HEADER + "".join(f"model.module.train()  # {i}\nx{i} = {i}\n" for i in range(n))


def test_check_says_how_many_annotations_were_cut_and_lists_all_in_the_summary(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    broken = "def f(:\nm.module.eval()\n"  # mentions a mode call: rnnfix parses it
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"many.py": many(24), "broken.py": broken})
    assert api.run(pr.env(api, "check")) == 1
    out = capfd.readouterr().out
    shown = annotations_shown(out)
    # the file that does not parse is an error, beside 10 of the 24 warnings
    assert len([a for a in shown if a.startswith("::warning")]) == ANNOTATIONS_PER_LEVEL
    assert len([a for a in shown if a.startswith("::error")]) == 1
    # no annotation past GitHub's limit: the rest are plain log lines
    assert out.count("::warning title=rnnfix (RNF002)") == ANNOTATIONS_PER_LEVEL
    assert len(re.findall(r"^rnnfix: many\.py:\d+:1: RNF002 ", out, re.M)) == 14
    assert (
        "rnnfix: 14 of 25 annotations not shown: GitHub shows 10 error, 10 warning and "
        "10 notice annotations a step (50 a job); the job summary lists all 24 findings"
    ) in out
    summary = step_summary(pr)
    assert "### rnnfix: 24 finding(s)" in summary
    assert len(re.findall(r"^- `many\.py:\d+:1` \*\*RNF002\*\* ", summary, re.M)) == 24
    assert "broken.py" in summary


def test_the_summary_list_is_cut_between_whole_entries(
    tmp_path: Path,
    api: FakeGitHub,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "MAX_SUMMARY", 2_000)
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"many.py": many(24)})
    assert api.run(pr.env(api, "check")) == 1
    summary = pr.summary.read_bytes()
    assert len(summary) <= 2_000
    text = summary.decode()
    entries = re.findall(r"^- `many\.py:\d+:1` \*\*RNF002\*\* .*\(fixable\)$", text, re.M)
    assert 0 < len(entries) < 24
    assert f"- ... and {24 - len(entries)} more (the SARIF file has them all)" in text
    assert "the job summary lists " in capfd.readouterr().out


def test_few_findings_cut_nothing(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    assert api.run(pr.env(api, "check")) == 1
    out = capfd.readouterr().out
    assert "not shown: GitHub shows" not in out
    assert len(annotations_shown(out)) == 1
    assert "- `wrap.py:4:1` **RNF002** " in step_summary(pr)


def test_the_fork_fallback_cuts_its_annotations_too(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"many.py": many(12)})
    set_fork(pr)
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest")) == 0
    out = capfd.readouterr().out
    assert out.count("::warning title=rnnfix (RNF002)") == ANNOTATIONS_PER_LEVEL - 1
    assert "rnnfix: 3 of 13 annotations not shown" in out  # its own warning counts
    summary = step_summary(pr)
    assert summary.count("**RNF002**") == 12 and summary.count("+model.train()") == 12


# -- 38.9: forks: commit mode's push, findings that fail the check --------------


def fork_env(pr: PullRequest, api: FakeGitHub, mode: str, **extra: str) -> dict[str, str]:
    return pr.env(api, mode, GITHUB_EVENT_NAME="pull_request_target", **extra)


def test_commit_pushes_to_a_fork_that_allows_maintainer_edits(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    fork = add_fork(pr)
    api.files = pr.patches()
    assert api.run(fork_env(pr, api, "commit")) == 0
    assert remote_head(pr) == pr.head  # the base repository's branch is untouched
    fixed = git(pr.repo, "--git-dir", str(fork), "show", "feature:wrap.py")
    assert "model.train()" in fixed and "module" not in fixed
    author = git(pr.repo, "--git-dir", str(fork), "log", "-1", "--format=%an|%P", "feature")
    assert author.strip() == f"github-actions[bot]|{pr.head}"
    assert "rnnfix: pushed a commit fixing 1 file(s) to someone/r:feature" in capfd.readouterr().out
    assert api.sent("POST") == []


def test_commit_falls_back_when_the_fork_allows_no_edits(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    fork = add_fork(pr, maintainer_can_modify=False)
    api.files = pr.patches()
    assert api.run(fork_env(pr, api, "commit")) == 0
    assert remote_head(pr, fork) == pr.head
    assert "the fork does not allow edits by maintainers: suggesting instead" in (
        capfd.readouterr().out
    )
    (review,) = api.sent("POST", "/pulls/7/reviews")  # pull_request_target may write
    assert review["comments"][0]["path"] == "wrap.py"


def test_a_refused_push_to_a_fork_suggests_instead(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    fork = add_fork(pr)
    hook = fork / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'Permission to someone/r.git denied' >&2\nexit 1\n")
    hook.chmod(0o755)
    api.files = pr.patches()
    assert api.run(fork_env(pr, api, "commit")) == 0
    out = capfd.readouterr().out
    (line,) = [x for x in out.splitlines() if "cannot push to the fork" in x]
    assert line.startswith("::warning title=rnnfix::cannot push to the fork's branch someone/r:")
    assert "suggesting instead" in line and "hint:" not in line
    (review,) = api.sent("POST", "/pulls/7/reviews")
    assert review["commit_id"] == pr.head and review["comments"][0]["path"] == "wrap.py"
    assert git(pr.repo, "rev-parse", "HEAD").strip() == pr.head  # the local commit is undone
    assert git(pr.repo, "status", "--porcelain") == ""


def test_a_clone_url_on_another_host_never_gets_the_token(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    fork = add_fork(pr)
    event = json.loads(pr.event_path.read_text())
    elsewhere = tmp_path / "elsewhere.git"
    git(pr.repo, "init", "-q", "--bare", str(elsewhere))
    event["pull_request"]["head"]["repo"]["clone_url"] = f"file://{elsewhere}"
    pr.event_path.write_text(json.dumps(event))
    assert api.run(fork_env(pr, api, "commit")) == 0
    # pushed to the server's someone/r.git, from its full name, not to the odd URL
    assert remote_head(pr, fork) != pr.head
    assert git(pr.repo, "--git-dir", str(elsewhere), "for-each-ref") == ""


@pytest.mark.parametrize(
    ("mode", "value", "code"),
    [
        ("suggest", "", 0),
        ("suggest", "true", 1),
        ("check", "", 1),
        ("check", "false", 0),
        ("commit", "", 0),
    ],
)
def test_fail_on_findings(
    tmp_path: Path,
    api: FakeGitHub,
    capfd: pytest.CaptureFixture[str],
    mode: str,
    value: str,
    code: int,
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    api.files = pr.patches()
    assert api.run(pr.env(api, mode, RNNFIX_FAIL_ON_FINDINGS=value)) == code
    if mode == "suggest":
        assert len(api.sent("POST", "/pulls/7/reviews")) == 1  # the review is posted first
    if code and mode == "suggest":
        assert "rnnfix: 1 finding(s) left and fail-on-findings is on" in capfd.readouterr().out


def test_fail_on_findings_in_the_fork_fallback(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    set_fork(pr)
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest")) == 0
    assert api.run(pr.env(api, "suggest", RNNFIX_FAIL_ON_FINDINGS="true")) == 1
    assert "+model.train()" in step_summary(pr)


def test_fail_on_findings_is_checked_and_documented(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    assert api.run(pr.env(api, "check", RNNFIX_FAIL_ON_FINDINGS="maybe")) == 1
    assert "fail-on-findings must be true, false or auto, not 'maybe'" in capfd.readouterr().err
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["inputs"]["fail-on-findings"]["default"] == "auto"
    (run,) = [s for s in action["runs"]["steps"] if s["name"].startswith("Run rnnfix")]
    assert run["env"]["RNNFIX_FAIL_ON_FINDINGS"] == "${{ inputs.fail-on-findings }}"
    assert "`fail-on-findings`" in (ROOT / "README.md").read_text()
