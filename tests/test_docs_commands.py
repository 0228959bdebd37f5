"""The README's test command is the one CI runs (``.ci/run``)."""

from __future__ import annotations

import re
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]


def _pytest_commands(text: str) -> set[str]:
    return {m.group(0).strip() for m in re.finditer(r"python -m pytest[^\n&|;#]*", text)}


def test_readme_and_ci_run_the_same_tests() -> None:
    readme = _pytest_commands((_ROOT / "README.md").read_text(encoding="utf-8"))
    ci = _pytest_commands((_ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    assert len(ci) == 1
    assert ci == readme
