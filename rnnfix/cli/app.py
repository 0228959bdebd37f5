"""The command line: the only place that parses argv. Heavy imports (libcst,
the rules, and never torch) happen inside the commands so ``--help`` is fast."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rnnfix._version import __version__

if TYPE_CHECKING:
    from rnnfix.config.settings import Settings
    from rnnfix.run.process import FileResult

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(values: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out.extend(c.strip().upper() for c in v.split(",") if c.strip())
    return tuple(out)


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - internal errors exit 2 with one line
            click.echo(f"rnnfix: internal error: {type(exc).__name__}: {exc}", err=True)
            ctx.exit(EXIT_ERROR)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args[:1] == ["verify"] and isinstance(self.commands.get("verify"), _LazyVerify):
            self.add_command(_LazyVerify.load())
        return super().resolve_command(ctx, args)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rnnfix")
def cli() -> None:
    """Find and fix PyTorch train/eval mode bugs (the cause of
    "cudnn RNN backward can only be called in training mode")."""


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--diff", is_flag=True, help="Show a unified diff of the fixes; write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option(
    "-i",
    "--interactive",
    is_flag=True,
    help="Show each fix as a diff and ask whether to apply it: y(es), n(o), "
    "a(ll remaining), q(uit), d(etails: the rule's docs). End of input counts as q.",
)
@click.option("--select", multiple=True, help="Rule codes or prefixes to run (comma-separated).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to skip (comma-separated).")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply unsafe fixes.")
@click.option(
    "--strict/--no-strict",
    default=None,
    help="RNF001: also insert train() where the models' mode is unknown (unsafe fixes).",
)
@click.option(
    "--rnn-only/--no-rnn-only",
    default=None,
    help="RNF004: fix backward-in-eval through RNNs (opt-in).",
)
@click.option(
    "--rnn-only-strategy",
    type=click.Choice(["rnn-train", "cudnn-off"]),
    default=None,
    help="RNF004 fix: train only the RNN submodules, or scope cuDNN off.",
)
@click.option(
    "--include-tests/--no-include-tests",
    default=None,
    help="Also check and fix test code (test files in folders, unittest TestCase classes).",
)
@click.option(
    "--force-exclude/--no-force-exclude",
    default=None,
    help="Apply exclude patterns and the test-code default to files named on the "
    "command line too (for pre-commit).",
)
@click.option(
    "--isolated",
    is_flag=True,
    help="See only the files given: do not read the project files they import.",
)
@click.option(
    "--output-format",
    type=click.Choice(["text", "json", "github", "sarif", "gitlab"]),
    default="text",
    show_default=True,
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="pyproject.toml to read [tool.rnnfix] from (default: nearest one).",
)
@click.option("--stdin-filename", default="<stdin>", help="Name for '-' in messages.")
@click.option("-q", "--quiet", is_flag=True, help="No summary line.")
@click.option(
    "--verify",
    "verify_cmd",
    metavar="CMD",
    help="After fixing, run CMD under the mode sanitizer; roll back every changed "
    "file if it fails or shows a violation.",
)
@click.option("--verify-timeout", type=float, default=600.0, show_default=True)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    help="Worker processes (0: one per CPU on large trees, else 1).",
)
@click.option(
    "--no-cache",
    is_flag=True,
    envvar="RNNFIX_NO_CACHE",
    help="Neither read nor write the result cache (.rnnfix_cache/ at the project root).",
)
@click.option(
    "--changed-since",
    metavar="REF",
    help="Report and fix only files changed since the git revision REF (commits, staged, "
    "unstaged, untracked); the other files are still read for cross-file analysis.",
)
@click.option(
    "--statistics",
    is_flag=True,
    help="Instead of each finding, count the findings of each rule (text or json).",
)
@click.option(
    "--exit-non-zero-on-fix",
    is_flag=True,
    help="Exit 1 when any file was fixed, even if no finding is left (for pre-commit).",
)
@click.option(
    "--color",
    "color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour diffs and diagnostics; auto: only on a terminal, and not when "
    "NO_COLOR is set (FORCE_COLOR: also off a terminal).",
)
def apply(
    paths: tuple[Path, ...],
    diff: bool,
    check: bool,
    interactive: bool,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    unsafe_fixes: bool | None,
    strict: bool | None,
    rnn_only: bool | None,
    rnn_only_strategy: str | None,
    include_tests: bool | None,
    force_exclude: bool | None,
    isolated: bool,
    output_format: str,
    config_path: Path | None,
    stdin_filename: str,
    quiet: bool,
    verify_cmd: str | None,
    verify_timeout: float,
    jobs: int,
    no_cache: bool,
    changed_since: str | None,
    statistics: bool,
    exit_non_zero_on_fix: bool,
    color: str,
) -> None:
    """Fix mode bugs in PATHS (files or folders; '-' reads stdin, writes stdout)."""
    from rnnfix.config.pyproject import ConfigError, find_pyproject, load_settings

    start = Path.cwd() if str(paths[0]) == "-" else paths[0]
    try:
        settings = load_settings(config_path or find_pyproject(start))
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    overrides: dict[str, Any] = {}
    if select:
        overrides["select"] = _codes(select)
    if ignore:
        overrides["ignore"] = settings.ignore + _codes(ignore)
    for key, value in (
        ("unsafe_fixes", unsafe_fixes),
        ("strict", strict),
        ("rnn_only", rnn_only),
        ("rnn_only_strategy", rnn_only_strategy),
        ("include_tests", include_tests),
        ("force_exclude", force_exclude),
    ):
        if value is not None:
            overrides[key] = value
    if isolated:
        overrides["isolated"] = True
    settings = dataclasses.replace(settings, **overrides)
    dry = diff or check
    if interactive:
        _check_interactive(paths, diff, check, output_format)

    if any(str(p) == "-" for p in paths):
        if len(paths) > 1:
            raise click.UsageError("'-' (stdin) cannot be combined with other paths")
        if changed_since:
            raise click.UsageError("--changed-since cannot be combined with '-' (stdin)")
        sys.exit(
            _apply_stdin(
                settings,
                stdin_filename,
                diff,
                check,
                output_format,
                quiet,
                statistics=statistics,
                color=color,
            )
        )

    from rnnfix.run.process import Outcome, Progress, process_files
    from rnnfix.source.files import discover

    missing = [p for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        raise click.UsageError(f"{missing[0]}: no such file or folder")
    files = list(
        discover(
            paths,
            settings.exclude + settings.extend_exclude,
            include_tests=settings.include_tests,
            force_exclude=settings.force_exclude,
        )
    )
    context: list[Path] | None = None
    if changed_since:
        context, files = files, _changed_only(files, changed_since, paths[0])
    cache = None
    # A cached result would skip the questions of -i, and keeps no finding's
    # edits, which SARIF carries as each finding's fix.
    if not no_cache and not interactive and output_format != "sarif":
        from rnnfix.run.cache import ResultCache, cache_root

        cache = ResultCache(cache_root(context or files), settings)
    progress = Progress()
    try:
        with (
            _sigterm_as_interrupt(),
            _reviewing(interactive, color),
            _progress_bar(progress, quiet or interactive),
        ):
            results = process_files(
                files,
                settings,
                write=not dry,
                jobs=1 if interactive else jobs,  # the questions are asked in this process
                cache=cache,
                progress=progress,
                context=context,
                # Whole folders (or --changed-since) hold the project already.
                scan_imports=not context and not all(p.is_dir() for p in paths),
            )
    except _Interrupted as exc:
        done = "" if dry else f"; {progress.written} changed file(s) written"
        click.echo(
            f"rnnfix: interrupted ({exc.signal_name}) after checking {progress.checked} of "
            f"{progress.total} files{done}; every file is either as it was or fully fixed",
            err=True,
        )
        sys.exit(128 + exc.signal_number)
    for warning in cache.warnings if cache is not None else ():
        click.echo(f"rnnfix: warning: {warning}", err=True)
    code = _report(
        results, settings, diff, check, output_format, quiet, statistics=statistics, color=color
    )
    if exit_non_zero_on_fix and not dry and code == EXIT_OK:
        code = EXIT_FINDINGS if any(r.outcome is Outcome.CHANGED for r in results) else code
    if verify_cmd and not dry:
        code = max(code, _verify_after_apply(results, verify_cmd, verify_timeout))
    sys.exit(code)


def _check_interactive(paths: Sequence[Path], diff: bool, check: bool, output_format: str) -> None:
    for flag, given in (("--diff", diff), ("--check", check)):
        if given:
            raise click.UsageError(f"-i/--interactive cannot be combined with {flag}")
    if output_format != "text":
        raise click.UsageError(
            f"-i/--interactive cannot be combined with --output-format {output_format}"
        )
    if any(str(p) == "-" for p in paths):
        raise click.UsageError("-i/--interactive reads its answers from stdin, not a source ('-')")


def _reviewing(interactive: bool, color: str) -> contextlib.AbstractContextManager[None]:
    """``-i``: the engine asks before each fix (``rnnfix.cli.interactive``)."""
    if not interactive:
        return contextlib.nullcontext()
    from rnnfix.cli.interactive import Reviewer, stdin_lines
    from rnnfix.report.colour import use_colour
    from rnnfix.run.engine import reviewing

    reviewer = Reviewer(
        stdin_lines(),
        coloured=use_colour(color, sys.stdout),
        echo_answers=not _isatty(sys.stdin),
    )
    return reviewing(reviewer)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _progress_bar(progress: Any, off: bool) -> contextlib.AbstractContextManager[Any]:
    """A bar on stderr while a long run checks files, when stderr is a terminal."""
    from rnnfix.report.progressbar import ProgressBar, wanted

    if off or not wanted(sys.stderr):
        return contextlib.nullcontext()
    return ProgressBar(progress, sys.stderr)


def _changed_only(files: list[Path], ref: str, where: Path) -> list[Path]:
    from rnnfix.run.gitchanges import GitError, changed_files

    try:
        changed = changed_files(ref, where)
    except GitError as exc:
        raise click.UsageError(str(exc)) from None
    return [f for f in files if f.resolve() in changed]


class _Interrupted(Exception):
    def __init__(self, signal_number: int) -> None:
        super().__init__(signal_number)
        self.signal_number = signal_number
        self.signal_name = signal.Signals(signal_number).name


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM stop the run between two steps; writes are atomic,
    so wherever it stops each file is old or new (``files.write_atomic``)."""

    def stop(signum: int, frame: object) -> None:
        raise _Interrupted(signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except KeyboardInterrupt:
        raise _Interrupted(signal.SIGINT) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def _apply_stdin(
    settings: Settings,
    name: str,
    diff: bool,
    check: bool,
    fmt: str,
    quiet: bool,
    statistics: bool = False,
    color: str = "auto",
) -> int:
    from rnnfix.run.process import Outcome, process_text
    from rnnfix.source.files import FileProblem, decode

    data = sys.stdin.buffer.read()
    try:
        decoded = decode(data)
    except FileProblem as exc:
        click.echo(f"{name}: {exc}", err=True)
        return EXIT_ERROR
    result = process_text(name, decoded.text, settings)
    if result.outcome is Outcome.FAILED:
        sys.stdout.buffer.write(data)  # a filter must never lose its input
        sys.stdout.flush()
    elif not (diff or check):
        assert result.new_text is not None
        sys.stdout.buffer.write(decoded.encode(result.new_text))
        sys.stdout.flush()
    # stdout carries the source; diagnostics go to stderr.
    return _report(
        [result],
        settings,
        diff,
        check,
        fmt,
        quiet,
        diagnostics_to_stderr=True,
        statistics=statistics,
        color=color,
    )


def _report(
    results: Sequence[FileResult],
    settings: Settings,
    diff: bool,
    check: bool,
    fmt: str,
    quiet: bool,
    diagnostics_to_stderr: bool = False,
    statistics: bool = False,
    color: str = "auto",
) -> int:
    from rnnfix.report import colour, render
    from rnnfix.report.diff import unified_diff
    from rnnfix.report.formats import failure_line
    from rnnfix.run.process import NEWER_SYNTAX, Outcome

    dry = diff or check
    # A dry run reports what the file holds now, and the follow-up fixes (a
    # train() RNF001 asks for after RNF003's eval()), at the file's own lines.
    shown = [dataclasses.replace(r, findings=r.reported) if dry else r for r in results]
    # color=True only for text styled here; otherwise click keeps its own rule.
    coloured = colour.use_colour(color, sys.stderr if diagnostics_to_stderr else sys.stdout)
    if diff:
        on = colour.use_colour(color, sys.stdout)  # the diff goes to stdout even for stdin
        for r in results:
            if r.outcome is Outcome.CHANGED:
                assert r.old_text is not None and r.new_text is not None
                text = unified_diff(r.path, r.old_text, r.new_text)
                click.echo(colour.diff(text) if on else text, nl=False, color=on or None)
    elif statistics:
        from rnnfix.report.statistics import statistics as count_per_code

        out = count_per_code(shown, fmt, settings.unsafe_fixes)
        if out:
            click.echo(out, nl=False, err=diagnostics_to_stderr)
    else:
        out = render(fmt, shown, settings.unsafe_fixes, dry=dry)
        on = coloured and fmt == "text"
        if out:
            click.echo(
                colour.diagnostics(out) if on else out,
                nl=False,
                err=diagnostics_to_stderr,
                color=on or None,
            )
    failed = [r for r in results if r.outcome is Outcome.FAILED]
    newer = sum(r.error == NEWER_SYNTAX for r in failed)
    for r in results:
        for note in r.notes:  # parts of a file left unchecked (notebook cells)
            click.echo(f"{r.path}: {note}", err=True)
    if fmt == "text":
        for r in failed:
            click.echo(failure_line(r), err=True)
    changed = sum(r.outcome is Outcome.CHANGED for r in results)
    fixes = sum(len(r.applied) for r in results)
    left = sum(len(r.findings) for r in results)
    if not quiet:
        verb = "would change" if dry else "changed"
        fix_verb = "available" if dry else "applied"
        click.echo(
            f"rnnfix: {len(results)} file{'s' * (len(results) != 1)} checked, "
            f"{changed} {verb}, {fixes} fix{'es' * (fixes != 1)} {fix_verb}, "
            f"{left} finding{'s' * (left != 1)} left, {len(failed)} failed"
            + (f" ({newer} with newer syntax)" if newer else ""),
            err=True,
        )
    if failed:
        return EXIT_ERROR
    if left or (dry and changed):
        return EXIT_FINDINGS
    return EXIT_OK


def _verify_after_apply(results: Sequence[FileResult], command: str, timeout: float) -> int:
    from rnnfix.run.process import Outcome
    from rnnfix.verify.rollback import verify_and_rollback

    changed = {
        Path(r.path): r.old_bytes
        for r in results
        if r.outcome is Outcome.CHANGED and r.old_bytes is not None
    }
    from rnnfix.verify.report import format_text

    result = verify_and_rollback(changed, command, timeout)
    click.echo(format_text(result), err=True, nl=False)
    return result.exit_code


@cli.command("rules")
@click.option(
    "--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def rules_cmd(output_format: str) -> None:
    """List the rules."""
    from rnnfix.rules import all_rules

    if output_format == "json":
        from rnnfix.report.statistics import rules_json

        click.echo(rules_json(), nl=False)
        return

    for code, cls in all_rules().items():
        click.echo(f"{code}  {cls.name:<32} {cls.fix_safety:<7} {cls.summary}")


@cli.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print a rule's documentation (e.g. `rnnfix explain RNF002`)."""
    from rnnfix.rules import all_rules

    rules = all_rules()
    cls = rules.get(code.upper())
    if cls is None:
        raise click.UsageError(f"unknown rule {code!r}; `rnnfix rules` lists them")
    click.echo(f"# {cls.code} {cls.name}\n\nFix: {cls.fix_safety}\n\n{cls.docs.strip()}")


class _LazyVerify(click.Command):
    """``verify``'s place in the group until it runs: ``rnnfix --help`` and
    ``rnnfix apply`` never import ``rnnfix.verify`` (its sanitizer and
    records cost every start more than the rest of the CLI); ``_Group``
    swaps in the real command (``rnnfix.verify.cli``, which imports torch
    only when it runs) as soon as ``verify`` is resolved."""

    def __init__(self) -> None:
        super().__init__(
            "verify",
            short_help="Run a training script under the runtime mode sanitizer and judge it.",
        )

    @staticmethod
    def load() -> click.Command:
        from rnnfix.verify.cli import verify_command

        return verify_command


cli.add_command(_LazyVerify())


def main() -> None:
    # click's standalone mode turns Ctrl-C into "Aborted!" and exit 1, which
    # reads as "findings remain"; an interrupted run exits 130 (128 + SIGINT)
    # with a line that says so, wherever the signal lands.
    try:
        code = cli.main(prog_name="rnnfix", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("rnnfix: interrupted (SIGINT) before any file was checked", err=True)
        sys.exit(128 + signal.SIGINT)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
