"""Where a file's settings come from, as in ruff: the nearest
``pyproject.toml`` with a ``[tool.rnnfix]`` table above *that file* (so the
order of the paths given never matters, and stdin looks from
``--stdin-filename``); the search stops at the repository root and skips
files another user owns (issue 38, items 1 and 2)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rnnfix.cli.app import cli
from rnnfix.config.pyproject import find_pyproject
from rnnfix.config.settings import Settings
from tests.cli.conftest import BUGGY
from tests.security.conftest import run_rnnfix

IGNORE_RNF002 = '[tool.rnnfix]\nignore = ["RNF002"]\n'


def _cli(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input)


def _findings(result: Result) -> list[str]:
    return sorted(line for line in result.stdout.splitlines() if ": RNF" in line)


def _two_projects(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    for project in (a, b):
        project.mkdir()
        (project / "train.py").write_text(BUGGY)
    (a / "pyproject.toml").write_text(IGNORE_RNF002)
    return a, b


def test_each_file_uses_its_own_nearest_configuration(tmp_path: Path) -> None:
    a, b = _two_projects(tmp_path)
    forward, backward = _cli("check", str(a), str(b)), _cli("check", str(b), str(a))
    assert _findings(forward) == _findings(backward)
    assert _findings(forward) == [f"{b / 'train.py'}:4:1: RNF002 [*] " + _message(forward)]
    # Files named one by one, as pre-commit names them, agree with the folders.
    files = _cli("check", str(b / "train.py"), str(a / "train.py"))
    assert _findings(files) == _findings(forward)


def _message(result: Result) -> str:
    line = next(line for line in result.stdout.splitlines() if ": RNF002" in line)
    return line.split(" [*] ", 1)[1]


def test_apply_fixes_each_file_under_its_own_configuration(tmp_path: Path) -> None:
    a, b = _two_projects(tmp_path)
    result = _cli("apply", str(a), str(b))
    assert result.exit_code == 0, result.output
    assert (a / "train.py").read_text() == BUGGY  # RNF002 ignored there
    assert (b / "train.py").read_text() != BUGGY


def test_a_pyproject_without_a_tool_rnnfix_table_is_passed_over(tmp_path: Path) -> None:
    """As ruff does with a pyproject.toml without [tool.ruff]."""
    (tmp_path / "pyproject.toml").write_text(IGNORE_RNF002)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "pyproject.toml").write_text("[project]\nname = 'sub'\n")
    (sub / "train.py").write_text(BUGGY)
    assert find_pyproject(sub / "train.py") == tmp_path / "pyproject.toml"
    assert _cli("check", str(sub)).exit_code == 0


def test_stdin_looks_for_settings_from_the_stdin_filename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _two_projects(tmp_path)
    monkeypatch.chdir(b)  # no configuration here: RNF002 would be reported
    result = _cli("check", "--stdin-filename", str(a / "train.py"), "-", input=BUGGY)
    assert result.exit_code == 0, result.output
    result = _cli("check", "--stdin-filename", str(b / "train.py"), "-", input=BUGGY)
    assert result.exit_code == 1


def test_show_settings_names_the_first_paths_configuration(tmp_path: Path) -> None:
    a, b = _two_projects(tmp_path)
    assert (
        f"# settings from {a / 'pyproject.toml'}" in _cli("check", "--show-settings", str(a)).stdout
    )
    assert "# settings from defaults" in _cli("check", "--show-settings", str(b), str(a)).stdout


def test_the_search_stops_at_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(IGNORE_RNF002)
    for marker in ("dir", "file"):  # a clone's .git folder, a worktree's .git file
        repo = tmp_path / f"repo_{marker}"
        repo.mkdir()
        if marker == "dir":
            (repo / ".git").mkdir()
        else:
            (repo / ".git").write_text("gitdir: /elsewhere\n")
        (repo / "train.py").write_text(BUGGY)
        assert find_pyproject(repo / "train.py") is None
        assert _cli("check", str(repo)).exit_code == 1, marker
    # The repository root's own configuration counts.
    (tmp_path / "repo_dir" / "pyproject.toml").write_text(IGNORE_RNF002)
    assert _cli("check", str(tmp_path / "repo_dir")).exit_code == 0


@pytest.fixture
def foreign(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """Make a file another user's: chown as root; otherwise the run is
    made to believe it is another user."""
    if not hasattr(os, "getuid"):
        pytest.skip("no file owners here")

    def make(path: Path) -> None:
        if os.getuid() == 0:
            os.chown(path, 4242, 4242)
        else:
            uid = os.getuid() + 1
            monkeypatch.setattr(os, "getuid", lambda: uid)

    return make


def _under_a_planted_configuration(tmp_path: Path, config: str) -> tuple[Path, Path]:
    """A project in a shared folder (/tmp, another account's home) that
    holds a ``pyproject.toml``: (the project, that file)."""
    project = tmp_path / "shared" / "project"
    project.mkdir(parents=True)
    (project / "train.py").write_text(BUGGY)
    planted = tmp_path / "shared" / "pyproject.toml"
    planted.write_text(config)
    return project, planted


def test_a_configuration_another_user_owns_is_ignored(
    tmp_path: Path, foreign: Callable[[Path], None]
) -> None:
    project, planted = _under_a_planted_configuration(tmp_path, IGNORE_RNF002)
    foreign(planted)
    result = _cli("check", str(project))
    assert result.exit_code == 1, result.output
    assert "RNF002" in result.stdout
    notes = [line for line in result.stderr.splitlines() if str(planted) in line]
    assert len(notes) == 1 and "another user" in notes[0], result.stderr
    # --config names the file on purpose: it is read.
    assert _cli("check", "--config", str(planted), str(project)).exit_code == 0


def test_the_cache_never_goes_where_another_users_marker_is(
    tmp_path: Path, foreign: Callable[[Path], None]
) -> None:
    from rnnfix.run.cache import cache_root

    project, planted = _under_a_planted_configuration(tmp_path, "[project]\nname = 'x'\n")
    foreign(planted)
    assert cache_root([project / "train.py"]) == project


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs chown (root)")
def test_a_checkout_another_user_owns_keeps_its_configuration(tmp_path: Path) -> None:
    """A CI container running as root over a checkout the runner's user made:
    the configuration and the repository are the same user's, so it is the
    project's own and configures the run, as ruff and git read it."""
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(IGNORE_RNF002)
    (repo / "train.py").write_text(BUGGY)
    for path in (repo / ".git", repo / "pyproject.toml"):
        os.chown(path, 4242, 4242)
    result = _cli("check", str(repo))
    assert result.exit_code == 0, result.output
    assert "another user" not in result.stderr
    # A planted configuration in a repository someone else owns is not that.
    os.chown(repo / ".git", 4343, 4343)
    result = _cli("check", str(repo))
    assert result.exit_code == 1 and "another user" in result.stderr, result.output


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs chown (root)")
def test_a_foreign_configuration_in_a_real_run(tmp_path: Path) -> None:
    project, planted = _under_a_planted_configuration(tmp_path, '[tool.rnnfix]\nignore = ["RNF"]\n')
    os.chown(planted, 4242, 4242)
    proc = run_rnnfix("check", "--no-cache", str(project))
    assert proc.returncode == 1, proc.stderr
    assert "owned by another user" in proc.stderr


def test_a_configuration_below_a_walked_folder_applies_its_exclusions(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    (sub / "generated").mkdir(parents=True)
    (sub / "pyproject.toml").write_text('[tool.rnnfix]\nexclude = ["generated/"]\n')
    (sub / "generated" / "train.py").write_text(BUGGY)
    (sub / "train.py").write_text(BUGGY)
    result = _cli("check", "--show-files", str(tmp_path))
    assert result.stdout.splitlines() == [str(sub / "train.py")]


def test_the_editor_uses_the_same_configuration_per_file(tmp_path: Path) -> None:
    from rnnfix.lsp.analysis import SettingsCache

    def settings_for(path: Path) -> Settings:
        return SettingsCache().settings_for(str(path))[0]

    a, b = _two_projects(tmp_path)
    assert "RNF002" in settings_for(a / "train.py").ignore
    assert "RNF002" not in settings_for(b / "train.py").ignore
    # A pyproject.toml without [tool.rnnfix] nearer the file is passed over there too.
    (a / "pkg").mkdir()
    (a / "pkg" / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    assert "RNF002" in settings_for(a / "pkg" / "train.py").ignore


def test_the_editor_rereads_a_configuration_rewritten_in_the_same_second(
    tmp_path: Path,
) -> None:
    """Its settings cache keys on the file's bytes, as the result cache does
    (issue 38, item 13): not on its modification time."""
    from rnnfix.lsp.analysis import SettingsCache

    config = tmp_path / "pyproject.toml"
    config.write_text(IGNORE_RNF002)
    cache = SettingsCache()
    doc = str(tmp_path / "train.py")
    assert "RNF002" in cache.settings_for(doc)[0].ignore
    st = config.stat()
    config.write_text(IGNORE_RNF002.replace("RNF002", "RNF005"))
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert config.stat().st_size == st.st_size
    assert cache.settings_for(doc)[0].ignore == ("RNF005",)
