"""Running twice changes nothing the second time (DESIGN.md §4), over every
fixture: the rule fixtures, the examples, the sanitizer scripts and the
project files (each on its own), as Python files and as notebooks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rnnfix.run.engine import fix_source
from rnnfix.run.process import Outcome, process_notebook
from tests.fixture_args import fixed, settings_for

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SOURCES = sorted(p for p in FIXTURES.rglob("*.py") if "snapshots" not in p.parts)
# ``tests/test_fixtures.py`` runs the rule fixtures twice with the same
# assertions: here, the other fixtures (examples, verify scripts, projects).
RERUN = [p for p in SOURCES if not p.relative_to(FIXTURES).parts[0].startswith("RNF")]
NOTEBOOKS = sorted(p for p in FIXTURES.rglob("*.ipynb") if "snapshots" not in p.parts)


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES))


@pytest.mark.parametrize("case", RERUN, ids=_id)
def test_second_run_changes_nothing(case: Path) -> None:
    settings = settings_for(case.read_bytes().decode("utf-8"))
    first = fixed(case)
    again = fix_source(first.fixed, settings, case.name)
    assert again.fixed == first.fixed
    assert not again.applied and not again.followups


def _as_notebook(source: str) -> str:
    """The fixture as a notebook: one code cell per top-level chunk."""
    chunks = [c for c in source.split("\n\n\n") if c.strip()]
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": chunk.strip("\n").splitlines(keepends=True),
        }
        for chunk in chunks
    ]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    # nbformat's own layout, which rnnfix writes back.
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("case", SOURCES + NOTEBOOKS, ids=_id)
def test_second_run_on_a_notebook_changes_nothing(case: Path) -> None:
    text = case.read_bytes().decode("utf-8")
    settings = settings_for(text)
    if case.suffix == ".py":
        text = _as_notebook(text)
    first = process_notebook(case.name, text, settings)
    if first.outcome is Outcome.FAILED and "moved code out" in str(first.error):
        # An import added above the first cell marker (no import in the first
        # cell): the notebook is reported, not rewritten. Not idempotence.
        pytest.xfail(str(first.error))
    assert first.outcome is not Outcome.FAILED, first.error
    assert first.new_text is not None
    again = process_notebook(case.name, first.new_text, settings)
    assert again.outcome is Outcome.UNCHANGED, again.error
    assert again.new_text == first.new_text
    assert not again.applied
