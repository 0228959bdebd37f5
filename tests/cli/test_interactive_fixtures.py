"""The engine's ``decide`` over every rule fixture: accepting every fix is
the plain fix, declining every fix changes nothing, and any mix gives a
source that parses and that a second review declining everything leaves as
it is."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from rnnfix.analysis.context import Finding
from rnnfix.run.engine import Decide, fix_source
from tests.fixture_args import fixed, settings_for

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures"
CASES = sorted(
    p
    for p in FIXTURES.glob("RNF00*/*.py")
    if "snapshots" not in p.parts and not p.name.startswith("noop_")
)


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES))


def _answers(*pattern: bool) -> tuple[Decide, list[Finding]]:
    cycle = itertools.cycle(pattern)
    asked: list[Finding] = []

    def decide(path: str, finding: Finding, before: str, after: str) -> bool:
        assert after != before
        ast.parse(after)  # each fix is shown as a source that parses
        asked.append(finding)
        return next(cycle)

    return decide, asked


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_accepting_or_declining_every_fix(case: Path) -> None:
    source = case.read_text(encoding="utf-8")
    settings = settings_for(source)
    plain = fixed(case)
    accept, asked = _answers(True)
    assert fix_source(source, settings, case.name, decide=accept).fixed == plain.fixed
    assert bool(asked) == plain.changed
    decline, asked = _answers(False)
    none = fix_source(source, settings, case.name, decide=decline)
    assert none.fixed == source and not none.applied
    # Nothing but the input's own fixes is asked about when all are declined.
    assert {(f.code, f.line) for f in asked} <= {(f.code, f.line) for f in none.initial}


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_a_mix_parses_and_a_second_review_declining_all_keeps_it(case: Path) -> None:
    source = case.read_text(encoding="utf-8")
    settings = settings_for(source)
    for pattern in ((True, False), (False, True)):
        decide, _ = _answers(*pattern)
        mixed = fix_source(source, settings, case.name, decide=decide)
        ast.parse(mixed.fixed)
        decline, _ = _answers(False)
        assert fix_source(mixed.fixed, settings, case.name, decide=decline).fixed == mixed.fixed


PROJECTS = FIXTURES / "project"
PROJECT_CASES = sorted(
    p
    for p in PROJECTS.iterdir()
    if p.is_dir() and p.name != "snapshots" and not p.name.startswith("noop_")
)


@pytest.mark.parametrize("case", PROJECT_CASES, ids=lambda p: p.name)
def test_a_project_reviewed_with_yes_to_everything_is_the_plain_fix(case: Path) -> None:
    """Across files (the project index, and the re-check of the files that
    call into a fixed one): every answer asked once, the same result."""
    from rnnfix.cli.interactive import Reviewer
    from rnnfix.config.settings import Settings
    from rnnfix.run.engine import reviewing
    from rnnfix.run.process import process_files
    from rnnfix.source.files import discover

    spec = case / "rnnfix-run"
    args = spec.read_text().split() if spec.exists() else []
    files = [case / a for a in args if not a.startswith("--")] or list(discover([case]))
    settings = Settings(isolated="--isolated" in args)
    plain = process_files(files, settings, write=False, jobs=1)
    shown: list[str] = []
    reviewer = Reviewer(lambda: "y\n", echo=shown.append)
    with reviewing(reviewer):
        reviewed = process_files(files, settings, write=False, jobs=1)
    assert [r.new_text for r in reviewed] == [r.new_text for r in plain]
    assert reviewer.asked == reviewer.accepted == len(reviewer.answers)
    assert sum(text.startswith(("Apply", "\x1b")) for text in shown) == reviewer.asked
