"""The project index answers "does this file import mode code?" from text and
import lines where it can (``ProjectIndex.may_hold``), never differently from
the summaries themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rnnfix.analysis.project.index import LazySummaries, ProjectIndex, normalise
from rnnfix.analysis.project.view import ProjectView
from rnnfix.source.files import discover

PROJECTS = Path(__file__).resolve().parent.parent / "fixtures" / "project"
CASES = sorted(p for p in PROJECTS.iterdir() if p.is_dir() and p.name != "snapshots")


def _answers(view: ProjectView) -> tuple[bool, bool, bool, bool]:
    return (
        view.imports_eval(),
        view.imports_training(),
        view.imports_rnn_class(),
        view.imports_gradient_code(),
    )


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_gate_agrees_with_the_summaries(case: Path) -> None:
    paths = [p for p in discover([case]) if p.suffix == ".py"]
    lazy = ProjectIndex.build(paths)
    # A plain mapping of every summary: the gate has no text to read and
    # always lets the lookup through.
    full = ProjectIndex({normalise(p): lazy.files[normalise(p)] for p in paths})
    for p in paths:
        source = p.read_text(encoding="utf-8")
        tree = ast.parse(source)
        gated = ProjectIndex.build(paths).view(str(p), tree, source)
        plain = full.view(str(p), tree, source)
        assert _answers(gated) == _answers(plain), p


def _project(tmp_path: Path) -> list[Path]:
    files = {
        "pkg/__init__.py": "from .helpers import evaluate\nfrom .plain import util\n",
        "pkg/helpers.py": "def evaluate(model):\n    model.eval()\n",
        "pkg/plain.py": "import contextlib\n\ndef util(x):\n    return x\n",
        "pkg/nets.py": "import torch.nn as nn\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.rnn = nn.LSTM(2, 2)\n",
        "uses_eval.py": "from pkg import evaluate\n\nevaluate(m)\n",
        "uses_plain.py": "from pkg import util\nimport pkg.plain as P\n\nutil(P)\n",
        "uses_net.py": "from pkg.nets import Net\n\nNet()\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return sorted(tmp_path.rglob("*.py"))


def test_reexported_mode_code_is_found(tmp_path: Path) -> None:
    paths = _project(tmp_path)
    index = ProjectIndex.build(paths)
    source = (tmp_path / "uses_eval.py").read_text()
    view = index.view(str(tmp_path / "uses_eval.py"), ast.parse(source), source)
    assert view.imports_eval()
    assert not view.imports_rnn_class()
    # Both files on the way were consulted: a change to either re-checks it.
    assert normalise(tmp_path / "pkg/__init__.py") in view.consulted
    assert normalise(tmp_path / "pkg/helpers.py") in view.consulted


def test_files_without_mode_code_are_not_summarised(tmp_path: Path) -> None:
    paths = _project(tmp_path)
    index = ProjectIndex.build(paths)
    source = (tmp_path / "uses_plain.py").read_text()
    view = index.view(str(tmp_path / "uses_plain.py"), ast.parse(source), source)
    assert not view.imports_eval()
    assert not view.imports_training()
    files = index.files
    assert isinstance(files, LazySummaries)
    assert normalise(tmp_path / "pkg/plain.py") not in files._known
    assert normalise(tmp_path / "pkg/helpers.py") not in files._known


def test_rnn_classes_are_found(tmp_path: Path) -> None:
    paths = _project(tmp_path)
    index = ProjectIndex.build(paths)
    source = (tmp_path / "uses_net.py").read_text()
    view = index.view(str(tmp_path / "uses_net.py"), ast.parse(source), source)
    assert view.imports_rnn_class()
    assert not view.imports_eval()


@pytest.mark.parametrize(
    "text",
    [
        "from .a import f\nimport b.c as d\n",
        "from .a import (\n    f,  # (a comment\n    g,\n)\n",
        "from .a \\\n    import f\n",
        "def h():\n    from .a import f\n    return f\n",
        '"""Example:\n\n    from other import f\n"""\nfrom .a import f\n',  # f bound twice
        "import os; from .a import f\n",  # not at a line start: the file is parsed
        "try: from .a import f\nexcept ImportError: f = None\n",
        "from .a import f\r\n",
    ],
)
def test_import_lines_agree_with_a_full_parse(text: str) -> None:
    from rnnfix.analysis.project.bindings import import_bindings
    from rnnfix.analysis.project.importtext import text_bindings

    full = import_bindings(ast.parse(text))
    read = text_bindings(text.encode())
    if read is None:
        return  # the caller parses the file
    for name, binding in full.items():
        if name not in read.ambiguous:
            assert read.bindings[name] == binding


def test_shared_summaries_read_back(tmp_path: Path) -> None:
    paths = _project(tmp_path)
    folder = tmp_path / "shared"
    folder.mkdir()
    key = normalise(tmp_path / "pkg/helpers.py")
    first = ProjectIndex.build(paths).files
    assert isinstance(first, LazySummaries)
    first.share_in(str(folder))
    computed = first[key]
    assert computed is not None and len(list(folder.iterdir())) == 1
    second = ProjectIndex.build(paths).files
    assert isinstance(second, LazySummaries)
    second.share_in(str(folder))
    assert second[key] == computed


def test_gradient_code_without_backward_is_found(tmp_path: Path) -> None:
    """A helper that takes its gradient only with ``torch.autograd.grad`` (or
    captum's ``.attribute``) has no ``.backward(``: the gate still lets it through."""
    files = {
        "grads.py": "import torch\n\nclass Saliency:\n    def __init__(self, model):\n"
        "        self.model = model\n\n    def generate(self, x):\n"
        "        x = x.clone().requires_grad_(True)\n"
        "        return torch.autograd.grad(self.model(x).sum(), x)[0]\n",
        "uses.py": "from grads import Saliency\n\nSaliency(m).generate(x)\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    paths = sorted(tmp_path.rglob("*.py"))
    source = (tmp_path / "uses.py").read_text()
    view = ProjectIndex.build(paths).view(str(tmp_path / "uses.py"), ast.parse(source), source)
    assert view.imports_gradient_code()
