"""Item 4: ``--changed-since`` runs git, and a repository's own
``.git/config`` must not make git run a command (file-system monitor,
filter drivers, hooks)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rnnfix.run.gitchanges import changed_files

from .conftest import BUGGY, run_rnnfix

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def hostile(project: Path, tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "marker"
    _git(project, "init", "-q")
    _git(project, "config", "user.email", "a@b")
    _git(project, "config", "user.name", "a")
    (project / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    _git(project, "add", ".")
    _git(project, "commit", "-qm", "init")
    command = f"sh -c 'echo ran >> {marker}'; cat"
    for key, value in (
        ("core.fsmonitor", f"echo ran >> {marker}; false"),
        ("filter.evil.clean", command),
        ("filter.evil.smudge", command),
        ("filter.evil.process", command),
        ("diff.evil.textconv", command),
        ("diff.external", command),
        ("core.pager", command),
    ):
        _git(project, "config", key, value)
    (project / "train.py").write_text(BUGGY + "\n# edited\n")
    (project / "new.py").write_text(BUGGY)
    return project, marker


def test_changed_files_runs_no_command_the_repository_configures(
    hostile: tuple[Path, Path],
) -> None:
    project, marker = hostile
    changed = changed_files("HEAD", project)
    assert changed == {(project / "train.py").resolve(), (project / "new.py").resolve()}
    assert not marker.exists()


def test_apply_changed_since_runs_no_command_the_repository_configures(
    hostile: tuple[Path, Path],
) -> None:
    project, marker = hostile
    run = run_rnnfix("apply", "--check", "--changed-since", "HEAD", str(project))
    assert run.returncode == 1 and "train.py" in run.stdout, run.stderr
    assert not marker.exists()
