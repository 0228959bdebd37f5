"""Items 2 and 11: the cache replays only what this user's own runs computed,
under this Python."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from rnnfix.config.settings import Settings
from rnnfix.run.cache import CACHE_DIR, ResultCache, _code_fingerprint, digest, run_fingerprint
from rnnfix.run.cachekey import key_folder
from rnnfix.run.process import Outcome, process_files

from .conftest import BUGGY, FINDING_ONLY, run_rnnfix

EVIL = "import os; os.system('touch PWNED')\n"


def _old_scheme_name(settings: Settings) -> str:
    """How the cache file was named before it was signed (format 1)."""
    return hashlib.blake2b(
        f"{_code_fingerprint()}:{settings!r}".encode(), digest_size=12
    ).hexdigest()


def _forged_entry(path: Path) -> dict[str, object]:
    data = path.read_bytes()
    return {
        "digest": digest(data),
        "run": run_fingerprint([str(path)]),
        "consulted": {},
        "result": {
            "outcome": "changed",
            "findings": [],
            "applied": [],
            "initial": [],
            "dropped": [],
            "error": None,
            "error_line": None,
            "old_text": path.read_text(),
            "new_text": EVIL,
            "consulted": [],
            "notes": [],
        },
    }


def test_an_entry_of_the_old_unsigned_scheme_is_ignored(project: Path) -> None:
    train = project / "train.py"
    folder = project / CACHE_DIR
    folder.mkdir()
    entries = {str(train): _forged_entry(train)}
    payload = json.dumps({"format": 1, "entries": entries})
    (folder / f"{_old_scheme_name(Settings())}.json").write_text(payload)
    check = run_rnnfix("apply", "--check", str(train), cache=True)
    assert check.returncode == 1 and "RNF001" in check.stdout  # the real finding
    applied = run_rnnfix("apply", str(train), cache=True)
    assert applied.returncode == 0, applied.stderr
    assert "os.system" not in train.read_text() and "model.train()" in train.read_text()


def test_an_entry_under_the_right_name_without_this_users_signature_is_ignored(
    project: Path,
) -> None:
    """A fingerprint is guessable (fixed mtimes in containers, a readable
    install); the key is not."""
    train = project / "train.py"
    settings = Settings()
    name = ResultCache(project, settings).file.name  # what this run would use
    folder = project / CACHE_DIR
    folder.mkdir(exist_ok=True)
    for version in (1, 2):
        entries = {str(train): _forged_entry(train)}
        entries[str(train)]["result"]["outcome"] = "unchanged"  # type: ignore[index]
        payload = json.dumps({"format": version, "entries": entries})
        guess = hashlib.sha256(payload.encode()).hexdigest()
        (folder / name).write_text(f"{guess}\n{payload}")
        cache = ResultCache(project, settings)
        assert any("not signed" in w for w in cache.warnings)
        results = process_files([train], settings, write=False, jobs=1, cache=cache)
        assert [f.code for f in results[0].initial] == ["RNF001"]


def test_a_signed_entry_claiming_a_change_is_not_replayed(project: Path) -> None:
    """Even an entry this user's key signed never supplies the text to write
    (an older rnnfix's, or one written by a bug): a change is computed again."""
    train = project / "train.py"
    settings = Settings()
    cache = ResultCache(project, settings)
    key = str(train)
    entry = _forged_entry(train)
    cache.store(key, entry["digest"], entry["run"], {}, entry["result"], [])  # type: ignore[arg-type]
    cache.save()
    results = process_files(
        [train], settings, write=True, jobs=1, cache=ResultCache(project, settings)
    )
    assert results[0].outcome is Outcome.CHANGED
    assert "os.system" not in train.read_text() and "model.train()" in train.read_text()


def test_the_key_is_private_and_outside_the_repository(project: Path) -> None:
    run_rnnfix("apply", "--check", str(project), cache=True)
    key = key_folder() / "key"
    assert key.stat().st_mode & 0o777 == 0o600
    assert project not in key.parents
    assert len(key.read_bytes()) == 32


def test_an_unreadable_key_runs_uncached_with_a_warning(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "xdg"
    (home / "rnnfix").mkdir(parents=True)
    (home / "rnnfix" / "key").write_bytes(b"short")
    (home / "rnnfix" / "key").chmod(0o600)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    cache = ResultCache(project, Settings())
    assert any("wrong size" in w for w in cache.warnings)
    results = process_files([project / "train.py"], Settings(), write=False, jobs=1, cache=cache)
    assert [f.code for f in results[0].initial] == ["RNF001"]
    assert not (project / CACHE_DIR).exists()


def test_a_key_others_can_read_is_not_used(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "xdg"
    (home / "rnnfix").mkdir(parents=True)
    (home / "rnnfix" / "key").write_bytes(bytes(32))
    (home / "rnnfix" / "key").chmod(0o644)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    assert any("not private" in w for w in ResultCache(project, Settings()).warnings)


def test_a_warm_run_of_a_file_without_fixes_comes_from_the_cache(project: Path) -> None:
    (project / "train.py").write_text(FINDING_ONLY)
    cold = run_rnnfix("apply", "--check", str(project), cache=True)
    warm = run_rnnfix("apply", "--check", str(project), cache=True)
    assert "RNF005" in cold.stdout
    assert (cold.returncode, cold.stdout, cold.stderr) == (
        warm.returncode,
        warm.stdout,
        warm.stderr,
    )


def test_the_python_version_keys_the_cache(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 11: a 3.11 run's "newer syntax" must not be replayed under 3.12."""
    first = ResultCache(project, Settings()).file
    monkeypatch.setattr(sys, "version", "3.99.0 (other)")
    assert ResultCache(project, Settings()).file != first


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 parses nested f-strings")
def test_a_nested_f_string_is_newer_syntax_on_an_older_python(tmp_path: Path) -> None:
    path = tmp_path / "f.py"
    path.write_text('names = {"a": 1}\nprint(f"{names["a"]}")\n' + BUGGY)
    run = run_rnnfix("apply", "--check", str(path))
    assert "not checked: needs Python 3.12 to parse" in run.stderr, run.stderr
    assert "expecting '}'" not in run.stderr
