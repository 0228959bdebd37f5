"""Run a command under the mode sanitizer, in a subprocess with a time limit.

The command runs exactly as the user would run it (``python SCRIPT ARGS``
keeps ``sys.argv``, ``sys.path[0]`` and ``__main__`` as Python sets them);
the sanitizer reaches it, and every Python process it starts, through the
environment: ``bootstrap/sitecustomize.py`` on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from rnnfix.verify.records import merge_records, read_process_reports
from rnnfix.verify.result import VerifyResult

BOOTSTRAP_DIR = Path(__file__).resolve().parent / "bootstrap"
#: Seconds between SIGTERM and SIGKILL when the time limit is reached.
KILL_GRACE_S = 5.0


def script_command(script: str, args: Sequence[str] = (), python: str | None = None) -> list[str]:
    """``python SCRIPT ARGS``."""
    return [python or sys.executable, script, *args]


def module_command(module: str, args: Sequence[str] = (), python: str | None = None) -> list[str]:
    """``python -m MODULE ARGS``."""
    return [python or sys.executable, "-m", module, *args]


def command_from_words(words: Sequence[str], python: str | None = None) -> list[str]:
    """What ``rnnfix verify WORDS...`` runs.

    ``train.py [--] ARGS`` (first word ends in ``.py``) runs the script with
    this Python; anything else (``torchrun ...``, ``python train.py``,
    ``./run.sh``) is a launcher command run as given.
    """
    if not words:
        raise ValueError("nothing to run")
    first, rest = words[0], list(words[1:])
    if first.endswith((".py", ".pyw")):
        if rest[:1] == ["--"]:
            rest = rest[1:]
        return script_command(first, rest, python)
    return list(words)


def split_command(command: str | Sequence[str]) -> list[str]:
    """A shell-like string (``"python train.py --epochs 1"``) or a word list."""
    return shlex.split(command) if isinstance(command, str) else list(command)


def sanitizer_env(
    report_dir: Path,
    *,
    mode: str = "raise",
    until_clean_cycle: bool = False,
    base: Mapping[str, str] | None = None,
    stop_when_seen: bool = False,
) -> dict[str, str]:
    """The environment that activates the sanitizer in every child process."""
    env = dict(os.environ if base is None else base)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOTSTRAP_DIR) + (os.pathsep + path if path else "")
    env["RNNFIX_VERIFY_MODE"] = mode
    env["RNNFIX_VERIFY_REPORT"] = str(report_dir)
    # "seen" (verify --fix): a model seen training in eval mode counts as done.
    cycle = ("seen" if stop_when_seen else "1") if until_clean_cycle else "0"
    env["RNNFIX_VERIFY_UNTIL_CLEAN_CYCLE"] = cycle
    return env


def run_verify(
    command: Sequence[str],
    *,
    timeout: float | None = 600.0,
    mode: str = "raise",
    until_clean_cycle: bool = False,
    strict: bool = False,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    capture: bool = False,
    stdout: IO[Any] | int | None = None,
    stop_when_seen: bool = False,
) -> VerifyResult:
    """Run ``command`` under the sanitizer and judge it.

    ``capture``: keep the command's output in the result instead of letting
    it through. ``stdout``: where the command's stdout goes otherwise (the
    CLI sends it to stderr under ``--json``). ``stop_when_seen`` (with
    ``until_clean_cycle``): stop once every model's mode bug has been seen, as
    ``verify --fix`` needs. Never raises for the command's
    own failures, nor when it cannot be started (``launch_error``).
    """
    argv = list(command)
    with tempfile.TemporaryDirectory(prefix="rnnfix-verify-") as tmp:
        report_dir = Path(tmp)
        child_env = sanitizer_env(
            report_dir,
            mode=mode,
            until_clean_cycle=until_clean_cycle,
            base=env,
            stop_when_seen=stop_when_seen,
        )
        started = time.monotonic()
        launch_error = None
        try:
            returncode, timed_out, out, err = _run(
                argv, child_env, cwd, timeout, capture=capture, stdout=stdout
            )
        except OSError as error:
            returncode, timed_out, out, err = None, False, None, None
            launch_error = f"{argv[0]}: {error.strerror or error}"
        duration = time.monotonic() - started
        reports = read_process_reports(report_dir)
    return VerifyResult(
        command=tuple(argv),
        returncode=returncode,
        timed_out=timed_out,
        timeout_s=timeout,
        duration_s=duration,
        mode=mode,
        until_clean_cycle=until_clean_cycle,
        strict=strict,
        records=tuple(merge_records(reports)),
        processes=tuple(reports),
        stdout=out,
        stderr=err,
        launch_error=launch_error,
    )


def _run(
    argv: list[str],
    env: dict[str, str],
    cwd: Path | str | None,
    timeout: float | None,
    *,
    capture: bool,
    stdout: IO[Any] | int | None,
) -> tuple[int | None, bool, str | None, str | None]:
    # A new session, so that on timeout the whole tree (torchrun and its
    # workers) can be stopped with one signal to the process group.
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE if capture else stdout,
        stderr=subprocess.PIPE if capture else None,
        text=capture,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, False, out, err
    except subprocess.TimeoutExpired:
        _stop_group(proc)
        out, err = proc.communicate()
        return proc.returncode, True, out, err
    except BaseException:  # KeyboardInterrupt: take the children down with us
        _stop_group(proc)
        raise


def _stop_group(proc: subprocess.Popen[Any]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=KILL_GRACE_S)
            # The leader is gone; make sure no worker outlives it.
            os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except (ProcessLookupError, PermissionError):
            return
