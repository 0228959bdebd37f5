"""Snapshot tests over every ``fixtures/RNF*/<case>.py``.

For each case: the fixed source and the diagnostics are compared with
``fixtures/RNF*/snapshots/<case>.py.fixed`` / ``.txt`` (``pytest --snapshot-update``
rewrites them; review the diff). Every case must also parse after fixing and be
idempotent; ``noop_*`` cases must come out byte-identical with no findings.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rnnfix.report.formats import text_line
from rnnfix.run.engine import fix_source
from tests.fixture_args import fixed, settings_for

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p for p in FIXTURES.glob("RNF*/*.py"))


def _id(p: Path) -> str:
    return f"{p.parent.name}/{p.stem}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_fixture(case: Path, snapshot: object) -> None:
    source = case.read_bytes().decode("utf-8")
    settings = settings_for(source)
    result = fixed(case)
    # Findings of the input and the follow-up fixes (line numbers of the input),
    # as --check shows them.
    diagnostics = "".join(
        text_line(case.name, f, settings.unsafe_fixes) + "\n" for f in result.reported
    )
    ast.parse(result.fixed)
    again = fix_source(result.fixed, settings, case.name)
    assert again.fixed == result.fixed, "second run changed the output (not idempotent)"
    assert not again.applied and not again.followups
    if case.stem.startswith("noop_"):
        assert result.fixed == source, "a no-op fixture was changed"
        assert diagnostics == "", f"a no-op fixture has findings:\n{diagnostics}"
        return  # nothing to snapshot: the output is the input
    snapshot.snapshot_dir = case.parent / "snapshots"  # type: ignore[attr-defined]
    snapshot.assert_match(result.fixed, f"{case.name}.fixed")  # type: ignore[attr-defined]
    snapshot.assert_match(diagnostics, f"{case.name}.txt")  # type: ignore[attr-defined]


def test_every_rule_has_fixing_and_noop_fixtures() -> None:
    from rnnfix.rules import all_rules

    for code in all_rules():
        names = [p.stem for p in FIXTURES.glob(f"{code}/*.py")]
        assert any(n.startswith("noop_") for n in names), f"{code} has no no-op fixture"
        assert any(not n.startswith("noop_") for n in names), f"{code} has no fixing fixture"
