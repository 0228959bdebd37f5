"""``per-file-ignores`` in ``[tool.rnnfix]``: ruff's semantics (globs
relative to the project root, or a file name; ``!`` negates)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rnnfix.cli.app import cli
from rnnfix.config.perfile import ignored_codes
from rnnfix.config.pyproject import ConfigError, load_settings
from rnnfix.config.settings import Settings
from tests.cli.conftest import BUGGY, FIXED


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.rnnfix.per-file-ignores]\n{table}\n")
    for rel in ("train.py", "scripts/old.py", "src/pkg/__init__.py", "src/pkg/model.py"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BUGGY)
    return tmp_path


def _fixed(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*.py") if p.read_text() == FIXED}


@pytest.mark.parametrize(
    ("table", "fixed"),
    [
        ('"scripts/*.py" = ["RNF002"]', {"train.py", "src/pkg/__init__.py", "src/pkg/model.py"}),
        ('"__init__.py" = ["RNF002"]', {"train.py", "scripts/old.py", "src/pkg/model.py"}),
        ('"**/__init__.py" = ["RNF"]', {"train.py", "scripts/old.py", "src/pkg/model.py"}),
        ('"src/*" = ["RNF002"]', {"train.py", "scripts/old.py"}),  # "*" crosses folders
        ('"!src/**" = ["RNF002"]', {"src/pkg/__init__.py", "src/pkg/model.py"}),
        ('"{scripts,src}/**" = ["RNF002"]', {"train.py"}),
        (
            '"train.py" = ["RNF001"]',
            {"train.py", "scripts/old.py", "src/pkg/__init__.py", "src/pkg/model.py"},
        ),
        ('"train.py" = "rnf002"', {"scripts/old.py", "src/pkg/__init__.py", "src/pkg/model.py"}),
    ],
)
def test_matching_files_skip_the_codes(tmp_path: Path, table: str, fixed: set[str]) -> None:
    root = _project(tmp_path, table)
    result = CliRunner().invoke(cli, ["apply", "--no-cache", str(root)])
    assert result.exit_code == 0, result.output
    assert _fixed(root) == fixed


def test_the_root_is_the_config_folder_not_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path, '"scripts/*.py" = ["RNF002"]')
    monkeypatch.chdir(root / "scripts")  # relative paths, from another folder
    result = CliRunner().invoke(cli, ["apply", "--check", "--no-cache", "old.py", "../train.py"])
    assert result.exit_code == 1
    assert "../train.py:4:1: RNF002" in result.stdout
    assert "old.py" not in result.stdout


def test_stdin_filename_is_matched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, '"scripts/*.py" = ["RNF002"]')
    monkeypatch.chdir(tmp_path)
    args = ["apply", "-", "--stdin-filename"]
    ignored = CliRunner().invoke(cli, [*args, "scripts/new.py"], input=BUGGY)
    assert ignored.exit_code == 0 and ignored.stdout == BUGGY
    fixed = CliRunner().invoke(cli, [*args, "new.py"], input=BUGGY)
    assert fixed.stdout == FIXED


def test_the_cache_keys_on_the_setting(tmp_path: Path) -> None:
    root = _project(tmp_path, '"train.py" = ["RNF002"]')
    assert "train.py" not in CliRunner().invoke(cli, ["apply", "--check", str(root)]).stdout
    (root / "pyproject.toml").write_text('[tool.rnnfix.per-file-ignores]\n"x.py" = ["RNF002"]\n')
    assert "train.py:4:1" in CliRunner().invoke(cli, ["apply", "--check", str(root)]).stdout


def test_settings_read_and_checked(tmp_path: Path) -> None:
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[tool.rnnfix]\nper-file-ignores = { "a/*.py" = ["rnf001", "RNF003"] }\n')
    settings = load_settings(cfg)
    assert settings.per_file_ignores == (("a/*.py", ("RNF001", "RNF003")),)
    assert settings.root == str(tmp_path.resolve())
    assert settings.for_path(str(tmp_path / "a" / "t.py")).ignore == ("RNF001", "RNF003")
    assert settings.for_path(str(tmp_path / "b.py")) is settings
    for bad in (
        'per-file-ignores = ["x"]',
        'per-file-ignores = { "x" = [1] }',
        'per-file-ignores = { "!" = ["RNF001"] }',
    ):
        cfg.write_text(f"[tool.rnnfix]\n{bad}\n")
        with pytest.raises(ConfigError, match="per-file-ignores"):
            load_settings(cfg)


def test_no_setting_no_change() -> None:
    assert Settings().for_path("train.py") == Settings()
    assert ignored_codes("<stdin>", "/x", (("*", ("RNF",)),)) == ()
