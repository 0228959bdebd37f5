"""Item 3: nothing a repository ships in ``.rnnfix_cache/`` makes rnnfix
write outside the tree: links there are never followed."""

from __future__ import annotations

import os
from pathlib import Path

from rnnfix.config.settings import Settings
from rnnfix.run.cache import CACHE_DIR, ResultCache
from rnnfix.run.process import process_files

from .conftest import run_rnnfix


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def test_a_cache_folder_that_is_a_link_is_refused(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / CACHE_DIR).symlink_to(outside, target_is_directory=True)
    run = run_rnnfix("apply", "--check", str(project), cache=True)
    assert run.returncode == 1 and "RNF001" in run.stdout
    assert "is a symbolic link; the cache is not used" in run.stderr
    assert list(outside.iterdir()) == []


def test_a_dangling_gitignore_link_is_not_written_through(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "outside" / "created-by-rnnfix"
    target.parent.mkdir()
    folder = project / CACHE_DIR
    folder.mkdir()
    (folder / ".gitignore").symlink_to(target)
    run = run_rnnfix("apply", "--check", str(project), cache=True)
    assert "RNF001" in run.stdout
    assert not target.exists()
    assert (folder / ".gitignore").is_symlink()


def test_a_cache_file_that_is_a_link_is_neither_read_nor_written_through(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret"
    secret.write_bytes(b"not rnnfix's")
    cache = ResultCache(project, Settings())
    folder = project / CACHE_DIR
    folder.mkdir()
    cache.file.symlink_to(secret)
    cache = ResultCache(project, Settings())
    assert any("symbolic link" in w for w in cache.warnings)
    process_files([project / "train.py"], Settings(), write=False, jobs=1, cache=cache)
    assert secret.read_bytes() == b"not rnnfix's"
    assert _tree(outside) == {"secret": b"not rnnfix's"}


def test_a_link_in_the_folder_to_a_folder_outside_is_left_alone(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = project / CACHE_DIR
    folder.mkdir()
    os.symlink(outside, folder / "elsewhere", target_is_directory=True)
    run_rnnfix("apply", "--check", str(project), cache=True)
    run_rnnfix("apply", str(project), cache=True)
    assert list(outside.iterdir()) == []
    assert (folder / "elsewhere").is_symlink()
