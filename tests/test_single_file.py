"""A file given alone still sees the project files it imports
(``rnnfix.analysis.project.imported``): resolution, what stays unknown (third-party
code, anything outside the project), ``--isolated``, and the result cache
keyed on the imported files' bytes. The fixture projects ``alone_*`` and
``noop_alone_*`` of ``fixtures/project/`` cover the fixes themselves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import rnnfix.analysis.project.imported
import rnnfix.analysis.project.index
import rnnfix.run.engine
import rnnfix.run.process
from rnnfix.analysis.project.imported import imported_files
from rnnfix.cli.app import cli
from rnnfix.config.settings import Settings
from rnnfix.run.cache import ResultCache, cache_root
from rnnfix.run.process import FileResult, Outcome, process_files

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "project"
RESTORING_UTILS = (PROJECTS / "noop_helper_restores_train" / "utils.py").read_text()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """helper_in_other_file as a project (a pyproject.toml at its root)."""
    root = tmp_path / "proj"
    shutil.copytree(PROJECTS / "helper_in_other_file", root)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return root


def _codes(result: FileResult) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in result.initial]


def _cached_run(files: list[Path], settings: Settings | None = None) -> list[FileResult]:
    settings = settings or Settings()
    cache = ResultCache(cache_root(files), settings)
    results = process_files(files, settings, write=False, jobs=1, cache=cache)
    assert not cache.warnings
    return results


def test_imports_resolve_from_folder_package_and_project_root(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel in [
        "pyproject.toml",
        "common.py",
        "pkg/__init__.py",
        "pkg/models.py",
        "pkg/sub/__init__.py",
        "pkg/sub/train.py",
        "pkg/sub/local.py",
        "unused.py",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    (root / "pkg/sub/train.py").write_text(
        "import numpy\nimport local\nfrom pkg.models import Net\nfrom common import f\n"
        "from .. import models\n"
    )
    found = imported_files([root / "pkg/sub/train.py"])
    rel = sorted(Path(f).relative_to(root).as_posix() for f in found)
    # numpy is not a file of the project; unused.py is not imported.
    assert rel == ["common.py", "pkg/models.py", "pkg/sub/local.py"]


def test_package_reexports_are_followed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "nets").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "nets" / "__init__.py").write_text("from .generator import Gen\n")
    (root / "nets" / "generator.py").write_text("class Gen: ...\n")
    (root / "nets" / "other.py").write_text("class Other: ...\n")
    (root / "scripts").mkdir()
    (root / "scripts" / "train.py").write_text("from nets import Gen\n")
    found = imported_files([root / "scripts" / "train.py"])
    assert sorted(Path(f).name for f in found) == ["__init__.py", "generator.py"]


def test_imports_of_imported_files_are_followed_a_few_steps(tmp_path: Path) -> None:
    """``trainer.py`` builds ``model.RecurrentAttention``, whose parts live in
    ``modules.py``: a class's parts are read across the files it imports."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".git").mkdir()
    chain = ["trainer", "model", "modules", "layers", "base", "far"]
    for importer, imported in zip(chain, chain[1:], strict=False):
        (root / f"{importer}.py").write_text(f"import {imported}\n")
    (root / "far.py").write_text("")
    found = imported_files([root / "trainer.py"])
    assert sorted(Path(f).stem for f in found) == ["layers", "model", "modules"]


def test_folder_run_parses_nothing_to_find_imports(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every import of the run resolves inside it: the import-line pre-filter
    says so without parsing any file."""

    def boom(*args: object) -> None:
        raise AssertionError("a file was parsed")

    monkeypatch.setattr(rnnfix.analysis.project.imported, "import_bindings", boom)
    assert imported_files(sorted(project.glob("*.py"))) == []


def test_files_given_are_fixed_and_imported_files_are_not(project: Path) -> None:
    """A pre-commit run passes some files: the others are read, never written."""
    utils_before = (project / "utils.py").read_bytes()
    results = process_files(
        [project / "train.py", project / "models.py"], Settings(), write=True, jobs=1
    )
    assert [Path(r.path).name for r in results] == ["train.py", "models.py"]
    assert results[0].outcome is Outcome.CHANGED
    assert "model.train()" in (project / "train.py").read_text()
    assert (project / "utils.py").read_bytes() == utils_before


def test_isolated_sees_only_the_file(project: Path) -> None:
    [result] = process_files([project / "train.py"], Settings(isolated=True), write=False)
    assert result.outcome is Outcome.UNCHANGED and result.initial == []
    assert result.consulted == frozenset()


def test_a_symlink_into_a_virtual_environment_stays_unknown(project: Path) -> None:
    site = project / "env" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (project / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "utils.py").write_bytes((project / "utils.py").read_bytes())
    (project / "utils.py").unlink()
    (project / "utils.py").symlink_to(site / "utils.py")
    [result] = process_files([project / "train.py"], Settings(), write=False)
    assert result.outcome is Outcome.UNCHANGED and result.initial == []


def test_a_symlink_out_of_the_project_stays_unknown(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.move(project / "utils.py", elsewhere / "utils.py")
    (project / "utils.py").symlink_to(elsewhere / "utils.py")
    [result] = process_files([project / "train.py"], Settings(), write=False)
    assert result.initial == []


def test_a_file_in_site_packages_does_not_see_its_neighbours(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "site-packages" / "app"
    shutil.copytree(PROJECTS / "helper_in_other_file", site)
    [result] = process_files([site / "train.py"], Settings(), write=False)
    assert result.initial == []


def test_a_notebook_sees_the_files_it_imports(project: Path) -> None:
    import json

    source = (project / "train.py").read_text().splitlines(keepends=True)
    nb = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": source, "outputs": []}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (project / "train.ipynb").write_text(json.dumps(nb))
    [result] = process_files([project / "train.ipynb"], Settings(), write=False)
    assert [(f.code, f.cell) for f in result.initial] == [("RNF001", 1)]


# --- the result cache --------------------------------------------------------
def test_warm_single_file_run_is_served_from_the_cache(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [found] = _cached_run([project / "train.py"])
    assert _codes(found) == [("RNF001", 13)]
    # A file with a fix is analysed on every run (the cache holds findings,
    # never output): fix it, then its clean result is what the cache serves.
    process_files([project / "train.py"], Settings(), write=True, jobs=1)
    [cold] = _cached_run([project / "train.py"])
    assert cold.outcome is Outcome.UNCHANGED and cold.consulted

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("the engine ran: the cache was not used")

    monkeypatch.setattr(rnnfix.run.engine, "fix_source", boom)
    monkeypatch.setattr(rnnfix.analysis.project.index.ProjectIndex, "build", boom)
    [warm] = _cached_run([project / "train.py"])
    assert _codes(warm) == _codes(cold) and warm.outcome is Outcome.UNCHANGED


def test_a_changed_imported_file_invalidates(project: Path) -> None:
    [before] = _cached_run([project / "train.py"])
    assert before.outcome is Outcome.CHANGED
    # utils.evaluate now restores train mode: train.py needs no fix any more.
    (project / "utils.py").write_text(RESTORING_UTILS)
    [after] = _cached_run([project / "train.py"])
    assert after.outcome is Outcome.UNCHANGED and after.initial == []


def test_an_imported_file_that_appears_invalidates(project: Path) -> None:
    utils = (project / "utils.py").read_text()
    (project / "utils.py").unlink()
    [before] = _cached_run([project / "train.py"])
    assert before.initial == []  # ``utils`` is not there: unknown
    (project / "utils.py").write_text(utils)
    [after] = _cached_run([project / "train.py"])
    assert _codes(after) == [("RNF001", 13)]


def test_isolated_runs_have_a_cache_of_their_own(project: Path) -> None:
    _cached_run([project / "train.py"])
    [isolated] = _cached_run([project / "train.py"], Settings(isolated=True))
    assert isolated.initial == []


# --- the command line --------------------------------------------------------
def test_cli_single_file_writes_only_that_file(project: Path) -> None:
    utils_before = (project / "utils.py").read_bytes()
    out = CliRunner().invoke(cli, ["apply", str(project / "train.py")])
    assert out.exit_code == 0, out.output
    assert "model.train()" in (project / "train.py").read_text()
    assert (project / "utils.py").read_bytes() == utils_before


def test_cli_isolated(project: Path) -> None:
    out = CliRunner().invoke(cli, ["apply", "--check", "--isolated", str(project / "train.py")])
    assert out.exit_code == 0, out.output
    assert "RNF001" not in out.output


def test_subprocess_single_file_from_its_folder(project: Path) -> None:
    """As a user types it, from the file's folder, cache on (a cold, then a warm run)."""
    env = {k: v for k, v in os.environ.items() if k != "RNNFIX_NO_CACHE"}
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "rnnfix", "apply", "--check", "train.py"],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        assert proc.returncode == 1, proc.stderr
        assert "train.py:13:9: RNF001" in proc.stdout


_NAMESPACE_TRAINER = """\
import torch

from utils import validate


def fit(model, loader, val_loader, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(epoch, validate(model, val_loader))
"""

_ROOT_EVALUATOR = """\
import torch


def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum((model(x).argmax(-1) == y).sum().item() for x, y in loader)
"""


def _namespace_repo(tmp_path: Path) -> Path:
    """A repository without a marker (a downloaded archive): ``optim/`` has no
    ``__init__.py`` and imports the root's ``utils`` package, as ``python
    main.py`` at the root lets it."""
    root = tmp_path / "repo"
    (root / "optim").mkdir(parents=True)
    (root / "utils").mkdir()
    (root / "optim" / "trainer.py").write_text(_NAMESPACE_TRAINER)
    (root / "utils" / "__init__.py").write_text("from .evaluation import validate\n")
    (root / "utils" / "evaluation.py").write_text(_ROOT_EVALUATOR)
    (root / "main.py").write_text("from optim.trainer import fit\n")
    return root


def test_namespace_folder_file_sees_the_working_folders_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _namespace_repo(tmp_path)
    monkeypatch.chdir(root)
    [result] = process_files([Path("optim/trainer.py")], Settings(), write=False)
    assert _codes(result) == [("RNF001", 13)]
    assert "validate(model, val_loader)" in result.initial[0].message
    out = CliRunner().invoke(cli, ["check", "--no-cache", "optim/trainer.py"])
    assert out.exit_code == 1, out.output
    assert "optim/trainer.py:13:" in out.output


def test_namespace_folder_file_run_from_elsewhere_stays_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from a folder above the repository, ``utils`` is not on the path
    Python would have: the helper stays unknown and nothing is claimed."""
    root = _namespace_repo(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    [result] = process_files([root / "optim" / "trainer.py"], Settings(), write=False)
    assert _codes(result) == []


def _self_importing_folder(tmp_path: Path) -> Path:
    """NGCF's layout: ``main.py`` trains and imports ``utility.batch_test``;
    ``utility/`` has no ``__init__.py`` and its modules import one another as
    ``utility.<module>``; no ``.git`` or project file anywhere."""
    root = tmp_path / "NGCF"
    (root / "utility").mkdir(parents=True)
    (root / "main.py").write_text(
        "import torch\n"
        "from torch import nn\n"
        "from utility.batch_test import test\n"
        "\n"
        "model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 1))\n"
        "optimizer = torch.optim.Adam(model.parameters())\n"
        "for epoch in range(10):\n"
        "    for x, y in loader:\n"
        "        optimizer.zero_grad()\n"
        "        nn.functional.mse_loss(model(x), y).backward()\n"
        "        optimizer.step()\n"
        "    print(test(model, users))\n"
    )
    (root / "utility" / "metrics.py").write_text("def recall(r):\n    return float(r)\n")
    (root / "utility" / "batch_test.py").write_text(
        "import torch\n"
        "import utility.metrics as metrics\n"
        "\n"
        "\n"
        "def test(model, users):\n"
        "    total = 0.0\n"
        "    for u in users:\n"
        "        total += metrics.recall(model(u).argmax().item())\n"
        "    return total / len(users)\n"
    )
    return root


def test_self_importing_folder_file_sees_its_callers_in_the_folder_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run alone, ``utility/batch_test.py``'s ``test`` is found as the
    evaluation ``main.py`` calls with the model it trains: ``import
    utility.metrics`` says the folder above ``utility`` is on ``sys.path``."""
    root = _self_importing_folder(tmp_path)
    monkeypatch.chdir(root.parent)
    [result] = process_files([root / "utility" / "batch_test.py"], Settings(), write=False)
    assert _codes(result) == [("RNF003", 5)]


def test_folder_that_does_not_import_itself_keeps_its_callers_unseen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same tree with ``import metrics`` (the folder itself on the path):
    nothing says where its scripts are, and ``test`` of a model rnnfix cannot
    see is not a region."""
    root = _self_importing_folder(tmp_path)
    path = root / "utility" / "batch_test.py"
    path.write_text(path.read_text().replace("import utility.metrics as metrics", "import metrics"))
    monkeypatch.chdir(root.parent)
    [result] = process_files([path], Settings(), write=False)
    assert _codes(result) == []
