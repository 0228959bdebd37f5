"""Resource bounds: the per-file size limit is a setting; deep code is handled."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rnnfix.cli.app import cli
from rnnfix.config.settings import Settings
from rnnfix.run.process import Outcome, process_text


def test_max_file_size_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.rnnfix]\nmax-file-size = 100\n")
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 40)  # 240 bytes
    small = tmp_path / "small.py"
    small.write_text("x = 1\n")
    result = CliRunner().invoke(cli, ["apply", "--check", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{big}: file too large (240 bytes > 100; see max-file-size)" in result.output
    assert "2 files checked" in result.output


def test_max_file_size_must_be_a_positive_number(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.rnnfix]\nmax-file-size = "big"\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    result = CliRunner().invoke(cli, ["apply", "--check", str(tmp_path)])
    assert result.exit_code == 2
    assert "max-file-size must be a positive number of bytes" in result.output


def test_long_function_and_deep_nesting_do_not_crash() -> None:
    long = "import torch\ndef f(model, x):\n    model.eval()\n"
    long += "".join(f"    y{i} = model(x)\n" for i in range(3000))
    long += "    loss.backward()\n    opt.step()\n"
    assert process_text("long.py", long, Settings()).outcome is not Outcome.FAILED
    nested = "import torch\ndef f(model, x):\n"
    nested += "".join("    " * (d + 1) + "if x:\n" for d in range(90))
    nested += "    " * 91 + "model.eval()\n"
    assert process_text("nested.py", nested, Settings()).outcome is not Outcome.FAILED
    # Beyond what Python itself parses: a one-line reason, never a crash.
    deep = "x = " + "(" * 10000 + "m.eval()" + ")" * 10000 + "\n"  # parsed: a mode call
    result = process_text("deep.py", deep, Settings())
    assert result.outcome is Outcome.FAILED
    assert result.error is not None and result.error.startswith("cannot parse")
