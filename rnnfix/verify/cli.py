"""``rnnfix verify``: the click command. The lead registers it on the main
group with ``cli.add_command(verify_command)``."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import IO, Any

import click

from rnnfix.verify.report import format_json, format_text
from rnnfix.verify.runner import command_from_words, module_command, run_verify

TORCH_MISSING = "rnnfix verify needs torch: pip install 'rnnfix[verify]'"

_EPILOG = """\b
Examples:
  rnnfix verify train.py -- --epochs 1
  rnnfix verify -m pkg.train -- --epochs 1
  rnnfix verify --until-clean-cycle -- torchrun --nproc_per_node=2 train.py
  rnnfix verify --fix train.py -- --epochs 2     # run, fix, run again, keep what is proven
  rnnfix verify --fix --diff train.py            # show the fixes, write nothing

Exit status: 0 clean and finished (--fix: every bug seen fixed and proven),
1 mode bugs seen or the command failed (--fix: something reported, rolled
back, or only shown by --diff), 2 usage or internal error.
"""


@click.command(
    "verify",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    epilog=_EPILOG,
)
@click.option("-m", "module", metavar="MODULE", help="Run a module, as python -m MODULE.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds before the command (and every process it started) is stopped.",
)
@click.option(
    "--record",
    "record_mode",
    is_flag=True,
    help="Record cuDNN train-mode violations and keep running, instead of raising "
    "cuDNN's error where a GPU would.",
)
@click.option(
    "--until-clean-cycle",
    is_flag=True,
    help="Stop the command, successfully, once every trained model has completed a "
    "train -> eval -> train -> optimizer step cycle with no finding.",
)
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.option(
    "--python",
    "python",
    metavar="PATH",
    default=None,
    help="Python that runs SCRIPT or -m MODULE [default: this one].",
)
@click.option(
    "--fix",
    is_flag=True,
    help="Record the run's mode bugs, fix them in the source (placed as `rnnfix apply` "
    "places RNF001's train()), run again, and roll back every file whose fixes the "
    "second run does not prove. Stops the first run once every model was seen.",
)
@click.option("--diff", is_flag=True, help="With --fix: print the fixes as a diff, write nothing.")
@click.option(
    "--rnn-only/--no-rnn-only",
    default=False,
    help="With --fix: also fix gradients meant to run in eval mode (RNF004): the RNN "
    "alone in train mode, or cuDNN off with --rnn-only-strategy cudnn-off.",
)
@click.option(
    "--rnn-only-strategy",
    type=click.Choice(["rnn-train", "cudnn-off"]),
    default="rnn-train",
    show_default=True,
    help="With --fix --rnn-only: how RNF004's case is fixed.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[SCRIPT] [--] [ARGS]...")
def verify_command(
    module: str | None,
    timeout: float,
    record_mode: bool,
    until_clean_cycle: bool,
    strict: bool,
    as_json: bool,
    python: str | None,
    fix: bool,
    diff: bool,
    rnn_only: bool,
    rnn_only_strategy: str,
    command: tuple[str, ...],
) -> None:
    """Run a training script under the runtime mode sanitizer and judge it.

    SCRIPT runs exactly as `python SCRIPT ARGS` would; a command that is not a
    .py file (torchrun, python -m ..., a shell script) runs as given, and the
    sanitizer reaches every Python process it starts through PYTHONPATH. On the
    CPU the sanitizer raises cuDNN's "cudnn RNN backward can only be called in
    training mode" where a GPU would; with CUDA, real cuDNN checks and the
    sanitizer records.

    With --fix, each recorded mode bug becomes a source edit, proven by a
    second run; see the README's "Verify" section.
    """
    if diff and not fix:  # a usage error of the options comes before the script's
        raise click.UsageError("--diff needs --fix")
    if module is not None:
        words = list(command[1:] if command[:1] == ("--",) else command)
        argv = module_command(module, words, python)
    elif command:
        script = command[0]
        if script.endswith((".py", ".pyw")) and not os.path.isfile(script):
            raise click.UsageError(f"{script}: no such file")
        argv = command_from_words(command, python)
    else:
        raise click.UsageError("give a SCRIPT, -m MODULE, or a command after --")
    runs_own_python = argv[0] == (python or sys.executable)
    if runs_own_python and python is None and importlib.util.find_spec("torch") is None:
        click.echo(TORCH_MISSING, err=True)
        sys.exit(2)
    if fix:
        _run_fix(
            argv, timeout, as_json, write=not diff, rnn_only=rnn_only, strategy=rnn_only_strategy
        )
    result = run_verify(
        argv,
        timeout=timeout,
        mode="record" if record_mode else "raise",
        until_clean_cycle=until_clean_cycle,
        strict=strict,
        stdout=_stderr_fd() if as_json else None,
    )
    click.echo(format_json(result) if as_json else format_text(result))
    sys.exit(result.exit_code)


def _run_fix(
    argv: list[str], timeout: float, as_json: bool, *, write: bool, rnn_only: bool, strategy: str
) -> None:
    from rnnfix.config.settings import Settings
    from rnnfix.verify.fixloop import verify_fix
    from rnnfix.verify.fixreport import format_fix_json, format_fix_text

    settings = Settings(
        rnn_only=rnn_only, rnn_only_strategy="cudnn-off" if strategy == "cudnn-off" else "rnn-train"
    )
    report = verify_fix(
        argv,
        settings=settings,
        timeout=timeout,
        write=write,
        stdout=_stderr_fd() if as_json else None,
    )
    click.echo(format_fix_json(report) if as_json else format_fix_text(report))
    sys.exit(report.exit_code)


def _stderr_fd() -> IO[Any] | int | None:
    """Under --json the command's stdout goes to stderr, keeping stdout pure JSON."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
