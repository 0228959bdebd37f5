"""``LoadFinder.may_find`` never rules out a file with a load.

``loads()`` runs on every fixture with the gate bypassed; where it finds a
load, the gate must pass (on a fresh context and, for ``fixtures/project/*``,
a fresh index of the folder: summaries already computed would let the
project part through whatever the text says).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rnnfix.analysis.context import FileContext
from rnnfix.analysis.modes.loads import LoadFinder
from rnnfix.analysis.project.index import ProjectIndex
from tests.fixture_args import FIXTURES, project_fixtures, settings_for, single_file_fixtures


def _loads(path: Path, paths: list[Path] | None, monkeypatch: pytest.MonkeyPatch) -> int:
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0

    def finder() -> LoadFinder:
        project = ProjectIndex.build(paths) if paths is not None else None
        ctx = FileContext(
            source=source, tree=tree, settings=settings_for(source), path=str(path), project=project
        )
        return LoadFinder(ctx)

    with monkeypatch.context() as m:
        m.setattr(LoadFinder, "may_find", lambda _self: True)
        found = finder().loads()
    if found:
        assert finder().may_find(), f"{path}: {found[0].how} at line {found[0].stmt.lineno}"
    return len(found)


@pytest.mark.parametrize("path", single_file_fixtures(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_single_file_with_a_load_passes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _loads(path, None, monkeypatch)


@pytest.mark.parametrize("folder", project_fixtures(), ids=lambda p: p.name)
def test_project_file_with_a_load_passes(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = sorted(folder.rglob("*.py"))
    for path in paths:
        _loads(path, paths, monkeypatch)


def test_the_fixtures_have_loads_to_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard against a harness that silently checks nothing."""
    assert sum(_loads(p, None, monkeypatch) for p in single_file_fixtures()) > 0
    loaders = FIXTURES / "project"
    counted = 0
    for folder in project_fixtures():
        paths = sorted(folder.rglob("*.py"))
        counted += sum(_loads(p, paths, monkeypatch) for p in paths)
    assert counted > 0, loaders


@pytest.mark.parametrize(
    "source",
    [
        "import torch\nm = Net()\nm.load_state_dict(torch.load('p'))\n",
        "import torch\nckpt = torch.load('p')\nm = ckpt['model']\n",
        "import torch as t\nm = t.load('p').float()\n",
        "m = Net.load_from_checkpoint('p')\n",
        "def load(p):\n    m = Net()\n    m.load_state_dict(p)\n    return m\nm = load('x')\n",
        "def into(m, p):\n    m.load_state_dict(p)\ninto(model, 'p')\n",
    ],
)  # fmt: skip
def test_loads_pass(source: str, tmp_path: Path) -> None:
    tree = ast.parse(source)
    ctx = FileContext(source=source, tree=tree, path=str(tmp_path / "infer.py"))
    assert LoadFinder(ctx).may_find()


def test_no_load_is_ruled_out(tmp_path: Path) -> None:
    source = "import json\ncfg = json.loads(text)\nx = build(cfg)\nrun(x)\n"
    ctx = FileContext(source=source, tree=ast.parse(source), path=str(tmp_path / "a.py"))
    assert not LoadFinder(ctx).may_find()


def _project_finder(tmp_path: Path, files: dict[str, str], main: str) -> LoadFinder:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    paths = sorted(tmp_path.rglob("*.py"))
    source = (tmp_path / main).read_text(encoding="utf-8")
    ctx = FileContext(
        source=source,
        tree=ast.parse(source),
        path=str(tmp_path / main),
        project=ProjectIndex.build(paths),
    )
    return LoadFinder(ctx)


_LOADER = (
    "import torch\n"
    "def load_model(p):\n    m = Net()\n    m.load_state_dict(torch.load(p))\n    return m\n"
)


def test_a_loader_of_the_run_passes(tmp_path: Path) -> None:
    files = {
        "lib/io.py": _LOADER,
        "lib/__init__.py": "from .io import load_model\n",
        "infer.py": "import lib\nm = lib.load_model('p')\nm(x)\n",
    }
    finder = _project_finder(tmp_path, files, "infer.py")
    assert finder.may_find()
    assert finder.loads()


def test_a_file_with_load_text_but_no_such_function_is_ruled_out(tmp_path: Path) -> None:
    files = {
        # a class of a file with a loader is no loader; a function of a
        # file without loading text is none either
        "helpers.py": _LOADER + "class Net:\n    pass\n",
        "other.py": "def load_model():\n    return Net()\n",
        "infer.py": "from helpers import Net\nfrom other import load_model\n"
        "m = Net()\nn = load_model()\nm(x)\nn(x)\n",
    }
    assert not _project_finder(tmp_path, files, "infer.py").may_find()
