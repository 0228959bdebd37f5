"""Suite-wide set-up."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _cache_key_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(autouse=True)
def _no_result_cache(monkeypatch: pytest.MonkeyPatch, _cache_key_home: Path) -> None:
    # The cache's signing key (``rnnfix.run.cachekey``) goes to a folder of the
    # session's, never to the user's own ``~/.cache``.
    monkeypatch.setenv("XDG_CACHE_HOME", str(_cache_key_home))
    # Most tests look at every file of a temporary tree before and after a run;
    # the cache folder a run creates would be one more. tests/test_cache.py
    # turns the cache back on where it is what is tested.
    monkeypatch.setenv("RNNFIX_NO_CACHE", "1")
