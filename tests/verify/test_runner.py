"""The runner: real scripts in real subprocesses, judged by the sanitizer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from rnnfix.verify.records import CLEAN_CYCLE, CUDNN_BACKWARD_IN_EVAL  # noqa: E402
from rnnfix.verify.runner import command_from_words, module_command, run_verify  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "verify"

CUDNN_ERROR = "cudnn RNN backward can only be called in training mode"


def _verify(*words: str, **kw: object):  # type: ignore[no-untyped-def]
    kw.setdefault("timeout", 60)
    return run_verify(command_from_words(words), capture=True, **kw)  # type: ignore[arg-type]


def test_buggy_loop_fails_with_cudnn_error_and_locations() -> None:
    result = _verify(str(FIXTURES / "buggy_loop.py"))
    assert not result.ok and result.exit_code == 1
    assert result.returncode == 1
    assert f"RuntimeError: {CUDNN_ERROR}\n" in (result.stderr or "")
    [record] = result.errors
    assert record.kind == CUDNN_BACKWARD_IN_EVAL
    source = (FIXTURES / "buggy_loop.py").read_text().splitlines()
    assert "loss.backward()" in source[record.backward[0].line - 1]
    assert "self.lstm(x)" in source[record.forward[0].line - 1]
    assert "model(x)" in source[record.forward[1].line - 1]


def test_record_mode_keeps_running_and_collects_everything() -> None:
    # --until-clean-cycle must not stop a run that shows a bug.
    result = _verify(
        str(FIXTURES / "buggy_loop.py"), "--epochs", "3", mode="record", until_clean_cycle=True
    )
    assert result.returncode == 0 and not result.ok
    assert not result.stopped_after_clean_cycle
    kinds = {r.kind: r for r in result.errors}
    assert kinds[CUDNN_BACKWARD_IN_EVAL].count == 8  # epochs 2 and 3, 4 batches each
    assert "optimizer-step-in-eval" in kinds


def test_script_sees_what_python_would_give_it() -> None:
    script = str(FIXTURES / "show_argv.py")
    plain = subprocess.run(
        [sys.executable, script, "a", "--b"], capture_output=True, text=True, check=True
    )
    result = _verify(script, "--", "a", "--b")
    assert result.returncode == 0
    assert json.loads(result.stdout or "") == json.loads(plain.stdout)


def test_hand_fixed_loop_passes_as_module() -> None:
    result = run_verify(
        module_command("fixed_loop", ["--epochs", "2"]), cwd=FIXTURES, capture=True, timeout=60
    )
    assert result.ok, result.stderr
    assert result.records == ()  # its no_grad validation triggers nothing
    assert result.rnn_forwards > 0
    assert "epoch 1" in (result.stdout or "")
    assert result.processes[0].argv[0].endswith("fixed_loop.py")


def test_timeout_stops_the_command() -> None:
    result = _verify(str(FIXTURES / "sleeper.py"), timeout=2)
    assert result.timed_out and not result.ok
    assert result.duration_s < 20
    assert any("did not finish" in reason for reason in result.failures())


def test_until_clean_cycle_stops_long_training_successfully() -> None:
    result = _verify(
        str(FIXTURES / "fixed_loop.py"),
        "--epochs",
        "1000",
        "--sleep",
        "0.2",
        until_clean_cycle=True,
    )
    assert result.ok, result.stderr
    assert result.stopped_after_clean_cycle
    assert [r.kind for r in result.records] == [CLEAN_CYCLE]
    assert "epoch 0" in (result.stdout or "")
    assert "epoch 3" not in (result.stdout or "")


def test_existing_sitecustomize_still_runs(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = '1'\n")
    script = tmp_path / "check.py"
    script.write_text(
        "import os, torch\n"
        "from rnnfix.verify import sanitizer\n"
        "print(os.environ.get('USER_SITE_RAN'), sanitizer.is_installed())\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    result = run_verify(command_from_words([str(script)]), env=env, capture=True, timeout=60)
    assert result.ok, result.stderr
    assert (result.stdout or "").split() == ["1", "True"]


def test_command_that_cannot_start() -> None:
    result = run_verify(["/nonexistent/launcher", "x"], capture=True, timeout=10)
    assert not result.ok and result.launch_error
    assert result.exit_code == 2


def test_process_without_torch_is_not_verified(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text("print('no torch here')\n")
    result = _verify(str(script))
    assert result.returncode == 0 and not result.ok
    assert "nothing was verified" in " ".join(result.failures())
