"""The command line, through click's CliRunner and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from rnnfix.cli.app import cli
from tests.cli.conftest import BUGGY, FIXED


def test_diff_writes_nothing_and_exits_1(run, tree: Path) -> None:
    result = run("--diff", str(tree))
    assert result.exit_code == 1
    assert "-model.module.train()  # keep this comment" in result.output
    assert "+model.train()  # keep this comment" in result.output
    assert (tree / "buggy.py").read_text() == BUGGY


def test_check_lists_findings_writes_nothing(run, tree: Path) -> None:
    result = run("--check", str(tree))
    assert result.exit_code == 1
    assert f"{tree / 'buggy.py'}:4:1: RNF002 [*] `model.module.train(...)`" in result.output
    assert "1 would change" in result.output
    assert (tree / "buggy.py").read_text() == BUGGY


def test_apply_fixes_and_exits_0(run, tree: Path) -> None:
    result = run(str(tree))
    assert result.exit_code == 0, result.output
    assert "1 changed, 1 fix applied, 0 findings left" in result.output
    assert (tree / "buggy.py").read_text() == FIXED


def test_stdin_to_stdout(run) -> None:
    result = run("-", input=BUGGY.encode())
    assert result.exit_code == 0
    assert result.stdout == FIXED


def test_stdin_syntax_error_echoes_input(run) -> None:
    # RNF002's text: a file no rule can report in is not parsed (``filegate``).
    result = run("-", input=b"def f(:\nm.module.eval()\n")
    assert result.exit_code == 2
    assert result.stdout == "def f(:\nm.module.eval()\n"
    assert "<stdin>:1:7: cannot parse:" in result.stderr  # with its column


def test_unsafe_fix_needs_flag(run, tmp_path: Path) -> None:
    f = tmp_path / "t.py"
    src = "def f(model):\n    model.module.eval()\n"
    f.write_text(src)
    result = run(str(f))
    assert result.exit_code == 1
    assert "RNF002 `model.module.eval(...)`" in result.output  # no [*]: hidden unsafe fix
    assert f.read_text() == src
    result = run("--unsafe-fixes", str(f))
    assert result.exit_code == 0, result.output
    assert f.read_text() == "def f(model):\n    model.eval()\n"


def test_select_and_ignore_by_prefix(tree: Path) -> None:
    r = CliRunner().invoke(cli, ["apply", "--check", "--ignore", "RNF00", str(tree)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(
        cli, ["apply", "--check", "--select", "RNF0", "--ignore", "RNF001", str(tree)]
    )
    assert r.exit_code == 1


def test_ignore_comment(run, tmp_path: Path) -> None:
    f = tmp_path / "t.py"
    f.write_text(BUGGY.replace("# keep this comment", "# rnnfix: ignore[RNF002]"))
    result = run("--check", str(f))
    assert result.exit_code == 0, result.output


def test_pyproject_config(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.rnnfix]\nignore = ["RNF002"]\n')
    (tmp_path / "t.py").write_text(BUGGY)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["apply", "--check", "t.py"])
    assert r.exit_code == 0, r.output
    (tmp_path / "pyproject.toml").write_text("[tool.rnnfix]\nbogus = 1\n")
    r = CliRunner().invoke(cli, ["apply", "--check", "t.py"])
    assert r.exit_code == 2
    assert "unknown option 'bogus'" in r.output


def test_walk_skips_gitignored_venv_and_build(run, tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("generated/\nskip_me.py\n")
    for rel in [
        "generated/a.py",
        "skip_me.py",
        ".venv/lib/b.py",
        "build/c.py",
        "env2/d.py",
        "src/e.py",
    ]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(BUGGY)
    (tmp_path / "env2" / "pyvenv.cfg").write_text("home = /usr\n")
    result = run("--check", str(tmp_path))
    assert "src/e.py" in result.output
    for skipped in ["generated", "skip_me", ".venv", "build", "env2"]:
        assert skipped not in result.output.replace("rnnfix:", "")


def test_missing_path_is_usage_error(run, tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.py"))
    assert result.exit_code == 2
    assert "no such file or folder" in result.output


def test_json_and_sarif_and_github(run, tree: Path) -> None:
    data = json.loads(run("--check", "--output-format", "json", str(tree)).stdout)
    assert data["diagnostics"][0]["code"] == "RNF002"
    assert data["diagnostics"][0]["fixable"] is True
    sarif = json.loads(run("--check", "--output-format", "sarif", str(tree)).stdout)
    assert sarif["version"] == "2.1.0"
    res = sarif["runs"][0]["results"][0]
    assert res["ruleId"] == "RNF002"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    gh = run("--check", "--output-format", "github", str(tree)).stdout
    assert gh.startswith("::warning title=rnnfix (RNF002),file=")
    assert ",line=4,endLine=4,col=1,endColumn=21::" in gh
    assert "buggy.py:4:1: RNF002 " in gh


def test_rules_and_explain() -> None:
    r = CliRunner().invoke(cli, ["rules"])
    assert r.exit_code == 0
    assert "RNF002  wrapper-mode-via-module" in r.output
    r = CliRunner().invoke(cli, ["explain", "rnf002"])
    assert r.exit_code == 0
    for heading in [
        "## What it does",
        "## Why is this bad?",
        "## Example",
        "## Use instead",
        "## Fix safety",
    ]:
        assert heading in r.output
    r = CliRunner().invoke(cli, ["explain", "RNF999"])
    assert r.exit_code == 2


def test_every_rule_documents_itself() -> None:
    from rnnfix.rules import all_rules

    for code, cls in all_rules().items():
        for heading in [
            "## What it does",
            "## Why is this bad?",
            "## Example",
            "## Use instead",
            "## Fix safety",
        ]:
            assert heading in cls.docs, f"{code} docs lack {heading!r}"
        assert cls.fix_safety in ("safe", "unsafe", "opt-in", "none")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


def test_subprocess_end_to_end(tree: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rnnfix", "apply", "--select", "RNF002", str(tree)],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert "1 changed" in proc.stderr
    assert (tree / "buggy.py").read_text() == FIXED


def test_help_and_apply_never_import_torch(tree: Path) -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from rnnfix.cli.app import cli\n"
        "CliRunner().invoke(cli, ['--help'])\n"
        f"r = CliRunner().invoke(cli, ['apply', '--check', {str(tree)!r}])\n"
        "assert r.exception is None or isinstance(r.exception, SystemExit), r.output\n"
        "print('torch' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_parallel_jobs_give_the_same_results(tmp_path: Path) -> None:
    from rnnfix.config.settings import Settings
    from rnnfix.run.process import process_files

    for i in range(6):
        (tmp_path / f"b{i}.py").write_text(BUGGY if i % 2 else "x = 1\n")
    files = sorted(tmp_path.iterdir())
    serial = process_files(files, Settings(), write=False, jobs=1)
    parallel = process_files(files, Settings(), write=False, jobs=2)
    assert [(r.path, r.outcome, r.new_text) for r in serial] == [
        (r.path, r.outcome, r.new_text) for r in parallel
    ]
