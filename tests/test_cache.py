"""The result cache (``rnnfix/run/cache.py``): a warm run answers from it, and it
never answers with a stale result.

Each invalidation test changes one input and checks that the result is the one
a run without the cache gives; ``_forbid_fixing`` proves that a run was served
from the cache (fixing anything would raise).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import rnnfix.analysis.project.index
import rnnfix.run.cache
import rnnfix.run.engine
import rnnfix.run.process
from rnnfix.cli.app import cli
from rnnfix.config.settings import Settings
from rnnfix.run.cache import CACHE_DIR, ResultCache, cache_root
from rnnfix.run.process import FileResult, Outcome, process_files
from rnnfix.source.files import discover

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HELPER_PROJECT = FIXTURES / "project" / "helper_in_other_file"
RESTORING_UTILS = (FIXTURES / "project" / "noop_helper_restores_train" / "utils.py").read_text()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(HELPER_PROJECT, root)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return root


def _run(root: Path, settings: Settings | None = None, write: bool = False) -> list[FileResult]:
    settings = settings or Settings()
    files = sorted(discover([root]))
    cache = ResultCache(cache_root(files), settings)
    results = process_files(files, settings, write=write, jobs=1, cache=cache)
    assert not cache.warnings
    return results


def _uncached(root: Path, settings: Settings | None = None) -> list[FileResult]:
    files = sorted(discover([root]))
    return process_files(files, settings or Settings(), write=False, jobs=1)


def _summary(results: list[FileResult]) -> list[tuple[str, str, list[tuple[str, int, str]]]]:
    return [
        (
            Path(r.path).name,
            r.outcome.value,
            [(f.code, f.line, f.message) for f in r.findings + r.initial + r.applied],
        )
        for r in results
    ]


def _forbid_fixing(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("the engine ran: the cache was not used")

    # ``process_text`` imports ``fix_source`` from the engine when it fixes.
    monkeypatch.setattr(rnnfix.run.engine, "fix_source", boom)
    monkeypatch.setattr(rnnfix.analysis.project.index.ProjectIndex, "build", boom)


def test_warm_run_is_served_from_the_cache(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(project, write=True)  # fixed: nothing left to write
    cold = _run(project)
    assert all(r.outcome is Outcome.UNCHANGED for r in cold)
    assert any(r.findings for r in cold) or any(r.consulted for r in cold)
    _forbid_fixing(monkeypatch)
    warm = _run(project)
    assert _summary(warm) == _summary(cold)


def test_a_file_with_a_fix_is_analysed_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache never holds the text rnnfix writes: a file with a fix is
    fixed from its source on every run (``rnnfix.run.cache``)."""
    cold = _run(project)
    assert any(r.outcome is Outcome.CHANGED for r in cold)
    fixed: list[str] = []
    real = rnnfix.run.engine.fix_source

    def spy(text: str, *args: object, **kwargs: object) -> object:
        fixed.append(str(args[1]) if len(args) > 1 else "")
        return real(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(rnnfix.run.engine, "fix_source", spy)
    warm = _run(project)
    assert _summary(warm) == _summary(cold)
    changed = [r for r in warm if r.outcome is Outcome.CHANGED]
    assert changed and all(r.new_text and r.old_text for r in changed)
    assert {Path(r.path).name for r in changed} <= {Path(f).name for f in fixed}


def test_cache_folder_ignores_itself(project: Path) -> None:
    _run(project)
    folder = project / CACHE_DIR
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    assert [p.suffix for p in folder.iterdir() if p.name != ".gitignore"] == [".json"]
    # and discovery never takes it for code
    assert all(CACHE_DIR not in p.parts for p in discover([project]))


def test_a_changed_file_is_analysed_again(project: Path) -> None:
    _run(project)
    train = project / "train.py"
    train.write_text(train.read_text() + "\nmodel.train()\n")
    assert _summary(_run(project)) == _summary(_uncached(project))


def test_a_changed_consulted_file_invalidates_its_callers(project: Path) -> None:
    before = {Path(r.path).name: r.outcome for r in _run(project)}
    assert before["train.py"] is Outcome.CHANGED
    # utils.evaluate now restores train mode: train.py needs no fix any more.
    (project / "utils.py").write_text(RESTORING_UTILS)
    after = _run(project)
    assert {Path(r.path).name: r.outcome for r in after}["train.py"] is Outcome.UNCHANGED
    assert _summary(after) == _summary(_uncached(project))


def test_a_new_file_in_the_run_invalidates(project: Path) -> None:
    _run(project)
    (project / "extra.py").write_text("x = 1\n")
    assert _summary(_run(project)) == _summary(_uncached(project))


def test_settings_have_caches_of_their_own(project: Path) -> None:
    _run(project)
    only_rnf002 = Settings(select=("RNF002",))
    assert _summary(_run(project, only_rnf002)) == _summary(_uncached(project, only_rnf002))
    assert len([p for p in (project / CACHE_DIR).glob("*.json")]) == 2


def test_a_new_rnnfix_version_starts_afresh(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(project)
    monkeypatch.setattr(rnnfix.run.cache, "__version__", "999.0")
    _run(project)
    assert len([p for p in (project / CACHE_DIR).glob("*.json")]) == 2


def test_corrupt_cache_is_ignored_with_a_warning(project: Path) -> None:
    _run(project)
    (cache_file,) = (project / CACHE_DIR).glob("*.json")
    cache_file.write_text("{not json")
    files = sorted(discover([project]))
    cache = ResultCache(cache_root(files), Settings())
    assert cache.warnings and "corrupt cache" in cache.warnings[0]
    results = process_files(files, Settings(), write=False, jobs=1, cache=cache)
    assert _summary(results) == _summary(_uncached(project))


def _forge(cache_file: Path, data: object) -> None:
    """Sign ``data`` as this user's run would (the tests' key)."""
    cache = ResultCache(cache_file.parent.parent, Settings())
    assert cache.file == cache_file
    payload = json.dumps(data).encode()
    cache_file.write_bytes(cache._sign(payload).encode() + b"\n" + payload)


def test_entries_of_the_wrong_shape_are_misses(project: Path) -> None:
    _run(project)
    (cache_file,) = (project / CACHE_DIR).glob("*.json")
    entries = {"x": 1, str(project / "train.py"): {"digest": 3}}
    _forge(cache_file, {"format": 2, "entries": entries})
    assert _summary(_run(project)) == _summary(_uncached(project))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_cache_folder_is_a_warning(project: Path) -> None:
    folder = project / CACHE_DIR
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        files = sorted(discover([project]))
        cache = ResultCache(cache_root(files), Settings())
        results = process_files(files, Settings(), write=False, jobs=1, cache=cache)
        assert any("cannot write the cache" in w for w in cache.warnings)
        assert _summary(results) == _summary(_uncached(project))
    finally:
        folder.chmod(stat.S_IRWXU)


def test_unwritable_cache_location_is_a_warning(project: Path) -> None:
    # A file where the folder should be: unwritable for root too.
    (project / CACHE_DIR).write_text("not a folder")
    files = sorted(discover([project]))
    cache = ResultCache(cache_root(files), Settings())
    results = process_files(files, Settings(), write=False, jobs=1, cache=cache)
    assert any("cannot write the cache" in w for w in cache.warnings)
    assert _summary(results) == _summary(_uncached(project))


def test_a_check_is_answered_from_the_findings_of_a_file_with_a_fix(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings()
    files = sorted(discover([project]))
    cold = process_files(files, settings, write=False, jobs=1, cache=ResultCache(project, settings))
    _forbid_fixing(monkeypatch)
    cache = ResultCache(project, settings)
    warm = process_files(files, settings, write=False, jobs=1, cache=cache, texts=False)
    assert _summary(warm) == _summary(cold)
    assert [r.followups for r in warm] == [r.followups for r in cold]
    changed = [r for r in warm if r.outcome is Outcome.CHANGED]
    assert changed and all(r.new_text is None for r in changed)  # the cache holds no text


def test_apply_after_a_cached_check_writes_what_an_uncached_run_does(project: Path) -> None:
    _run(project)  # --check
    expected = {Path(r.path).name: r.new_text for r in _uncached(project)}
    _run(project, write=True)
    for name, text in expected.items():
        assert (project / name).read_text() == text


def test_cli_warm_run_prints_what_the_cold_run_printed(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RNNFIX_NO_CACHE")
    runner = CliRunner()
    cold = runner.invoke(cli, ["apply", "--check", str(project)])
    assert (project / CACHE_DIR).is_dir()
    warm = runner.invoke(cli, ["apply", "--check", str(project)])
    assert (cold.exit_code, cold.output) == (warm.exit_code, warm.output) == (1, warm.output)


def test_cli_warns_and_goes_on_with_a_corrupt_cache(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RNNFIX_NO_CACHE")
    runner = CliRunner()
    runner.invoke(cli, ["apply", "--check", str(project)])
    (cache_file,) = (project / CACHE_DIR).glob("*.json")
    cache_file.write_bytes(b"\xff\xfe garbage")
    result = runner.invoke(cli, ["apply", "--check", str(project)])
    assert result.exit_code == 1
    assert "warning:" in result.output and "corrupt cache" in result.output


def test_no_cache_flag_writes_nothing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RNNFIX_NO_CACHE")
    subprocess.run(
        [sys.executable, "-m", "rnnfix", "apply", "--check", "--no-cache", str(project)],
        capture_output=True,
        check=False,
    )
    assert not (project / CACHE_DIR).exists()
    proc = subprocess.run(
        [sys.executable, "-m", "rnnfix", "apply", "--check", str(project)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert (project / CACHE_DIR).is_dir()


def test_a_warm_run_imports_no_engine_rules_or_libcst(project: Path) -> None:
    """A run whose results all come from the cache only hashes and reads:
    the engine, the rules and libcst are what a cold start pays for. A
    ``--check`` is answered from the findings of a file with a fix too."""
    code = (
        "import sys\n"
        "from rnnfix.cli.app import main\n"
        f"sys.argv = ['rnnfix', 'apply', '--check', {str(project)!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('rnnfix.run.engine', 'rnnfix.rules.rnf001_train_step_in_eval_mode', 'libcst',"
        " 'rnnfix.verify')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RNNFIX_NO_CACHE"}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
        )
        for _ in range(2)
    ]
    assert "LOADED ['rnnfix.run.engine'" in runs[0].stdout, runs[0].stdout + runs[0].stderr
    assert "LOADED []" in runs[1].stdout, runs[1].stdout + runs[1].stderr


def _same_size_and_mtime(path: Path, old: str, new: str) -> None:
    """Replace ``old`` by ``new`` in ``path`` keeping its size and mtime: the
    cache keys files on their bytes, never on what ``stat`` says."""
    st = path.stat()
    text = path.read_text()
    assert len(old) == len(new) and text.count(old) == 1
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def _full(results: list[FileResult]) -> list[tuple[object, ...]]:
    """Everything a result reports, fixes' safety and dropped fixes included."""
    return [
        (
            Path(r.path).name,
            r.outcome.value,
            [(f.code, f.line, f.col, f.message, f.fix and f.fix.safe) for f in r.reported],
            [(f.code, f.line, f.message) for f in r.findings],
            [(d.finding.code, d.finding.line, d.reason) for d in r.dropped],
            sorted(Path(c).name for c in r.consulted),
            r.error,
        )
        for r in results
    ]


@pytest.mark.parametrize("texts", [False, True], ids=["check", "diff"])
def test_an_edit_of_a_file_a_finding_depends_on_gives_the_cold_result(
    project: Path, monkeypatch: pytest.MonkeyPatch, texts: bool
) -> None:
    """Issue 28: a warm run after an edit of ``utils.py`` (which train.py's
    RNF001 finding depends on through ``evaluate``) equals a cold run, both
    ways, and re-checks only the edited file and the files that consulted it."""
    settings = Settings()
    files = sorted(discover([project]))

    def warm() -> list[FileResult]:
        cache = ResultCache(cache_root(files), settings)
        results = process_files(files, settings, write=False, jobs=1, cache=cache, texts=texts)
        assert not cache.warnings
        return results

    def cold() -> list[FileResult]:
        return process_files(files, settings, write=False, jobs=1, texts=texts)

    first = warm()
    by_name = {Path(r.path).name: r for r in first}
    assert [f.code for f in by_name["train.py"].reported] == ["RNF001"]
    assert str(project / "utils.py") in by_name["train.py"].consulted
    checked: list[str] = []
    real = rnnfix.run.process.process_text

    def spy(name: str, *args: Any, **kwargs: Any) -> FileResult:
        checked.append(Path(name).name)  # checked again: the gate, then the engine
        return real(name, *args, **kwargs)

    monkeypatch.setattr(rnnfix.run.process, "process_text", spy)
    utils = project / "utils.py"
    # ``model.half()`` sets no mode: evaluate no longer leaves the model in
    # eval mode, so train.py has nothing to report. Then back again.
    for old, new in (("model.eval()", "model.half()"), ("model.half()", "model.eval()")):
        _same_size_and_mtime(utils, old, new)
        checked.clear()
        after = warm()
        assert "train.py" in checked and "models.py" not in checked
        assert _full(after) == _full(cold())
        reported = {Path(r.path).name: [f.code for f in r.reported] for r in after}
        assert reported["train.py"] == ([] if new == "model.half()" else ["RNF001"])
        checked.clear()
        again = warm()
        # Then all from the cache, but for a changed file's text (a diff).
        changed = [Path(r.path).name for r in after if r.outcome is Outcome.CHANGED]
        assert _full(again) == _full(after) and checked == (changed if texts else [])


REPORT = """from models import Tagger
from utils import evaluate

model = Tagger(vocab=10)
print(evaluate(model, []))
"""


def _with_a_fix_in_utils(project: Path) -> Path:
    """utils.py with a fix that leaves its summary as it was (a module-level
    RNF002), and report.py, which consults utils.py and has nothing to fix."""
    utils = project / "utils.py"
    utils.write_text(
        utils.read_text()
        + "\n\nwrapped = torch.nn.DataParallel(torch.nn.Linear(2, 2))\nwrapped.module.train()\n"
    )
    (project / "report.py").write_text(REPORT)
    return utils


def _texts_run(root: Path, cache: bool, texts: bool = True) -> list[FileResult]:
    settings = Settings()
    files = sorted(discover([root]))
    rc = ResultCache(cache_root(files), settings) if cache else None
    results = process_files(files, settings, write=False, jobs=1, cache=rc, texts=texts)
    assert rc is None or not rc.warnings
    return results


def _checked_names(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    checked: list[str] = []
    real = rnnfix.run.process.process_text

    def spy(name: str, *args: Any, **kwargs: Any) -> FileResult:
        checked.append(Path(name).name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(rnnfix.run.process, "process_text", spy)
    return checked


def test_a_warm_diff_fixes_again_only_the_files_with_a_fix(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37: a warm ``--diff`` re-fixes the files with a fix (their text
    is never cached), not every file that consulted one of them: report.py
    consulted utils.py, whose fix (a module-level RNF002) leaves its
    summary as it was, so report.py's cached result stands."""
    utils = _with_a_fix_in_utils(project)
    cold = _texts_run(project, cache=False)
    by_name = {Path(r.path).name: r for r in cold}
    assert by_name["utils.py"].outcome is Outcome.CHANGED
    assert str(utils) in by_name["report.py"].consulted
    assert by_name["report.py"].outcome is Outcome.UNCHANGED
    _texts_run(project, cache=True)  # primes the cache
    checked = _checked_names(monkeypatch)
    warm = _texts_run(project, cache=True)
    assert _full(warm) == _full(cold)
    assert sorted(checked) == ["train.py", "utils.py"]


@pytest.mark.parametrize("primed_by", ["check", "diff"])
def test_a_hit_that_consulted_a_helper_whose_fix_changes_its_summary_is_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, primed_by: str
) -> None:
    """utils.py's fix (RNF003 puts ``evaluate`` in eval mode) changes its
    summary: a cached result of a file that consulted it is checked again
    against the fixed summary, as a run without the cache does, whatever
    run stored it."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURES / "project" / "fixed_helper_breaks_caller", root)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "report.py").write_text(
        "import utils\nfrom torch import nn\n\nprint(utils.evaluate(nn.Linear(8, 2), []))\n"
    )
    cold = _texts_run(root, cache=False)
    by_name = {Path(r.path).name: r for r in cold}
    assert by_name["utils.py"].outcome is Outcome.CHANGED
    assert str(root / "utils.py") in by_name["report.py"].consulted
    _texts_run(root, cache=True, texts=primed_by == "diff")
    checked = _checked_names(monkeypatch)
    warm = _texts_run(root, cache=True)
    assert _full(warm) == _full(cold)
    assert "report.py" in checked
    checked.clear()
    assert _full(_texts_run(root, cache=True)) == _full(cold)


def test_a_warm_run_fixes_with_as_many_workers_as_a_cold_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37: the files a warm run has left to fix are the costly ones;
    it used to pick its workers by their number (one, below the threshold),
    where a run without the cache picks them by the run's."""
    import rnnfix.run.pool

    _with_a_fix_in_utils(project)
    files = sorted(discover([project]))
    settings = Settings()
    cache = ResultCache(cache_root(files), settings)
    process_files(files, settings, write=False, cache=cache, texts=True)
    monkeypatch.setattr(rnnfix.run.process, "PARALLEL_THRESHOLD", len(files))
    monkeypatch.setattr(rnnfix.run.process.os, "cpu_count", lambda: 2)
    jobs: list[int] = []
    real = rnnfix.run.pool.FilePool.__init__

    def spy(self: Any, work: Any, settings: Settings, project: Any, n: int) -> None:
        jobs.append(n)
        real(self, work, settings, project, n)

    monkeypatch.setattr(rnnfix.run.pool.FilePool, "__init__", spy)
    process_files(files, settings, write=False, cache=None, texts=True)
    assert jobs == [2]  # the threshold is the run's size: a pool
    jobs.clear()
    warm = process_files(files, settings, write=False, cache=cache, texts=True)
    changed = [r for r in warm if r.outcome is Outcome.CHANGED]
    assert len(changed) == 2 < len(files)  # fewer left than the threshold
    assert jobs == [2]  # a worker each, not one process for both


def test_a_file_rewritten_in_the_same_second_to_the_same_size_is_checked_again(
    tmp_path: Path,
) -> None:
    """Issue 38, item 13, in real processes: the cache keys a file's entry
    on its bytes (a SHA-256), never on its size and modification time."""
    f = tmp_path / "train.py"
    buggy = "import torch.nn as nn\nm = nn.DataParallel(nn.Linear(2, 2))\nm.module.train()\n"
    clean = buggy.replace("m.module.train()", "m.module.half() ")
    assert len(clean) == len(buggy)
    env = {k: v for k, v in os.environ.items() if k != "RNNFIX_NO_CACHE"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rnnfix", "check", "--select", "RNF002", str(f)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    for first, second in ((buggy, clean), (clean, buggy)):
        f.write_text(first)
        st = f.stat()
        assert check().returncode == (1 if first is buggy else 0)
        assert (tmp_path / CACHE_DIR).is_dir()
        f.write_text(second)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same second, the same size
        assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
        again = check()
        assert again.returncode == (1 if second is buggy else 0), again.stdout + again.stderr
