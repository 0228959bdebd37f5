"""Issue 26.1, 26.3, 26.4 and 26.5 against the stand-in: forks and read-only
tokens, the reason on every suggestion, commit mode's token, check mode's one
run and filter-mode."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest

from tests.ci.conftest import (
    CLEAN,
    FIXTURES,
    ONE_LINE,
    READ_ONLY,
    FakeGitHub,
    git,
    make_pr,
    set_fork,
)

RNF001 = (FIXTURES / "RNF001" / "epoch_loop_validate_at_end.py").read_text()


# -- 26.1: forks ------------------------------------------------------------


def test_fork_suggest_falls_back_without_trying_to_write(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    set_fork(pr)
    api.files = pr.patches()
    api.read_only = True
    assert api.run(pr.env(api, "suggest")) == 0
    assert [m for m, _, _ in api.requests if m != "GET"] == []
    out = capfd.readouterr().out
    assert "::warning title=rnnfix (RNF002),file=wrap.py,line=4,endLine=4,col=1," in out
    assert "::wrap.py:4:1: RNF002 " in out
    assert "pull pull" not in out and "`pull-requests: write`" not in out  # not a misconfiguration
    assert "a read-only token whatever the workflow's `permissions` say" in out
    summary = pr.summary.read_text()
    assert "```diff\n--- a/wrap.py\n+++ b/wrap.py\n" in summary
    assert "-model.module.train()\n+model.train()\n" in summary


def test_fork_under_pull_request_target_gets_a_403_at_write_time(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    # pull_request_target: the token may write, so the bot tries; this one cannot
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    set_fork(pr)
    api.files = pr.patches()
    api.read_only = True
    env = pr.env(api, "suggest", GITHUB_EVENT_NAME="pull_request_target")
    assert api.run(env) == 0
    assert api.statuses[-1] == 403 and api.requests[-1][0] == "POST"
    out = capfd.readouterr().out
    assert "file=wrap.py,line=4" in out and "read-only token" in out
    assert "+model.train()" in pr.summary.read_text()


def test_same_repository_read_only_token_says_which_permission(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    api.files = pr.patches()
    api.read_only = True
    assert api.run(pr.env(api, "suggest")) == 1  # a misconfiguration fails the step
    out = capfd.readouterr().out
    assert "::error title=rnnfix::cannot post a review: the token may not write" in out
    assert "`pull-requests: write`" in out and "fork" not in out
    assert "file=wrap.py,line=4" in out and "+model.train()" in pr.summary.read_text()
    assert READ_ONLY  # the stand-in's answer is GitHub's wording


# -- 26.3: every suggestion says why ------------------------------------------


def test_rnf001_suggestion_carries_its_finding(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"train.py": RNF001})
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest")) == 0
    (review,) = api.sent("POST", "/pulls/7/reviews")
    (comment,) = review["comments"]
    # the edit is at the loop head (line 12), the finding on the training step
    assert comment["line"] == 12
    assert "```suggestion\n    model.train()\n    for x, y in train_data:\n```" in comment["body"]
    assert "**RNF001**" in comment["body"]
    assert "rnnfix suggests this fix." not in comment["body"]


# -- 26.4: commit mode pushes with the token -----------------------------------


def git_shim(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A `git` first on PATH that logs each call (argv and the GIT_CONFIG_*
    it was given) and runs the real one."""
    log = tmp_path / "git.log"
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    real = next(
        str(Path(d) / "git")
        for d in os.environ["PATH"].split(os.pathsep)
        if (Path(d) / "git").is_file()
    )
    shim = shim_dir / "git"
    shim.write_text(
        "#!/bin/sh\n"
        'printf "%s\\n" "ARGV $*" '
        f'"ENV ${{GIT_CONFIG_KEY_1:-}}=${{GIT_CONFIG_VALUE_1:-}}" >> {log}\n'
        f'exec {real} "$@"\n'
    )
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{shim_dir}{os.pathsep}{os.environ['PATH']}"}, log


def test_commit_pushes_with_the_token_and_never_prints_it(
    tmp_path: Path,
    api: FakeGitHub,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    path, log = git_shim(tmp_path)
    monkeypatch.setenv("PATH", path["PATH"])
    token = "ghp_s3cretT0ken"
    assert api.run(pr.env(api, "commit", GITHUB_TOKEN=token)) == 0
    fixed = git(tmp_path, "--git-dir", str(pr.remote), "show", "feature:wrap.py")
    assert "model.train()" in fixed and "module" not in fixed
    calls = log.read_text()
    push = [line for line in calls.splitlines() if line.startswith("ARGV") and " push " in line]
    assert len(push) == 1 and f"{pr.server_url}/o/r.git" in push[0]
    header = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    assert f"ENV http.{pr.server_url}/.extraheader=AUTHORIZATION: basic {header}" in calls
    # on no command line, in no output
    assert token not in calls.replace(header, "") and header not in "".join(push)
    out = capfd.readouterr()
    assert token not in out.out + out.err and header not in out.out + out.err


def test_a_failed_push_does_not_print_the_token(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    env = pr.env(api, "commit", GITHUB_TOKEN="ghp_s3cret", GITHUB_SERVER_URL="file:///nowhere")
    assert api.run(env) == 1
    out = capfd.readouterr()
    # the bot reads the branch before it pushes: the fetch is what fails
    assert "git fetch of feature (before the push) failed: fatal: " in out.err
    assert "ghp_s3cret" not in out.out + out.err


# -- 26.5: check mode runs rnnfix once; filter-mode ----------------------------


def test_check_runs_rnnfix_once(
    tmp_path: Path, api: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rnnfix.ci import run

    calls: list[list[str]] = []
    real = run.rnnfix

    def counting(cwd: Path, args: list[str], capture: bool = True):  # type: ignore[no-untyped-def]
        calls.append(list(args))
        return real(cwd, args, capture)

    monkeypatch.setattr(run, "rnnfix", counting)
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    assert api.run(pr.env(api, "check")) == 1
    assert len(calls) == 1 and "sarif" in calls[0]
    sarif = json.loads((pr.repo / "rnnfix.sarif").read_text())
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["RNF002"]


# the PR edits lines 6-7 of a file with bugs at 4 and 9 (context of its hunk) and 20
BASE = (
    ONE_LINE
    + "a = 1\nb = 2\nc = 3\nd = 4\nmodel.module.train()\n"
    + "".join(f"z{i} = {i}\n" for i in range(10))
    + "model.module.train()\n"
)
HEAD = BASE.replace("b = 2\nc = 3\n", "b = 20\nmodel.module.eval()\n")


@pytest.mark.parametrize(
    ("mode", "lines"),
    [
        ("added", [7]),
        ("diff_context", [4, 7, 9]),
        ("file", [4, 7, 9, 20]),
        ("nofilter", [4, 7, 9, 20]),
    ],
)
def test_filter_mode_on_annotations(
    tmp_path: Path,
    api: FakeGitHub,
    capfd: pytest.CaptureFixture[str],
    mode: str,
    lines: list[int],
) -> None:
    pr = make_pr(tmp_path, {"f.py": BASE, "other.py": ONE_LINE}, {"f.py": HEAD})
    env = pr.env(api, "check", RNNFIX_FILTER_MODE=mode, RNNFIX_CHANGED_ONLY="false")
    code = api.run(env)
    out = capfd.readouterr().out
    got = sorted(
        int(line.split(",line=")[1].split(",")[0])
        for line in out.splitlines()
        if "file=f.py" in line
    )
    assert got == lines and code == 1
    assert ("file=other.py" in out) is (mode == "nofilter")


def test_filter_mode_on_suggestions(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"f.py": BASE}, {"f.py": HEAD})
    api.files = pr.patches()
    assert api.run(pr.env(api, "suggest", RNNFIX_FILTER_MODE="added")) == 0
    (review,) = api.sent("POST", "/pulls/7/reviews")
    assert [c["line"] for c in review["comments"]] == [7]
    assert "-model.module.train()" not in review["body"]  # the old bugs stay out
    api.reviews.clear()
    api.review_comments.clear()
    api.requests.clear()
    assert api.run(pr.env(api, "suggest")) == 0  # diff_context, the default
    (review,) = api.sent("POST", "/pulls/7/reviews")
    assert [c["line"] for c in review["comments"]] == [4, 7, 9]


def test_unknown_filter_mode(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"ok.py": CLEAN}, {"wrap.py": ONE_LINE})
    assert api.run(pr.env(api, "check", RNNFIX_FILTER_MODE="lines")) == 1
    assert (
        "filter-mode must be one of added, diff_context, file, nofilter" in capfd.readouterr().err
    )


def test_filter_mode_without_the_base_shows_everything(
    tmp_path: Path, api: FakeGitHub, capfd: pytest.CaptureFixture[str]
) -> None:
    pr = make_pr(tmp_path, {"old.py": ONE_LINE}, {"ok.py": CLEAN})
    event = json.loads(pr.event_path.read_text())
    event["pull_request"]["base"]["sha"] = "f" * 40  # a shallow clone lacks it
    pr.event_path.write_text(json.dumps(event))
    assert api.run(pr.env(api, "check", RNNFIX_CHANGED_ONLY="false")) == 1
    out = capfd.readouterr().out
    assert "::warning title=rnnfix::filter-mode diff_context is off" in out
    assert "fetch-depth: 0" in out
    assert "file=old.py" in out


def test_annotations_are_what_the_github_format_writes(tmp_path: Path) -> None:
    """Check mode writes annotations from its SARIF run: the same lines as
    ``--output-format github`` for every finding."""
    from rnnfix.ci import run
    from rnnfix.ci.findings import parse_sarif, workflow_commands

    (tmp_path / "a.py").write_text(RNF001)
    (tmp_path / "b.py").write_text(ONE_LINE)
    common = ["apply", "--check", "--no-cache", "--quiet", "--output-format"]
    github = run.rnnfix(tmp_path, [*common, "github", "."]).stdout
    report = parse_sarif(run.rnnfix(tmp_path, [*common, "sarif", "."]).stdout)
    assert workflow_commands(report, report.findings) == github
    assert github.count("::warning") == 2
