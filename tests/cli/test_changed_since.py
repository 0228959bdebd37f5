"""``rnnfix apply --changed-since REF``: only files changed since REF are
reported and fixed; the rest of the project still feeds the cross-file analysis."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rnnfix.cli.app import cli

PROJECT = Path(__file__).parents[2] / "fixtures" / "project" / "helper_in_other_file"
BUGGY = "import torch.nn as nn\n\nmodel = nn.DataParallel(nn.Linear(2, 2))\nmodel.module.train()\n"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "old.py").write_text(BUGGY)
    (tmp_path / "ignored.py").write_text(BUGGY)
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def run(repo: Path, *args: str) -> Result:
    return CliRunner().invoke(
        cli, ["apply", "--no-cache", "--select", "RNF002", *args, str(repo)], catch_exceptions=False
    )


def test_only_changed_files_are_reported(repo: Path) -> None:
    # committed, staged, unstaged and untracked changes all count
    (repo / "committed.py").write_text(BUGGY)
    git(repo, "add", "committed.py")
    git(repo, "commit", "-q", "-m", "c")
    (repo / "staged.py").write_text(BUGGY)
    git(repo, "add", "staged.py")
    (repo / "untracked.py").write_text(BUGGY)
    result = run(repo, "--check", "--changed-since", "HEAD~1")
    assert result.exit_code == 1
    reported = {line.split(":")[0].rsplit("/", 1)[-1] for line in result.output.splitlines()}
    assert {"committed.py", "staged.py", "untracked.py"} <= reported
    assert "old.py" not in reported and "ignored.py" not in reported
    assert "3 files checked" in result.output


def test_unstaged_edit_and_rename(repo: Path) -> None:
    git(repo, "mv", "old.py", "renamed.py")
    git(repo, "commit", "-q", "-m", "rename")
    (repo / "renamed.py").write_text(BUGGY + "# edited\n")
    result = run(repo, "--changed-since", "HEAD~1")
    assert result.exit_code == 0, result.output
    assert "model.train()" in (repo / "renamed.py").read_text()
    assert "1 file checked" in result.output


def test_nothing_changed(repo: Path) -> None:
    result = run(repo, "--check", "--changed-since", "HEAD")
    assert result.exit_code == 0
    assert "0 files checked" in result.output
    assert "module.train()" in (repo / "old.py").read_text()


def test_cross_file_analysis_reads_unchanged_files(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    for f in PROJECT.glob("*.py"):
        shutil.copy(f, tmp_path / f.name)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "train.py").write_text((tmp_path / "train.py").read_text() + "\n")
    result = CliRunner().invoke(
        cli, ["apply", "--no-cache", "--diff", "--changed-since", "HEAD", str(tmp_path)]
    )
    # evaluate() in the unchanged utils.py leaves the model in eval mode:
    # the changed train.py needs model.train(), only found through utils.py.
    assert "+++ " in result.output and "train.py" in result.output
    assert "model.train()" in result.output
    assert "utils.py" not in result.output.replace("from utils", "")


def test_unknown_ref(repo: Path) -> None:
    result = run(repo, "--changed-since", "no-such-branch")
    assert result.exit_code == 2
    assert "unknown revision 'no-such-branch'" in result.output


def test_outside_git(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(BUGGY)
    result = run(tmp_path, "--changed-since", "HEAD")
    assert result.exit_code == 2
    assert "not inside a git repository" in result.output
