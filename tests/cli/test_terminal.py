"""Terminal niceties: colour only where wanted (``--color``, ``NO_COLOR``,
``FORCE_COLOR``) and a progress bar only on a terminal."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from rnnfix.cli.app import cli
from rnnfix.report import colour
from rnnfix.report.progressbar import ProgressBar, line, wanted
from tests.cli.conftest import BUGGY


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("choice", "env", "tty", "expected"),
    [
        ("auto", {}, True, True),
        ("auto", {}, False, False),
        ("auto", {"NO_COLOR": "1"}, True, False),
        ("auto", {"NO_COLOR": ""}, True, True),  # set but empty: not asked for
        ("auto", {"FORCE_COLOR": "1"}, False, True),
        ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False, False),  # NO_COLOR wins
        ("always", {"NO_COLOR": "1"}, False, True),  # the flag wins over both
        ("never", {"FORCE_COLOR": "1"}, True, False),
    ],
)
def test_colour_precedence(choice: str, env: dict[str, str], tty: bool, expected: bool) -> None:
    stream = _Tty() if tty else io.StringIO()
    assert colour.use_colour(choice, stream, env) is expected


def _apply(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    (tmp_path / "buggy.py").write_text(BUGGY)
    result = CliRunner().invoke(
        cli, ["apply", "--select", "RNF002", *args, str(tmp_path / "buggy.py")], env=env
    )
    return result.stdout


def test_diff_and_diagnostics_are_coloured_on_request(tmp_path: Path) -> None:
    diff = _apply(tmp_path, "--diff", "--color", "always")
    assert "\x1b[31m-model.module.train()" in diff
    assert "\x1b[32m+model.train()" in diff
    assert "\x1b[36m@@ " in diff
    check = _apply(tmp_path, "--check", "--color", "always")
    assert "\x1b[31m\x1b[1mRNF002\x1b[0m" in check
    assert "\x1b[36m [*]\x1b[0m" in check


def test_no_colour_off_a_terminal_or_with_no_color(tmp_path: Path) -> None:
    assert "\x1b[" not in _apply(tmp_path, "--diff")
    assert "\x1b[" not in _apply(tmp_path, "--diff", env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[" in _apply(tmp_path, "--diff", env={"FORCE_COLOR": "1", "NO_COLOR": ""})


def test_machine_formats_are_never_coloured(tmp_path: Path) -> None:
    out = _apply(tmp_path, "--check", "--output-format", "json", "--color", "always")
    assert "\x1b[" not in out


def test_colour_keeps_the_text() -> None:
    text = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n context\n"
    assert click_unstyle(colour.diff(text)) == text
    diag = "x.py:cell 2:3:4: RNF001 [*] message\nother line\n"
    assert click_unstyle(colour.diagnostics(diag)) == diag


def click_unstyle(text: str) -> str:
    import click

    return click.unstyle(text)


def test_the_bar_is_wanted_only_on_a_terminal() -> None:
    assert wanted(_Tty()) and not wanted(io.StringIO())


def test_bar_line() -> None:
    assert line(0, 10) == "rnnfix: [" + "." * 30 + "]   0%  0/10 files"
    assert line(5, 10) == "rnnfix: [" + "#" * 15 + "." * 15 + "]  50%  5/10 files"
    assert line(12, 10).endswith("] 100%  10/10 files")


def test_bar_line_has_elapsed_and_eta() -> None:
    # 4 of 10 files in 62 s: 93 s to go at that pace.
    assert line(4, 10, 62.0).endswith("  40%  4/10 files  00:01:02  ETA 00:01:33")
    assert line(0, 10, 1.5).endswith("  0/10 files  00:00:01")  # no pace yet: no ETA
    assert line(10, 10, 3725.0).endswith("  10/10 files  01:02:05")


def test_the_bar_waits_a_second() -> None:
    assert ProgressBar(_Counts(), io.StringIO()).delay == 1.0


class _Counts:
    total = 4
    checked = 1


def test_the_bar_draws_then_erases_its_line() -> None:
    stream = _Tty()
    drawn = threading.Event()
    bar = ProgressBar(_Counts(), stream, delay=0.0, interval=0.01)
    draw = bar.draw

    def draw_and_tell() -> None:
        draw()
        drawn.set()

    bar.draw = draw_and_tell  # type: ignore[method-assign]
    with bar:
        assert drawn.wait(30)
    out = stream.getvalue()
    assert "\rrnnfix: [" in out and "1/4 files" in out
    assert out.endswith("\r" + " " * bar.drawn + "\r")


def test_a_short_run_draws_nothing() -> None:
    stream = _Tty()
    with ProgressBar(_Counts(), stream, delay=3600):
        pass
    assert stream.getvalue() == ""


def test_no_bar_in_a_run_whose_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "buggy.py").write_text(BUGGY)
    result = CliRunner().invoke(cli, ["apply", "--check", str(tmp_path)])
    assert "files\r" not in result.stderr and "\r" not in result.stderr


def test_a_run_at_a_terminal_gets_a_bar_unless_quiet_or_interactive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rnnfix.report.progressbar as progressbar

    made: list[progressbar.Counts] = []

    class Recorder(progressbar.ProgressBar):
        def __init__(self, counts: progressbar.Counts, stream: object) -> None:
            made.append(counts)
            super().__init__(counts, stream, delay=3600)  # type: ignore[arg-type]

    monkeypatch.setattr(progressbar, "wanted", lambda stream: True)
    monkeypatch.setattr(progressbar, "ProgressBar", Recorder)
    (tmp_path / "buggy.py").write_text(BUGGY)
    (tmp_path / "other.py").write_text(BUGGY)
    CliRunner().invoke(cli, ["apply", "--check", str(tmp_path)])
    assert [counts.total for counts in made] == [2]
    CliRunner().invoke(cli, ["apply", "--check", "-q", str(tmp_path)])
    CliRunner().invoke(cli, ["apply", "-i", str(tmp_path)], input="")
    assert len(made) == 1


def _on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """stdout and stderr of ``rnnfix`` on a pseudo-terminal, read to the end."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rnnfix", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env={**os.environ, **env},
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    proc.wait(timeout=120)
    return b"".join(chunks).decode()


@pytest.mark.skipif(not hasattr(__import__("os"), "openpty"), reason="needs a pseudo-terminal")
def test_auto_colours_a_real_terminal_unless_no_color(tmp_path: Path) -> None:
    (tmp_path / "buggy.py").write_text(BUGGY)
    args = ["apply", "--diff", "--no-cache", "--select", "RNF002", str(tmp_path / "buggy.py")]
    coloured = _on_a_terminal(args, {"NO_COLOR": "", "FORCE_COLOR": ""})
    assert "\x1b[32m+model.train()" in coloured
    plain = _on_a_terminal(args, {"NO_COLOR": "1", "FORCE_COLOR": ""})
    assert "+model.train()" in plain and "\x1b[" not in plain
