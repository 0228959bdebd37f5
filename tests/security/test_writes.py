"""Item 12: the summary counts only what was written; a file swapped for a
link is never replaced; read-only files and folders are refused, as root too."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rnnfix.config.settings import Settings
from rnnfix.run.process import Outcome, process_files
from rnnfix.source.files import FileProblem, write_atomic

from .conftest import BUGGY, run_rnnfix


def test_fixes_that_were_not_written_are_not_counted(project: Path) -> None:
    for i in range(3):
        path = project / f"t{i}.py"
        path.write_text(BUGGY)
        path.chmod(0o444)
    (project / "train.py").unlink()
    run = run_rnnfix("apply", str(project))
    assert run.returncode == 2
    assert "3 files checked, 0 changed, 0 fixes applied" in run.stderr, run.stderr
    assert run.stderr.count("cannot write: file is read-only") == 3


def test_a_file_swapped_for_a_link_is_not_replaced(tmp_path: Path) -> None:
    """The file rnnfix read became a link (to a file with the same bytes)
    before the write: the link stays a link, and its target is untouched."""
    target = tmp_path / "elsewhere.py"
    target.write_text(BUGGY)
    path = tmp_path / "train.py"
    path.symlink_to(target)
    with pytest.raises(FileProblem, match="no longer a regular file"):
        write_atomic(path, b"fixed\n", expected=BUGGY.encode())
    assert path.is_symlink() and target.read_text() == BUGGY
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.py", "train.py"]


def test_a_file_swapped_for_a_link_during_the_run(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rnnfix.run.process as process

    train = project / "train.py"
    target = tmp_path / "outside.py"
    target.write_text(BUGGY)
    real = process.write_atomic

    def swap_then_write(path: Path, data: bytes, expected: bytes | None = None) -> None:
        path.unlink()
        path.symlink_to(target)  # between the analysis and the write
        real(path, data, expected=expected)

    monkeypatch.setattr(process, "write_atomic", swap_then_write)
    (result,) = process_files([train], Settings(), write=True, jobs=1, cache=None)
    assert result.outcome is Outcome.FAILED and "no longer a regular file" in (result.error or "")
    assert train.is_symlink() and target.read_text() == BUGGY


def test_a_file_in_a_read_only_folder_is_refused(project: Path) -> None:
    """As root too: a rename in a read-only folder would succeed."""
    folder = project / "frozen"
    folder.mkdir()
    path = folder / "train.py"
    path.write_text(BUGGY)
    folder.chmod(0o555)
    try:
        run = run_rnnfix("apply", str(path))
    finally:
        folder.chmod(0o755)
    assert run.returncode == 2
    assert f"{path}: cannot write: its folder is read-only" in run.stderr
    assert path.read_text() == BUGGY


def test_a_read_only_file_is_refused_as_root_too(project: Path) -> None:
    path = project / "train.py"
    path.chmod(0o444)
    run = run_rnnfix("apply", str(path))
    assert run.returncode == 2 and "cannot write: file is read-only" in run.stderr
    assert path.read_text() == BUGGY
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
