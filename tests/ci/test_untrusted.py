"""Issue 23.1: a pull request's checkout is untrusted code; neither the
action's Python starts nor the bot's rnnfix and git runs may execute it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rnnfix.ci import run
from tests.ci.conftest import ONE_LINE, FakeGitHub, git, make_pr

ROOT = Path(__file__).parents[2]
# modules rnnfix, the bot or pip import early; each writes a marker if it runs
PLANTED = ("json", "click", "libcst", "runpy", "subprocess", "rnnfix_marker_probe")


def plant(repo: Path) -> Path:
    marker = repo / "PWNED"
    for name in PLANTED:
        (repo / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\nraise SystemExit(99)\n"
        )
    # a package too: `python -m pip` would run pip/__main__.py
    (repo / "pip").mkdir()
    (repo / "pip" / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write('pip\\n')\n")
    return marker


@pytest.mark.parametrize("mode", ["check", "suggest", "commit"])
def test_planted_modules_never_run(tmp_path: Path, api: FakeGitHub, mode: str) -> None:
    pr = make_pr(tmp_path, {"ok.py": "x = 1\n"}, {"wrap.py": ONE_LINE})
    marker = plant(pr.repo)
    git(pr.repo, "add", "-A")
    git(pr.repo, "commit", "-q", "-m", "planted")
    pr.head = git(pr.repo, "rev-parse", "HEAD").strip()
    import json

    event = json.loads(pr.event_path.read_text())
    event["pull_request"]["head"]["sha"] = pr.head
    pr.event_path.write_text(json.dumps(event))
    api.files = pr.patches()
    code = api.run(pr.env(api, mode))
    assert not marker.exists(), marker.read_text()
    assert code == (1 if mode == "check" else 0)  # rnnfix ran, and found the bug


def test_rnnfix_starts_without_the_current_folder(tmp_path: Path) -> None:
    marker = plant(tmp_path)
    done = run.rnnfix(tmp_path, ["--version"])
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    # what the bot used to run: `python -m rnnfix` there imported the planted
    # json.py; its __main__ now drops the folder itself (issue 38, item 11)
    old = subprocess.run(
        [sys.executable, "-m", "rnnfix", "--version"],
        cwd=tmp_path,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"},
        check=False,
    )
    assert old.returncode == 0 and not marker.exists(), old.stderr


def test_the_action_step_starts_safely(tmp_path: Path, api: FakeGitHub) -> None:
    """The shell of action.yml's run step, as the runner runs it: in the
    workspace, with the step's environment."""
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    steps = {s["name"].split(" (")[0]: s for s in action["runs"]["steps"]}
    pr = make_pr(tmp_path, {"ok.py": "x = 1\n"}, {"wrap.py": ONE_LINE})
    marker = plant(pr.repo)
    for name in ("Install rnnfix", "Run rnnfix"):
        step = steps[name]
        assert step["env"]["PYTHONSAFEPATH"] == "1"
        script = step["run"].replace("${{ inputs.python }}", sys.executable)
        if name == "Install rnnfix":
            # no network here: check the start, not the install
            script = script.replace(" -m pip install --quiet", " -m pip --version #")
        script = script.replace("${{ github.action_path }}", str(ROOT))
        env = {
            **os.environ,
            **pr.env(api, "check"),
            "PYTHONSAFEPATH": "1",
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p and Path(p).is_dir()),
        }
        done = subprocess.run(
            ["bash", "-c", script], cwd=pr.repo, env=env, capture_output=True, text=True
        )
        assert not marker.exists(), (name, marker.read_text())
        if name == "Run rnnfix":
            assert done.returncode == 1 and "RNF002" in done.stdout, done.stderr


def test_git_runs_neutralised(tmp_path: Path) -> None:
    """A fsmonitor hook and a hooks folder in the repository's config never run."""
    pr_repo = tmp_path / "r"
    pr_repo.mkdir()
    git(pr_repo, "init", "-q")
    marker = tmp_path / "PWNED"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    hook.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text(hook.read_text())
    (hooks / "pre-commit").chmod(0o755)
    git(pr_repo, "config", "core.fsmonitor", str(hook))
    git(pr_repo, "config", "core.hooksPath", str(hooks))
    (pr_repo / "a.py").write_text("x = 1\n")
    assert run.git(pr_repo, ["add", "a.py"]).returncode == 0
    args = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "m"]
    assert run.git(pr_repo, args).returncode == 0
    assert run.git(pr_repo, ["diff", "--name-only", "HEAD"]).returncode == 0
    assert run.git(pr_repo, ["status", "--porcelain"]).returncode == 0
    assert not marker.exists()
    subprocess.run(["git", "status"], cwd=pr_repo, capture_output=True, check=False)
    assert marker.exists()  # the same config does run with plain git


def test_a_planted_sarif_link_is_replaced_not_followed(tmp_path: Path, api: FakeGitHub) -> None:
    pr = make_pr(tmp_path, {"ok.py": "x = 1\n"}, {"wrap.py": ONE_LINE})
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    (pr.repo / "rnnfix.sarif").symlink_to(outside)
    assert api.run(pr.env(api, "check")) == 1
    assert outside.read_text() == "keep me\n"
    sarif = pr.repo / "rnnfix.sarif"
    assert not sarif.is_symlink() and '"ruleId": "RNF002"' in sarif.read_text()
