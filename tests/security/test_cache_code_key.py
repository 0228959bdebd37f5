"""The cache keys rnnfix's own code by its bytes: right after an edit of
rnnfix itself, a warm run never replays what the code before the edit found
(issue 28; the key was once the sizes and mtimes of ``rnnfix/run/`` only, so
an edit of a rule went unseen)."""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rnnfix
from rnnfix.run import cache

from .conftest import BUGGY

_RULE = Path("rules") / "rnf001_train_step_in_eval_mode.py"
_SAID = "may be in eval mode at this training step"
_EDITED = "may be in EVAL mode at this training step"  # the same size


def _copy_of_rnnfix(tmp_path: Path) -> Path:
    """rnnfix's own source in a folder of the test's (never the checkout's)."""
    home = tmp_path / "install"
    shutil.copytree(
        Path(rnnfix.__file__).parent, home / "rnnfix", ignore=shutil.ignore_patterns("__pycache__")
    )
    # Compiled once, as an install is (each run compiling every module from
    # source cost this test most of its time).
    compileall.compile_dir(home / "rnnfix", quiet=1)
    return home


def _run(home: Path, tree: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("RNNFIX_NO_CACHE", None)
    env["PYTHONPATH"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "rnnfix", "apply", "--check", str(tree)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tree,
        env=env,
        timeout=120,
    )


def _edit_keeping_size_and_mtime(path: Path, old: str, new: str) -> None:
    assert len(old.encode()) == len(new.encode())
    st = path.stat()
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_an_edit_of_a_rule_that_keeps_size_and_mtime_is_not_answered_from_the_cache(
    tmp_path: Path,
) -> None:
    home = _copy_of_rnnfix(tmp_path)
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tree / "train.py").write_text(BUGGY)
    first = _run(home, tree)
    assert first.returncode == 1 and _SAID in first.stdout, first.stdout + first.stderr
    assert _SAID in _run(home, tree).stdout  # warm, from the cache
    rule = home / "rnnfix" / _RULE
    _edit_keeping_size_and_mtime(rule, _SAID, _EDITED)
    # Python would take the old bytecode for the edited module (its check is
    # the source's size and mtime too): what is tested is rnnfix's cache.
    for compiled in (rule.parent / "__pycache__").glob(f"{rule.stem}.*.pyc"):
        compiled.unlink()
    after = _run(home, tree)
    assert _EDITED in after.stdout and _SAID not in after.stdout, after.stdout


def test_the_code_key_is_the_bytes_of_every_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _copy_of_rnnfix(tmp_path)
    monkeypatch.setattr(cache, "_PACKAGE", home / "rnnfix")
    monkeypatch.setattr(cache, "_code", None)
    before = cache._code_fingerprint()
    assert cache._code_fingerprint() == before  # computed once per process
    # A module in a sub-package, not only rnnfix/run/ (the old key's reach).
    target = home / "rnnfix" / "analysis" / "modes" / "intent.py"
    data = target.read_bytes()
    flipped = data.replace(b"def ", b"def\t", 1)
    assert len(flipped) == len(data) and flipped != data
    st = target.stat()
    target.write_bytes(flipped)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    monkeypatch.setattr(cache, "_code", None)
    assert cache._code_fingerprint() != before
