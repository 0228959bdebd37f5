"""The command line: the only place that parses argv. Heavy imports (libcst,
the rules, and never torch) happen inside the commands so ``--help`` is fast."""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rnnfix._version import __version__
from rnnfix.cli.options import RunOptions, check_options, shared_options
from rnnfix.cli.summary import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, Output, report
from rnnfix.run import stopping
from rnnfix.run.stopping import Interrupted

if TYPE_CHECKING:
    from rnnfix.cli.configuration import Configurations
    from rnnfix.config.settings import Settings
    from rnnfix.run.process import FileResult, Progress
    from rnnfix.source.files import Problems


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            # Not click's Abort, which prints an empty line first: ``main``
            # prints the one line an interrupted run prints.
            raise _Interrupted(signal.SIGINT) from None
        except Exception as exc:  # noqa: BLE001 - internal errors exit 2 with one line
            click.echo(f"rnnfix: internal error: {type(exc).__name__}: {exc}", err=True)
            ctx.exit(EXIT_ERROR)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        lazy = self.commands.get(args[0]) if args else None
        if isinstance(lazy, _Lazy):
            self.add_command(lazy.load(), args[0])
        return super().resolve_command(ctx, args)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rnnfix")
def cli() -> None:
    """Find and fix PyTorch train/eval mode bugs (the cause of
    "cudnn RNN backward can only be called in training mode")."""


_APPLY_ONLY = [
    click.option("--diff", is_flag=True, help="Show a unified diff of the fixes; write nothing."),
    click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change."),
    click.option(
        "-i",
        "--interactive",
        is_flag=True,
        help="Show each fix as a diff and ask whether to apply it: y(es), n(o), "
        "a(ll remaining), q(uit), d(etails: the rule's docs). End of input counts as q.",
    ),
    click.option(
        "--verify",
        "verify_cmd",
        metavar="CMD",
        help="After fixing, run CMD under the mode sanitizer; roll back every changed "
        "file if it fails or shows a violation.",
    ),
    click.option("--verify-timeout", type=float, default=600.0, show_default=True),
    click.option(
        "--exit-non-zero-on-fix",
        is_flag=True,
        help="Exit 1 when any file was fixed, even if no finding is left (for pre-commit).",
    ),
]


def _apply_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_APPLY_ONLY):
        f = option(f)
    return shared_options(f)


@cli.command(short_help="Report mode bugs in PATHS; change nothing.")
@check_options
def check(**params: Any) -> None:
    """Report mode bugs in PATHS (files or folders, the current folder when
    none is given; '-' reads stdin) and change nothing: `rnnfix apply` fixes
    them. Exit 1 when any finding is reported."""
    _run(RunOptions.from_click("check", params))


@cli.command(short_help="Fix mode bugs in PATHS.")
@_apply_options
def apply(**params: Any) -> None:
    """Fix mode bugs in PATHS (files or folders; '-' reads stdin, writes stdout)."""
    _run(RunOptions.from_click("apply", params))


def _run(options: RunOptions) -> None:
    from rnnfix.cli.configuration import Configurations, show_settings

    paths = options.paths
    configs = Configurations(options.flags, options.config_path)
    # Each file has its own settings; these are the first path's (stdin:
    # --stdin-filename's), read first so a broken configuration stops the
    # run before anything else.
    first = _settings_start(options)
    settings = configs.for_path(first)
    if options.show_settings:
        _say_notes(configs)
        click.echo(show_settings(settings, configs.config_for(first)), nl=False)
        return
    out = options.output
    interactive = options.interactive
    if interactive:
        _check_interactive(paths, out.diff, out.check, out.fmt)
    if options.stdin:
        if len(paths) > 1:
            raise click.UsageError("'-' (stdin) cannot be combined with other paths")
        if options.changed_since:
            raise click.UsageError("--changed-since cannot be combined with '-' (stdin)")
        _say_notes(configs)
        sys.exit(_apply_stdin(settings, options.stdin_filename, out))

    from rnnfix.run.process import Outcome, Progress
    from rnnfix.source.files import Problems

    missing = [p for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        raise click.UsageError(f"{missing[0]}: no such file or folder")
    problems = Problems()
    files = _discover(paths, configs, problems)
    changed_since = options.changed_since
    context: list[Path] | None = None
    if changed_since:
        context, files = files, _changed_only(files, changed_since, paths[0])
    groups = configs.group(files)
    _say_notes(configs)
    if options.show_files:
        click.echo("".join(f"{f}\n" for f in files), nl=False)
        return
    if not files and not context:
        click.echo(
            "rnnfix: warning: no Python files or notebooks found under "
            + ", ".join(str(p) for p in paths),
            err=True,
        )
    progress = Progress(total=len(files))
    warnings: list[str] = []
    try:
        with (
            _sigterm_as_interrupt(),
            _reviewing(interactive, out.color),
            _progress_bar(progress, out.quiet or interactive),
        ):
            results = _process(options, configs, groups, files, context, progress, warnings)
    except _Interrupted as exc:
        done = "" if out.dry else f"; {progress.written} changed file(s) written"
        click.echo(
            f"rnnfix: interrupted ({exc.signal_name}) after checking {progress.checked} of "
            f"{progress.total} files{done}; every file is either as it was or fully fixed",
            err=True,
        )
        sys.exit(128 + exc.signal_number)
    for warning in [*problems.warnings, *warnings]:
        click.echo(f"rnnfix: warning: {warning}", err=True)
    # Folders that could not be read, patterns that are none: the run went
    # on without them, and its exit code says something failed.
    for error in problems.errors:
        click.echo(f"rnnfix: error: {error}", err=True)
    parts = [configs.settings(config) for config in groups] or [settings]
    # What the report counts as fixable: the files' own settings said the
    # same, or (configurations that differ) only what every one would fix.
    shown = dataclasses.replace(parts[0], unsafe_fixes=all(s.unsafe_fixes for s in parts))
    code = report(results, shown, out)
    if problems.errors:
        code = EXIT_ERROR
    if options.exit_non_zero_on_fix and not out.dry and code == EXIT_OK:
        code = EXIT_FINDINGS if any(r.outcome is Outcome.CHANGED for r in results) else code
    if options.verify_cmd and not out.dry:
        code = max(code, _verify_after_apply(results, options.verify_cmd, options.verify_timeout))
    sys.exit(code)


def _settings_start(options: RunOptions) -> Path:
    """Where the first path's configuration is looked for: stdin's is
    --stdin-filename's (as ruff's), else the current folder's."""
    if not options.stdin:
        return options.paths[0]
    if options.stdin_filename != "<stdin>":
        return Path(options.stdin_filename)
    return Path.cwd()


def _say_notes(configs: Configurations) -> None:
    for note in configs.notes:
        click.echo(f"rnnfix: note: {note}", err=True)
    configs.notes.clear()


def _discover(paths: Sequence[Path], configs: Configurations, problems: Problems) -> list[Path]:
    """The files of the run: each path walked with its own configuration's
    exclusions; a file below it with another configuration is also left out
    by that one's (relative to its folder), as ruff does."""
    from rnnfix.source.files import discover, left_out

    by_config: dict[Path | None, list[Path]] = {}
    for p in paths:
        by_config.setdefault(configs.config_for(p), []).append(p)
    files: list[Path] = []
    seen: set[Path] = set()
    for config, roots in by_config.items():
        s = configs.settings(config)
        found = discover(
            roots,
            s.exclude + s.extend_exclude,
            include_tests=s.include_tests,
            force_exclude=s.force_exclude,
            problems=problems,
        )
        for f in found:
            if f in seen:
                continue
            seen.add(f)
            own = configs.config_of_file(f)
            if own is not None and own != config:
                o = configs.settings(own)
                excluded = o.exclude + o.extend_exclude
                if left_out(f, own.parent, excluded, o.include_tests, problems):
                    continue
            files.append(f)
    return files


def _process(
    options: RunOptions,
    configs: Configurations,
    groups: dict[Path | None, list[Path]],
    files: list[Path],
    context: list[Path] | None,
    progress: Progress,
    warnings: list[str],
) -> list[FileResult]:
    """``process_files`` over each configuration's files, in ``files``'
    order. With more than one configuration every part sees all the files
    of the run (the project index), and fixes only its own."""
    from rnnfix.run.process import process_files

    out = options.output
    # A cached result would skip the questions of -i, and keeps no finding's
    # edits, which SARIF and JSON carry as each finding's fix.
    cached = not options.no_cache and not options.interactive and out.fmt not in ("sarif", "json")
    # Whole folders (or --changed-since) hold the project already.
    scan_imports = not context and not all(p.is_dir() for p in options.paths)
    whole = context if len(groups) < 2 else (context or files)
    by_file: dict[Path, FileResult] = {}
    for config, part in groups.items():
        settings = configs.settings(config)
        cache = None
        if cached:
            from rnnfix.run.cache import ResultCache, cache_root

            cache = ResultCache(cache_root(context or files), settings)
        results = process_files(
            part,
            settings,
            write=not out.dry,
            jobs=1 if options.interactive else options.jobs,  # the questions are asked here
            cache=cache,
            progress=progress,
            context=whole,
            scan_imports=scan_imports,
            # --check reports findings only: a fixed file's text is not needed.
            texts=not out.dry or out.diff,
        )
        by_file.update(zip(part, results, strict=True))
        if cache is not None:
            warnings.extend(w for w in cache.warnings if w not in warnings)
    return [by_file[f] for f in files]


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


_Interrupted = Interrupted  # rnnfix.run.stopping


_STOPS = (signal.SIGINT, signal.SIGTERM)


def _raise_interrupted(signum: int, frame: object) -> None:
    raise _Interrupted(signum)


def stop_on_sigterm() -> None:
    """SIGTERM anywhere in the run raises ``_Interrupted`` (``main`` prints
    one line for it), not only while files are checked."""
    signal.signal(signal.SIGTERM, _raise_interrupted)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM stop the run between two steps; writes are atomic,
    so wherever it stops each file is old or new (``files.write_atomic``)."""

    stopping.reset()
    previous = {sig: signal.signal(sig, stopping.handler) for sig in _STOPS}
    unraisable = sys.unraisablehook
    sys.unraisablehook = stopping.quiet_unraisable(unraisable)
    try:
        yield
        # A stop that landed after the last check (in the worker pool's
        # teardown, where its exception may be dropped) still stops the run.
        stopping.check()
    except KeyboardInterrupt:
        raise _Interrupted(signal.SIGINT) from None
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)
        sys.unraisablehook = unraisable


def _apply_stdin(settings: Settings, name: str, out: Output) -> int:
    from rnnfix.run.process import Outcome, process_text
    from rnnfix.source.files import FileProblem, decode

    data = sys.stdin.buffer.read()
    try:
        decoded = decode(data)
    except FileProblem as exc:
        click.echo(f"{name}: {exc}", err=True)
        return EXIT_ERROR
    result = process_text(name, decoded.text, settings)
    if decoded.warning is not None:
        result.notes.append(decoded.warning)
    if out.command == "check":  # a report, not a filter: diagnostics on stdout
        return report([result], settings, out)
    if result.outcome is Outcome.FAILED:
        sys.stdout.buffer.write(data)  # a filter must never lose its input
        sys.stdout.flush()
    elif not out.dry:
        assert result.new_text is not None
        sys.stdout.buffer.write(decoded.encode(result.new_text))
        sys.stdout.flush()
    # stdout carries the source; diagnostics go to stderr.
    return report([result], settings, dataclasses.replace(out, diagnostics_to_stderr=True))


def _verify_after_apply(results: Sequence[FileResult], command: str, timeout: float) -> int:
    from rnnfix.run.process import Outcome
    from rnnfix.source.files import decode
    from rnnfix.verify.rollback import verify_and_rollback

    done = [
        r
        for r in results
        if r.outcome is Outcome.CHANGED and r.old_bytes is not None and r.new_text is not None
    ]
    changed = {Path(r.path): r.old_bytes for r in done if r.old_bytes is not None}
    # What was written: a file that holds anything else when the rollback
    # comes was edited meanwhile, and keeps that edit.
    written = {
        Path(r.path): decode(r.old_bytes).encode(r.new_text)
        for r in done
        if r.old_bytes is not None and r.new_text is not None
    }
    from rnnfix.verify.report import format_text

    result = verify_and_rollback(changed, command, timeout, written=written)
    text = format_text(result)
    click.echo(text if text.endswith("\n") else text + "\n", err=True, nl=False)
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


@cli.command(short_help="Print a rule's documentation.")
@click.argument("code")
def explain(code: str) -> None:
    """Print a rule's documentation (e.g. `rnnfix explain RNF002`)."""
    from rnnfix.report.rulelinks import rule_doc

    doc = rule_doc(code)
    if doc is None:
        raise click.UsageError(f"unknown rule {code!r}; `rnnfix rules` lists them")
    click.echo(doc, nl=False)


class _Lazy(click.Command):
    """A command's place in the group until it runs: ``rnnfix --help`` and
    ``rnnfix apply`` never import ``rnnfix.verify`` (its sanitizer and
    records cost every start more than the rest of the CLI) nor
    ``rnnfix.lsp`` (pygls); ``_Group`` swaps in the real command as soon as
    its name is resolved (``verify`` imports torch only when it runs)."""

    def __init__(self, name: str, short_help: str, module: str, attribute: str) -> None:
        super().__init__(name, short_help=short_help)
        self.module, self.attribute = module, attribute

    def load(self) -> click.Command:
        import importlib

        command = getattr(importlib.import_module(self.module), self.attribute)
        assert isinstance(command, click.Command)
        return command


cli.add_command(
    _Lazy(
        "verify",
        "Run a training script under the runtime mode sanitizer and judge it.",
        "rnnfix.verify.cli",
        "verify_command",
    )
)
cli.add_command(
    _Lazy(
        "server",
        "Run the language server (LSP over stdio; needs rnnfix[lsp]).",
        "rnnfix.lsp.command",
        "server_command",
    )
)


def _stops_ignored() -> None:
    for stop in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(stop, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread
            pass


def main() -> None:
    # click's standalone mode turns Ctrl-C into "Aborted!" and exit 1, which
    # reads as "findings remain"; an interrupted run exits 130 (128 + SIGINT)
    # with a line that says so, wherever the signal lands.
    try:
        try:
            code = cli.main(prog_name="rnnfix", standalone_mode=False)
        finally:
            # The run is over (its files written, its report printed): a
            # signal now would only turn its exit status into Python's
            # teardown's (1). The status says what the run did.
            _stops_ignored()
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("rnnfix: interrupted (SIGINT) before any file was checked", err=True)
        sys.exit(128 + signal.SIGINT)
    except _Interrupted as exc:  # SIGTERM outside the files' loop
        click.echo(f"rnnfix: interrupted ({exc.signal_name})", err=True)
        sys.exit(128 + exc.signal_number)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
