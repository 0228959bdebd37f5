"""``FileContext.segment`` gives ``ast.get_source_segment``'s answer for every
node, from lines split once (issue 37: it was re-split at every call)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rnnfix.analysis.context import FileContext
from rnnfix.config.settings import Settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

SHAPES = [
    "x = 1\n",
    "é = 'ü'; y = f(é,\n      'ß')\n",
    "a = (1 +\r\n     2)\r\nb = 3\r\n",
    "a = (1 +\r     2)\rb = 3\r",
    "a = 1\x0c\nb = [1,\n2]\n",
    "s = '''\nmulti\nline'''\nz = s\n",
    "def f():\n    return {'k': [x for x in range(3)]}\n",
    "x = '日本語'  # コメント\ny = (x,\n  x)",
]


def _check(source: str) -> int:
    tree = ast.parse(source)
    ctx = FileContext(source, tree, Settings(), "<test>", None)
    n = 0
    for node in ast.walk(tree):
        if getattr(node, "end_lineno", None) is None:
            continue
        assert ctx.segment(node) == (ast.get_source_segment(source, node) or ""), ast.dump(node)
        n += 1
    return n


@pytest.mark.parametrize("source", SHAPES)
def test_segment_matches_the_standard_library_on_shapes(source: str) -> None:
    assert _check(source) > 0


def test_segment_matches_the_standard_library_on_the_fixtures() -> None:
    checked = 0
    for path in sorted(FIXTURES.glob("RNF00*/*.py"))[:120]:
        source = path.read_text(encoding="utf-8")
        try:
            checked += _check(source)
        except SyntaxError:
            continue
    assert checked > 1000
