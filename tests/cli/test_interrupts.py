"""Reliability under faults: kills, interrupts, races, vanished files, newer
syntax. Every test runs the real CLI in a subprocess where a signal is involved."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rnnfix
from rnnfix.config.settings import Settings
from rnnfix.run.process import NEWER_SYNTAX, Outcome, process_text
from rnnfix.source.files import FileProblem, discover, write_atomic

BUGGY = """\
import torch

model = torch.nn.LSTM(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x in loader:
        optimizer.zero_grad()
        model(x)[0].sum().backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x in val_loader:
            model(x)
"""


def _tree(root: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        package = root / f"pkg{i // 50}"
        package.mkdir(parents=True, exist_ok=True)
        path = package / f"train_{i:03}.py"
        path.write_text(BUGGY)
        paths.append(path)
    return paths


def _start(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "RNNFIX_NO_CACHE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "rnnfix", "apply", "--jobs", "1", *args, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for_first_write(paths: list[Path], proc: subprocess.Popen[str]) -> bool:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.read_text() != BUGGY for p in paths[:: max(1, len(paths) // 20)]):
            return True
        time.sleep(0.002)
    return False


def test_sigkill_in_the_writing_phase_leaves_every_file_old_or_new(tmp_path: Path) -> None:
    fixed = rnnfix.fix(BUGGY).fixed
    assert fixed != BUGGY
    paths = _tree(tmp_path, 200)
    proc = _start(tmp_path)
    if not _wait_for_first_write(paths, proc):
        pytest.skip("the run finished before a write could be observed")
    time.sleep(random.uniform(0, 0.05))
    proc.kill()
    proc.wait()
    contents = [p.read_text() for p in paths]
    assert all(c in (BUGGY, fixed) for c in contents)
    # A temporary file that survived the kill is never taken for code ...
    leftovers = [p for p in tmp_path.rglob(".*.rnnfix")]
    assert all(p not in set(discover([tmp_path])) for p in leftovers)
    # ... and the next run over the folder removes it and finishes the job.
    proc = _start(tmp_path)
    proc.communicate(timeout=600)
    assert not list(tmp_path.rglob(".*.rnnfix"))
    assert all(p.read_text() == fixed for p in paths)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_cleanly_and_says_how_far(tmp_path: Path, sig: signal.Signals) -> None:
    fixed = rnnfix.fix(BUGGY).fixed
    paths = _tree(tmp_path, 150)
    proc = _start(tmp_path)
    if not _wait_for_first_write(paths, proc):
        pytest.skip("the run finished before a write could be observed")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    if proc.returncode in (0, 1):
        pytest.skip("the run finished before the signal arrived")
    assert proc.returncode == 128 + sig
    assert f"interrupted ({sig.name}) after checking 150 of 150 files" in err
    assert "Traceback" not in err
    contents = [p.read_text() for p in paths]
    assert all(c in (BUGGY, fixed) for c in contents)
    written = sum(c == fixed for c in contents)
    assert f"; {written} changed file(s) written" in err
    assert not list(tmp_path.rglob(".*.rnnfix"))


def test_interrupt_while_checking_writes_nothing(tmp_path: Path) -> None:
    paths = _tree(tmp_path, 300)
    proc = _start(tmp_path, "--diff")
    time.sleep(random.uniform(2.0, 4.0))  # while checking
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode in (0, 1):
        pytest.skip("the run finished before the signal arrived")
    if proc.returncode == -signal.SIGINT:
        pytest.skip("the signal arrived while the interpreter was still starting")
    assert proc.returncode == 130
    assert "rnnfix: interrupted (SIGINT)" in err and "written" not in err
    assert "Traceback" not in err
    assert all(p.read_text() == BUGGY for p in paths)


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text("old\n")
    path.write_text("saved by an editor\n")
    with pytest.raises(FileProblem, match="changed on disk while rnnfix ran"):
        write_atomic(path, b"fixed\n", expected=b"old\n")
    assert path.read_text() == "saved by an editor\n"
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]


def test_a_vanished_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(FileProblem, match="vanished"):
        write_atomic(tmp_path / "gone.py", b"x = 1\n", expected=b"x = 0\n")


def test_leftover_temporary_files_are_removed_by_the_next_walk(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("x = 1\n")
    leftover = tmp_path / ".train.py.ab12cd_9.rnnfix"
    leftover.write_text("half")
    lookalike = tmp_path / "notes.rnnfix"  # not ours: kept
    lookalike.write_text("mine")
    assert [p.name for p in discover([tmp_path])] == ["train.py"]
    assert not leftover.exists() and lookalike.exists()


def test_newer_syntax_is_named_as_such() -> None:
    # Mode calls: a file no rule can report in is not parsed (``filegate``).
    source = "class Foo:\n    def f[T](self, a: T) -> T:\n        return a.eval()\n"
    result = process_text("new.py", source, Settings())
    if sys.version_info < (3, 12):
        assert result.outcome is Outcome.FAILED
        assert result.error == NEWER_SYNTAX and result.error_line == 2
    else:
        assert result.outcome is Outcome.UNCHANGED
    broken = process_text("bad.py", "def f(:\n    model.eval()\n", Settings())
    assert broken.error is not None and broken.error.startswith("cannot parse")
