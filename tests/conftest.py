"""Suite-wide set-up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# One thread per torch process. pytest-xdist runs a worker per core already,
# and torch's OpenMP pool (a thread per core, spinning between operations) in
# each worker and in each script a test runs under the sanitizer made the
# CPU-bound end-to-end tests about five times slower on two cores (the
# README's LSTM example: 63 s wall for a run that takes 12 s with one thread).
# Set before anything imports torch; subprocesses inherit it. A value of the
# caller's own is kept.
for _threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")


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
