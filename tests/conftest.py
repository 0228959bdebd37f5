"""Suite-wide set-up."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_result_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    # Most tests look at every file of a temporary tree before and after a run;
    # the cache folder a run creates would be one more. tests/test_cache.py
    # turns the cache back on where it is what is tested.
    monkeypatch.setenv("RNNFIX_NO_CACHE", "1")
