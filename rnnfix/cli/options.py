"""The options ``rnnfix check`` and ``rnnfix apply`` share; ``RunOptions``,
the one typed, frozen record of what a run was asked (built from click's
parameters once, then read by each part of the run: ``SettingFlags`` go
over ``[tool.rnnfix]`` (``rnnfix.cli.configuration``), ``Output`` to the
report)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import click

from rnnfix.cli.summary import Output
from rnnfix.config.settings import ALL, TARGET_VERSIONS

if TYPE_CHECKING:
    from rnnfix.config.settings import RnnOnlyStrategy

F = TypeVar("F", bound=Callable[..., Any])

OUTPUT_FORMATS = ("text", "concise", "full", "json", "github", "sarif", "gitlab")
# The formats ``--statistics`` has a form in (text for the first three).
STATISTICS_FORMATS = ("text", "concise", "full", "json")


def codes(values: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        out.extend(c.strip().upper() for c in v.split(",") if c.strip())
    return tuple(out)


_SHARED: list[Callable[[F], F]] = [
    click.option(
        "--select",
        multiple=True,
        help="Rule codes or prefixes to run (comma-separated; ALL: every rule).",
    ),
    click.option(
        "--extend-select",
        multiple=True,
        help="Rule codes or prefixes to run as well as those selected.",
    ),
    click.option(
        "--ignore", multiple=True, help="Rule codes or prefixes to skip (comma-separated)."
    ),
    click.option(
        "--fixable",
        multiple=True,
        help="Rule codes or prefixes whose fixes may be applied (default: ALL).",
    ),
    click.option(
        "--unfixable",
        multiple=True,
        help="Rule codes or prefixes whose fixes are never applied (reported only).",
    ),
    click.option(
        "--report-unused-suppressions/--no-report-unused-suppressions",
        default=None,
        help="Name each `# noqa: RNF...`, `# rnnfix: ignore` or `# rnnfix: noqa` that "
        "silences nothing (on stderr).",
    ),
    click.option(
        "--unsafe-fixes/--no-unsafe-fixes",
        default=None,
        help="Also apply unsafe fixes (check: count them as fixable).",
    ),
    click.option(
        "--strict/--no-strict",
        default=None,
        help="RNF001: also insert train() where the models' mode is unknown (unsafe fixes).",
    ),
    click.option(
        "--rnn-only/--no-rnn-only",
        default=None,
        help="RNF004: fix backward-in-eval through RNNs (opt-in).",
    ),
    click.option(
        "--rnn-only-strategy",
        type=click.Choice(["rnn-train", "cudnn-off"]),
        default=None,
        help="RNF004 fix: train only the RNN submodules, or scope cuDNN off.",
    ),
    click.option(
        "--include-tests/--no-include-tests",
        default=None,
        help="Also check and fix test code (test files in folders, unittest TestCase classes).",
    ),
    click.option(
        "--force-exclude/--no-force-exclude",
        default=None,
        help="Apply exclude patterns and the test-code default to files named on the "
        "command line too (for pre-commit).",
    ),
    click.option(
        "--isolated",
        is_flag=True,
        help=(
            "See only the files given: do not read other project files (those they "
            "import, those that call their functions)."
        ),
    ),
    click.option(
        "--target-version",
        type=click.Choice(TARGET_VERSIONS),
        default=None,
        help="The oldest Python the code must run on: newer syntax is an error "
        "(without it, syntax newer than the running Python leaves a file unchecked).",
    ),
    click.option(
        "--output-format",
        type=click.Choice(OUTPUT_FORMATS),
        default="text",
        show_default=True,
        help="text (= concise): one line a finding; full: with the source lines.",
    ),
    click.option(
        "-o",
        "--output-file",
        type=click.Path(path_type=Path, dir_okay=False),
        help="Write the diagnostics to this file instead of stdout.",
    ),
    click.option(
        "--show-fixes",
        is_flag=True,
        help="After the diagnostics, list each fix applied (or, for a dry run, available).",
    ),
    click.option(
        "--exit-zero",
        is_flag=True,
        help="Exit 0 even when findings are left (2 still means a file failed).",
    ),
    click.option(
        "--show-settings",
        is_flag=True,
        help="Print the settings the run would use (and where they come from), then exit.",
    ),
    click.option(
        "--show-files",
        is_flag=True,
        help="Print the files the run would check, then exit.",
    ),
    click.option(
        "--config",
        "config_path",
        type=click.Path(path_type=Path, dir_okay=False),
        help="pyproject.toml to read [tool.rnnfix] from (default: nearest one).",
    ),
    click.option("--stdin-filename", default="<stdin>", help="Name for '-' in messages."),
    click.option("-q", "--quiet", is_flag=True, help="No summary line."),
    click.option(
        "-j",
        "--jobs",
        type=click.IntRange(min=0),
        default=0,
        help="Worker processes (0: one per CPU on large trees, else 1).",
    ),
    click.option(
        "--no-cache",
        is_flag=True,
        envvar="RNNFIX_NO_CACHE",
        help="Neither read nor write the result cache (.rnnfix_cache/ at the project root).",
    ),
    click.option(
        "--changed-since",
        metavar="REF",
        help="Report and fix only files changed since the git revision REF (commits, "
        "staged, unstaged, untracked); the other files are still read for cross-file "
        "analysis.",
    ),
    click.option(
        "--statistics",
        is_flag=True,
        help="Instead of each finding, count the findings of each rule (text or json).",
    ),
    click.option(
        "--color",
        "color",
        type=click.Choice(["auto", "always", "never"]),
        default="auto",
        show_default=True,
        help="Colour diffs and diagnostics; auto: only on a terminal, and not when "
        "NO_COLOR is set (FORCE_COLOR: also off a terminal).",
    ),
]


def shared_options(f: F) -> F:
    """The options of ``check`` and ``apply``, in ``--help``'s order."""
    for option in reversed(_SHARED):
        f = option(f)
    return click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))(f)


def check_options(f: F) -> F:
    """``shared_options``, PATHS optional: ``rnnfix check`` alone checks the
    current folder, as ``ruff check`` does."""
    for option in reversed(_SHARED):
        f = option(f)
    return click.argument("paths", nargs=-1, type=click.Path(path_type=Path))(f)


Command = Literal["check", "apply"]


@dataclasses.dataclass(frozen=True)
class SettingFlags:
    """The flags that go over ``[tool.rnnfix]``: an empty tuple or None is
    a flag not given (the configuration's value stands)."""

    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()  # added to the configuration's
    fixable: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()  # added to the configuration's
    report_unused_suppressions: bool | None = None
    unsafe_fixes: bool | None = None
    strict: bool | None = None
    rnn_only: bool | None = None
    rnn_only_strategy: RnnOnlyStrategy | None = None
    include_tests: bool | None = None
    force_exclude: bool | None = None
    target_version: str | None = None
    isolated: bool = False  # a flag only, never read from [tool.rnnfix]


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """What ``check`` or ``apply`` was asked, typed; the only thing the run
    reads of the command line. ``flags`` are for the settings, ``output``
    for the report; the rest is the run's own."""

    command: Command
    paths: tuple[Path, ...]
    flags: SettingFlags
    output: Output
    config_path: Path | None = None
    stdin_filename: str = "<stdin>"
    jobs: int = 0
    no_cache: bool = False
    changed_since: str | None = None
    show_settings: bool = False
    show_files: bool = False
    # apply only
    interactive: bool = False
    verify_cmd: str | None = None
    verify_timeout: float = 600.0
    exit_non_zero_on_fix: bool = False

    @property
    def stdin(self) -> bool:
        return any(str(p) == "-" for p in self.paths)

    @classmethod
    def from_click(cls, command: Command, params: dict[str, Any]) -> RunOptions:
        """From a command's click parameters (``check`` has no apply-only ones)."""
        flags = _picked(
            SettingFlags,
            params,
            select=_selectors(params, "select"),
            extend_select=_selectors(params, "extend_select"),
            ignore=_selectors(params, "ignore"),
            fixable=_selectors(params, "fixable"),
            unfixable=_selectors(params, "unfixable"),
        )
        fmt = params["output_format"]
        if params["statistics"] and fmt not in STATISTICS_FORMATS:
            # ruff: "Unsupported serialization format for statistics".
            raise click.UsageError(f"--statistics cannot be combined with --output-format {fmt}")
        output = _picked(Output, params, command=command, fmt=fmt)
        paths = tuple(params["paths"]) or (Path("."),)
        return _picked(cls, params, command=command, paths=paths, flags=flags, output=output)


_T = TypeVar("_T")


def _picked(kind: type[_T], params: dict[str, Any], **given: Any) -> _T:
    """``kind`` from ``given`` and, for its other fields, the parameters of
    the same name (a command without one, ``check`` for ``--diff``: the
    field's default)."""
    names = {f.name for f in dataclasses.fields(kind)}  # type: ignore[arg-type]
    return kind(**{k: v for k, v in params.items() if k in names and k not in given}, **given)


def _selectors(params: dict[str, Any], name: str) -> tuple[str, ...]:
    """A rule-selector option's codes; one given empty (``--select ''``) is a
    usage error, as in ruff."""
    given: Sequence[str] = params[name]
    if any(not codes([value]) for value in given):
        raise click.UsageError(f"--{name.replace('_', '-')}: no rule selector given")
    return codes(given)


def rule_codes() -> list[str]:
    """The codes of the rules, from their modules' names (``rnf001_...``,
    ``rnf003/``) without importing them: a warm run imports no rule."""
    return list(_rule_codes())


@functools.cache
def _rule_codes() -> tuple[str, ...]:
    import pkgutil

    import rnnfix.rules

    return tuple(
        sorted(
            info.name[:6].upper()
            for info in pkgutil.iter_modules(rnnfix.rules.__path__)
            if info.name[:3] == "rnf" and info.name[3:6].isdigit()
        )
    )


def check_selectors(selectors: Sequence[str], where: str) -> None:
    if not selectors:
        return
    known = _rule_codes()
    for prefix in selectors:
        if prefix != ALL and not any(code.startswith(prefix) for code in known):
            raise click.UsageError(
                f"unknown rule selector {prefix!r} ({where}); `rnnfix rules` lists the rules"
            )
