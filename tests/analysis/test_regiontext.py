"""The text test for evaluation regions never rules out a file that has one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rnnfix.analysis.context import FileContext
from rnnfix.analysis.modes.regions import find_regions
from rnnfix.analysis.modes.regiontext import may_have_regions

_ROOT = Path(__file__).resolve().parents[2]
_SOURCES = sorted(
    p
    for folder in ("fixtures", "tests/ci")
    for p in (_ROOT / folder).rglob("*.py")
    if "expected" not in p.parts
)


def _regions(source: str) -> int:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    return len(find_regions(FileContext(source=source, tree=tree, path="x.py")))


@pytest.mark.parametrize("path", _SOURCES, ids=lambda p: str(p.relative_to(_ROOT)))
def test_every_file_with_a_region_passes(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    if _regions(source):
        assert may_have_regions(source)


@pytest.mark.parametrize(
    "source",
    [
        "def validate(model, xs):\n    for x in xs:\n        model(x)\n",
        "async def run_test_epoch(m):\n    pass\n",
        "for x in val_loader:\n    model(x)\n",
        "for x in loaders['test']:\n    model(x)\n",
        "for i, (x, y) in enumerate(\n    zip(a,  # )\n        self.dev_batches)):\n    m(x)\n",
        "for phase in ('train',\n              'val'):\n    pass\n",
        "for x in \\\n        testloader:\n    m(x)\n",
        "model.eval()\nfor x in xs:\n    model(x)\n",
        "model . train (False)\nwhile True:\n    model(x)\n",
    ],
)  # fmt: skip
def test_regions_pass(source: str) -> None:
    assert _regions(source)
    assert may_have_regions(source)


@pytest.mark.parametrize(
    "source",
    [
        "def get_value(x):\n    return x\n",
        "for v in values:\n    print(v)\n",
        "xs = [m(x) for x in val_loader]\n",  # a comprehension is not a loop
        "def interval(a):\n    for k in a:\n        pass\n",
        "msg = 'undef validate'\n",  # ``def`` inside a word is not the keyword
        "print('x', 'for val in loader')\n",  # ``for`` not at the start of a line
    ],
)  # fmt: skip
def test_no_region_text(source: str) -> None:
    assert not _regions(source)
    assert not may_have_regions(source)
