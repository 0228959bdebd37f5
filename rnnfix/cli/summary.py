"""What a run prints when it is done: the diagnostics (stdout, or
``--output-file``), the notes and failures, and one summary line on stderr
whose counts are the listing's; and the exit status.

Three kinds of run say different things:

- ``rnnfix check`` reports the files as they are: "N findings (F fixable)";
- ``apply --check``/``--diff`` list the same and add what fixing would leave:
  "N findings (F fixable, L would be left)";
- ``apply`` lists what is left after fixing: "F fixes applied, L findings left".

A fix that only ``--unsafe-fixes`` would apply is counted in a hint, as ruff
does. A file with syntax newer than the running Python is counted as not
checked: it does not make the run fail.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

if TYPE_CHECKING:
    from rnnfix.analysis.context import Finding
    from rnnfix.config.settings import Settings
    from rnnfix.run.process import FileResult

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True)
class Output:
    """How a run reports: the command (``check`` or ``apply``), the flags
    that shape what it prints."""

    command: str = "apply"
    diff: bool = False
    check: bool = False
    fmt: str = "text"
    quiet: bool = False
    statistics: bool = False
    color: str = "auto"
    show_fixes: bool = False
    output_file: Path | None = None
    exit_zero: bool = False
    diagnostics_to_stderr: bool = False  # stdin: stdout carries the source

    @property
    def dry(self) -> bool:
        return self.command == "check" or self.diff or self.check


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def _fixable(f: Finding, unsafe_fixes: bool) -> bool:
    return f.fix is not None and (f.fix.safe or unsafe_fixes)


def _hidden(f: Finding, unsafe_fixes: bool) -> bool:
    return f.fix is not None and not f.fix.safe and not unsafe_fixes


def summary(results: Sequence[FileResult], settings: Settings, out: Output) -> str:
    """The one line a run ends with (without its line break)."""
    from rnnfix.report.formats import not_checked
    from rnnfix.run.process import Outcome

    unsafe = settings.unsafe_fixes
    skipped = sum(not_checked(r) for r in results)
    failed = sum(r.outcome is Outcome.FAILED for r in results) - skipped
    changed = sum(r.outcome is Outcome.CHANGED for r in results)
    parts = [f"rnnfix: {_plural(len(results), 'file')} checked"]
    if out.dry:
        listed = [f for r in results for f in r.reported]
        fixable = sum(_fixable(f, unsafe) for f in listed)
        hidden = sum(_hidden(f, unsafe) for f in listed)
        if out.command == "check":
            parts.append(f"{_plural(len(listed), 'finding')} ({fixable} fixable)")
        else:
            left = sum(len(r.findings) for r in results)
            parts.append(f"{changed} would change")
            parts.append(
                f"{_plural(len(listed), 'finding')} ({fixable} fixable, {left} would be left)"
            )
    else:
        # Only what was written: a file whose write failed has no fix applied.
        applied = sum(len(r.applied) for r in results if r.outcome is Outcome.CHANGED)
        left_findings = [f for r in results for f in r.findings]
        hidden = sum(_hidden(f, unsafe) for f in left_findings)
        parts.append(f"{changed} changed")
        parts.append(f"{_plural(applied, 'fix', 'fixes')} applied")
        parts.append(f"{_plural(len(left_findings), 'finding')} left")
    if skipped:
        from rnnfix.run.process import NEWER_SYNTAX

        why = NEWER_SYNTAX.removeprefix("not checked: ")
        parts.append(f"{skipped} not checked ({why})")
    parts.append(f"{failed} failed")
    line = ", ".join(parts)
    if hidden:
        more = "fix" if hidden == 1 else "fixes"
        line += f"; {hidden} more {more} available with `--unsafe-fixes`"
    return line


def exit_status(results: Sequence[FileResult], out: Output) -> int:
    from rnnfix.report.formats import not_checked
    from rnnfix.run.process import Outcome

    if any(r.outcome is Outcome.FAILED and not not_checked(r) for r in results):
        return EXIT_ERROR
    if out.exit_zero:
        return EXIT_OK
    if out.command == "check":
        return EXIT_FINDINGS if any(r.reported for r in results) else EXIT_OK
    left = any(r.findings for r in results)
    changed = any(r.outcome is Outcome.CHANGED for r in results)
    return EXIT_FINDINGS if left or (out.dry and changed) else EXIT_OK


def report(results: Sequence[FileResult], settings: Settings, out: Output) -> int:
    """Print everything a finished run says; returns its exit status."""
    from rnnfix.report import colour, render
    from rnnfix.report.diff import unified_diff
    from rnnfix.report.formats import failure_line, render_fixes
    from rnnfix.run.process import Outcome

    # A dry run reports what the file holds now, and the follow-up fixes (a
    # train() RNF001 asks for after RNF003's eval()), at the file's own lines.
    shown = [dataclasses.replace(r, findings=r.reported) if out.dry else r for r in results]
    stream: TextIO = sys.stderr if out.diagnostics_to_stderr else sys.stdout
    if out.diff:
        on = colour.use_colour(out.color, sys.stdout)  # the diff goes to stdout even for stdin
        for r in results:
            if r.outcome is Outcome.CHANGED:
                assert r.old_text is not None and r.new_text is not None
                text = unified_diff(r.path, r.old_text, r.new_text)
                click.echo(colour.diff(text) if on else text, nl=False, color=on or None)
    elif out.statistics:
        from rnnfix.report.statistics import statistics as count_per_code

        text = count_per_code(shown, "json" if out.fmt == "json" else "text", settings.unsafe_fixes)
        _emit(text, out, stream, styled=False)
    else:
        text = render(out.fmt, shown, settings.unsafe_fixes, dry=out.dry)
        if out.show_fixes and out.fmt in ("text", "concise", "full"):
            fixes = render_fixes(results, settings.unsafe_fixes, dry=out.dry)
            gap = "\n" if text and fixes and not text.endswith("\n\n") else ""
            text += gap + fixes
        _emit(text, out, stream, styled=out.fmt in ("text", "concise", "full"))
    for r in results:
        for note in r.notes:  # notebook cells left unchecked, a file read as utf-8
            click.echo(f"{r.path}: {note}", err=True)
    if out.fmt in ("text", "concise", "full"):
        for r in results:
            if r.outcome is Outcome.FAILED:
                click.echo(failure_line(r), err=True)
    if not out.quiet:
        click.echo(summary(results, settings, out), err=True)
    return exit_status(results, out)


def _emit(text: str, out: Output, stream: TextIO, styled: bool) -> None:
    from rnnfix.report import colour

    if out.output_file is not None:
        try:
            out.output_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise click.UsageError(
                f"--output-file: cannot write {out.output_file}: {exc}"
            ) from None
        return
    if not text:
        return
    on = styled and colour.use_colour(out.color, stream)
    click.echo(
        colour.diagnostics(text) if on else text,
        nl=False,
        err=out.diagnostics_to_stderr,
        color=on or None,
    )
