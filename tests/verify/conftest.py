"""Shared setup for the ``rnnfix verify`` tests.

Test modules that need torch (CPU is enough) start with
``pytest.importorskip("torch")``, so without it they are skipped. The
``gpu`` marker is registered here too (pyproject also does).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "verify"

if str(REPO) not in sys.path:
    # Run from a checkout without installing: make `rnnfix` importable.
    sys.path.insert(0, str(REPO))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs CUDA and cuDNN; skipped without them")


@pytest.fixture
def sanitizer() -> Iterator[object]:
    """The sanitizer installed in this process for one test, record mode."""
    from rnnfix import verify

    verify.install("record")
    verify.clear_records()
    try:
        yield verify
    finally:
        verify.uninstall()
        verify.clear_records()


@pytest.fixture
def raising() -> Iterator[object]:
    """The sanitizer installed in this process for one test, raise mode."""
    from rnnfix import verify

    verify.install("raise")
    verify.clear_records()
    try:
        yield verify
    finally:
        verify.uninstall()
        verify.clear_records()
