"""``ProjectIndex.may_member`` never rules out a name ``member`` finds.

For every file of every ``fixtures/project/*`` folder, each import binding
that ``ProjectView.lookup`` finds something for must pass the gate, asked
first on a fresh index (no summary computed yet: the text decides).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rnnfix.analysis.project.index import ProjectIndex, normalise
from tests.fixture_args import project_fixtures


def _checked(folder: Path) -> int:
    paths = sorted(folder.rglob("*.py"))
    found = 0
    for path in paths:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        gate = ProjectIndex.build(paths).view(str(path), tree)
        full = ProjectIndex.build(paths).view(str(path), tree)
        for local in gate.bindings:
            target = gate._target(local)
            if target is None or not target[1]:
                continue
            passes = gate.index.may_member(target[0], target[1], set())
            if full.lookup(ast.Name(id=local, ctx=ast.Load())) is not None:
                found += 1
                assert passes, f"{path}: {local} -> {target}"
    return found


@pytest.mark.parametrize("folder", project_fixtures(), ids=lambda p: p.name)
def test_member_found_passes(folder: Path) -> None:
    _checked(folder)


def test_the_fixtures_have_members_to_check() -> None:
    assert sum(_checked(f) for f in project_fixtures()) > 0


def test_a_name_the_file_does_not_define_is_ruled_out(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_text(
        "import torch\ndef evaluate(m):\n    m.eval()\nx = 1\n", encoding="utf-8"
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(
        "from utils import evaluate as run\n", encoding="utf-8"
    )
    index = ProjectIndex.build(sorted(tmp_path.rglob("*.py")))
    utils = normalise(tmp_path / "utils.py")
    init = normalise(tmp_path / "pkg" / "__init__.py")
    assert index.may_member(utils, ("evaluate",), set())
    assert not index.may_member(utils, ("x",), set())
    assert index.may_member(init, ("run",), set())  # a re-export, followed
    assert not index.may_member(init, ("other",), set())
