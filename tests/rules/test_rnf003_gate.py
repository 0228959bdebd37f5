"""RNF003's syntactic gate never rules out a region that calls a model.

``ModelEvidence.may_call_model`` is asked before the judge is built; a region
it rules out is dropped unjudged. So every region in which the judge sees a
model call must pass it: on every fixture (alone, as a single-file run
reads it) and on every multi-file project fixture (with the project index,
where calls into other files make models too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rnnfix.analysis.context import FileContext
from rnnfix.analysis.modes.regions import find_regions
from rnnfix.analysis.project.index import ProjectIndex
from rnnfix.rules.rnf003.callers import may_have_caller_models
from rnnfix.rules.rnf003.gate import ModelEvidence
from rnnfix.rules.rnf003.judge import RegionJudge
from rnnfix.rules.rnf003.rule import _judged_code
from rnnfix.source.files import discover

_ROOT = Path(__file__).resolve().parents[2]
_SOURCES = sorted(
    p
    for folder in ("fixtures", "tests/ci")
    for p in (_ROOT / folder).rglob("*.py")
    if "expected" not in p.parts
)
_PROJECTS = sorted(p for p in (_ROOT / "fixtures" / "project").iterdir() if p.is_dir())


def _unsound(ctx: FileContext) -> list[int]:
    """Lines of regions the judge sees a model call in that the gate (and,
    beside it, ``callers.may_have_caller_models``) rules out."""
    regions = find_regions(ctx)
    if not regions:
        return []
    evidence = ModelEvidence(ctx.tree, ctx.facts.project)
    judge = RegionJudge(ctx)
    out = []
    for region in regions:
        node = region.node
        code = node.body if region.signal == "phase" else _judged_code(node)  # type: ignore[attr-defined]
        calls = [m for m in judge.index.model_calls(code) if m not in ("self", "cls")]
        calls += judge._caller_params(node, {})  # models its callers in other files pass
        if calls and not (
            evidence.may_call_model(_judged_code(node)) or may_have_caller_models(ctx, node)
        ):
            out.append(node.lineno)
    return out


def _context(path: Path, project: ProjectIndex | None = None) -> FileContext | None:
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return FileContext(source=source, tree=tree, path=str(path), project=project)


@pytest.mark.parametrize("path", _SOURCES, ids=lambda p: str(p.relative_to(_ROOT)))
def test_every_region_with_a_model_call_passes(path: Path) -> None:
    ctx = _context(path)
    if ctx is not None:
        assert _unsound(ctx) == []


@pytest.mark.parametrize("root", _PROJECTS, ids=lambda p: p.name)
def test_every_region_with_a_model_call_passes_in_a_project(root: Path) -> None:
    paths = list(discover([root], include_tests=True))
    index = ProjectIndex.build(paths)
    for path in paths:
        ctx = _context(path, index)
        if ctx is not None:
            assert _unsound(ctx) == [], path


def _gate(source: str, files: dict[str, str] | None = None, tmp: Path | None = None) -> bool:
    project = None
    path = "main.py"
    if files is not None and tmp is not None:
        for name, text in {**files, path: source}.items():
            (tmp / name).write_text(text)
        project = ProjectIndex.build(list(discover([tmp])))
        path = str(tmp / path)
    tree = ast.parse(source)
    ctx = FileContext(source=source, tree=tree, path=path, project=project)
    (region,) = find_regions(ctx)
    return ModelEvidence(tree, ctx.facts.project).may_call_model(_judged_code(region.node))


@pytest.mark.parametrize(
    "source",
    [
        # torch's own test helpers: functions and partials called, no model.
        "from functools import partial\n"
        "def sample_inputs(op, device):\n"
        "    make_arg = partial(make_tensor, device=device)\n"
        "    for shape in test_cases:\n"
        "        yield make_arg(shape)\n",
        "def validate(x):\n    return x.sum().item()\n",
        "import torch\ndef evaluate(self):\n    self.assertEqual(torch.zeros(2), 0)\n",
    ],
)  # fmt: skip
def test_no_model_no_judge(source: str) -> None:
    assert not _gate(source)


@pytest.mark.parametrize(
    "source",
    [
        "import torch.nn as nn\n"
        "def evaluate(model: nn.Module, xs):\n    return [model(x) for x in xs]\n",
        "import torch.nn as nn\nnet = nn.LSTM(2, 2)\n"
        "def validate(xs):\n    return net(xs)\n",
        "def validate(m, xs):\n    m.eval()\n    return m.forward(xs)\n",
        "def validate_all(runner, xs):\n    return runner(xs)\n"
        "def main(m):\n    m.train()\n    link = m\n    validate_all(link, xs)\n",
        "class A:\n    def __init__(self):\n        self.enc = Enc()\n"
        "def evaluate(a: A, xs):\n    return a.enc(xs)\n",
    ],
)  # fmt: skip
def test_model_call_passes(source: str) -> None:
    assert _gate(source)


def test_model_from_a_call_into_another_file(tmp_path: Path) -> None:
    """``run(model, x)`` in another file switches and calls its argument:
    ``model`` is a model here, found through the project index."""
    helpers = {"helpers.py": "import torch\ndef run(m, x):\n    m.eval()\n    return m(x)\n"}
    source = (
        "from helpers import run\n"
        "def evaluate(model, loader):\n"
        "    for x in loader:\n"
        "        run(model, x)\n"
        "        model(x)\n"
    )
    assert _gate(source, helpers, tmp_path)
    plain = {"helpers.py": "import torch\ndef run(m, x):\n    return x\n"}
    other = tmp_path / "other"
    other.mkdir()
    assert not _gate(source, plain, other)


def test_model_of_a_class_of_another_file(tmp_path: Path) -> None:
    models = {
        "models.py": "import torch.nn as nn\n"
        "class Net(nn.Module):\n    def freeze(self):\n        self.eval()\n"
    }
    source = (
        "from models import Net\nmodel = Net().cuda()\ndef validate(xs):\n    return model(xs)\n"
    )
    assert _gate(source, models, tmp_path)
    assert not _gate(source)  # alone: ``Net`` is nothing rnnfix knows
