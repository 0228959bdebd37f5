"""Calls into other files of the same run (the project index).

Each folder ``fixtures/project/<case>/`` is a small project run through
``process_files`` as ``rnnfix apply <folder>`` runs it, or, when the folder
has a ``rnnfix-run`` file, as ``rnnfix apply <its arguments>`` runs it (the
files it names, relative to the folder, and ``--isolated``, ``--rnn-only``,
``--unsafe-fixes``): a file given
alone that still sees the files it imports. The fixed files and the
diagnostics are compared with ``fixtures/project/snapshots/<case>/``
(``pytest --snapshot-update`` rewrites them). ``noop_*`` cases must come out
unchanged with no findings.
"""

from __future__ import annotations

import ast
import os
import pickle
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rnnfix.analysis.project.index import ProjectIndex, normalise
from rnnfix.analysis.project.summarise import summarise
from rnnfix.cli.app import cli
from rnnfix.config.settings import Settings
from rnnfix.report.formats import text_line
from rnnfix.run.process import FileResult, Outcome, process_files
from rnnfix.source.files import discover

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "project"
CASES = sorted(p for p in PROJECTS.iterdir() if p.is_dir() and p.name != "snapshots")


def _copy(case: Path, tmp_path: Path) -> Path:
    root = tmp_path / case.name
    shutil.copytree(case, root)
    return root


def _run(root: Path, write: bool = False, jobs: int = 1) -> dict[str, FileResult]:
    files = list(discover([root]))
    results = process_files(files, Settings(), write=write, jobs=jobs)
    return {Path(r.path).relative_to(root).as_posix(): r for r in results}


def _run_case(root: Path, write: bool = False) -> dict[str, FileResult]:
    """The run ``rnnfix-run`` describes, else the whole folder."""
    spec = root / "rnnfix-run"
    if not spec.exists():
        return _run(root, write)
    args = spec.read_text().split()
    settings = Settings(
        isolated="--isolated" in args,
        rnn_only="--rnn-only" in args,
        unsafe_fixes="--unsafe-fixes" in args,
    )
    files = [root / a for a in args if not a.startswith("--")]
    results = process_files(files, settings, write=write, jobs=1)
    return {Path(r.path).relative_to(root).as_posix(): r for r in results}


def _diagnostics(results: dict[str, FileResult]) -> str:
    return "".join(
        text_line(name, f, False) + "\n" for name in sorted(results) for f in results[name].reported
    )


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_project_fixture(case: Path, tmp_path: Path, snapshot: object) -> None:
    root = _copy(case, tmp_path)
    results = _run_case(root)
    assert all(r.outcome is not Outcome.FAILED for r in results.values()), results
    for r in results.values():
        assert r.new_text is not None
        ast.parse(r.new_text)
    diagnostics = _diagnostics(results)
    changed = {name: r.new_text for name, r in results.items() if r.outcome is Outcome.CHANGED}
    if case.name.startswith("noop_"):
        assert not changed, f"a no-op project was changed: {sorted(changed)}"
        assert diagnostics == "", f"a no-op project has findings:\n{diagnostics}"
        return
    snapshot.snapshot_dir = PROJECTS / "snapshots" / case.name  # type: ignore[attr-defined]
    for name in sorted(changed):
        snapshot.assert_match(changed[name], name + ".fixed")  # type: ignore[attr-defined]
    summary = diagnostics + "changed: " + ", ".join(sorted(changed)) + "\n"
    snapshot.assert_match(summary, "diagnostics.txt")  # type: ignore[attr-defined]
    # Written, the project is at a fixed point: a second run changes nothing.
    _run_case(root, write=True)
    again = _run_case(root)
    assert not [n for n, r in again.items() if r.outcome is Outcome.CHANGED]
    assert not [n for n, r in again.items() if r.applied]


def test_fix_goes_in_the_file_that_runs_the_training_step(tmp_path: Path) -> None:
    results = _run(_copy(PROJECTS / "helper_in_other_file", tmp_path))
    assert results["utils.py"].outcome is Outcome.UNCHANGED  # never edited for train.py
    assert results["train.py"].outcome is Outcome.CHANGED
    [finding] = results["train.py"].initial
    assert finding.code == "RNF001"
    assert "evaluate(model, val_loader)" in finding.message
    assert "cuDNN RNN backward fails" in finding.message  # the LSTM of models.Tagger


def test_single_file_run_sees_the_files_it_imports(tmp_path: Path) -> None:
    """Alone, train.py still knows what ``from utils import evaluate`` does;
    ``--isolated`` sees only the file (tests/test_single_file.py has more)."""
    root = _copy(PROJECTS / "helper_in_other_file", tmp_path)
    [result] = process_files([root / "train.py"], Settings(), write=False)
    assert result.outcome is Outcome.CHANGED
    assert [(f.code, f.line) for f in result.initial] == [("RNF001", 13)]
    runner = CliRunner()
    out = runner.invoke(cli, ["apply", "--check", str(root / "train.py")])
    assert out.exit_code == 1, out.output
    assert "train.py:13:9: RNF001" in out.output
    out = runner.invoke(cli, ["apply", "--check", "--isolated", str(root / "train.py")])
    assert out.exit_code == 0, out.output


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_workers_and_file_order_give_the_same_result(case: Path, tmp_path: Path) -> None:
    root = _copy(case, tmp_path)
    files = list(discover([root]))
    one = process_files(files, Settings(), write=False, jobs=1)
    two = process_files(files, Settings(), write=False, jobs=2)
    backwards = process_files(files[::-1], Settings(), write=False, jobs=1)[::-1]
    key = [(r.path, r.outcome, r.new_text, r.initial) for r in one]
    assert [(r.path, r.outcome, r.new_text, r.initial) for r in two] == key
    assert [(r.path, r.outcome, r.new_text, r.initial) for r in backwards] == key


def test_written_run_matches_the_dry_run(tmp_path: Path) -> None:
    root = _copy(PROJECTS / "fixed_helper_breaks_caller", tmp_path)
    dry = _run(root)
    _run(root, write=True)
    for name, r in dry.items():
        assert (root / name).read_text() == r.new_text


def test_index_is_plain_picklable_data(tmp_path: Path) -> None:
    root = _copy(PROJECTS / "package_relative_imports", tmp_path)
    index = ProjectIndex.build(list(discover([root])))
    copy = pickle.loads(pickle.dumps(index))
    assert copy == index
    engine = index.files[normalise(root / "trainer" / "engine.py")]
    assert engine is not None
    fn = engine.functions["train_one_epoch"]
    assert fn.params == ("model", "loader", "optimizer")
    assert fn.summary.optimizer_step
    assert fn.summary.entry_trains == ("model",)  # trains `model` in the caller's mode
    evaluation = index.files[normalise(root / "trainer" / "evaluation.py")]
    assert evaluation is not None
    effect = evaluation.functions["validate"].summary.effects["net"]
    assert not effect.passthrough and {m.value for m in effect.sets} == {"eval"}


def test_summaries_say_what_helpers_do() -> None:
    src = """
import torch
from torch import nn

def restores(model, loader):
    model.eval()
    with torch.no_grad():
        out = [model(x) for x in loader]
    model.train()
    return out

def maybe(model, flag):
    if flag:
        model.eval()

class Trainer:
    def __init__(self, net):
        self.net = net
    def validate(self):
        self.net.eval()

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 4)

class Plain(nn.Module):
    pass
"""
    summary = summarise(src, "/x/helpers.py")
    assert summary is not None
    restores = summary.functions["restores"].summary.effects["model"]
    assert {m.value for m in restores.sets} == {"train"} and not restores.passthrough
    maybe = summary.functions["maybe"].summary.effects["model"]
    assert {m.value for m in maybe.sets} == {"eval"} and maybe.passthrough
    validate = summary.classes["Trainer"].methods["validate"].summary.effects["self.net"]
    assert {m.value for m in validate.sets} == {"eval"}
    assert [s.path for s in summary.classes["Encoder"].rnns] == ["rnn"]
    assert summary.classes["Plain"].is_module and not summary.classes["Plain"].rnns
    # Nothing the mode flow could use: not parsed at all.
    assert summarise("def f(x):\n    return x + 1\n", "/x/plain.py") is None


def test_module_names_resolve_as_python_would(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel in [
        "train.py",
        "utils.py",
        "pkg/__init__.py",
        "pkg/utils.py",
        "pkg/sub/__init__.py",
        "pkg/sub/deep.py",
        "scripts/run.py",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    index = ProjectIndex({normalise(p): None for p in root.rglob("*.py")})

    def at(rel: str) -> str:
        return os.path.join(normalise(root), *rel.split("/"))

    # A script run from its folder imports its neighbours by their bare name.
    assert index.resolve(at("train.py"), 0, ("utils", "evaluate")) == (
        at("utils.py"),
        ("evaluate",),
    )
    # Package-qualified names from the repository root.
    assert index.resolve(at("train.py"), 0, ("pkg", "utils", "f")) == (at("pkg/utils.py"), ("f",))
    assert index.resolve(at("scripts/run.py"), 0, ("pkg", "sub", "deep")) == (
        at("pkg/sub/deep.py"),
        (),
    )
    # Relative imports against the importing file's package.
    assert index.resolve(at("pkg/sub/deep.py"), 1, ("f",)) == (at("pkg/sub/__init__.py"), ("f",))
    assert index.resolve(at("pkg/sub/deep.py"), 2, ("utils", "f")) == (
        at("pkg/utils.py"),
        ("f",),
    )
    # Not a file of the run: unknown.
    assert index.resolve(at("train.py"), 0, ("numpy", "mean")) is None


def test_import_lines_pre_filter(tmp_path: Path) -> None:
    index = ProjectIndex({normalise(tmp_path / "repo" / "pkg" / "utils.py"): None})
    assert index.may_import("from pkg.utils import evaluate\n")
    assert index.may_import("import numpy as np, utils\n")
    assert index.may_import("def f():\n    from .x import y\n")
    assert not index.may_import("import torch\nfrom torch import nn\n")
