"""``apply_edits`` on a snippet of top-level statements (``rnnfix.source.span``)
against the whole file: byte for byte the same result, or the same error.

Three sources of edits: every fix of every single-file fixture (alone and
all together; ``bench/snippet_check.py`` makes every ``apply_edits`` call of
the engine's fix loop both ways, on the fixtures or any tree), edits
put at random places of generated programs (the property tests' training
script shapes and ``hypothesmith``'s any-Python programs), and the shapes
the span must refuse or cut around (comments, footers, tabs, ``;``, ``\\``,
form feeds, deep nesting outside the span). The reference is the whole file
with a transformer that visits every node, as before issue 28."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

import hypothesmith
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rnnfix.source import rewrite
from rnnfix.source.edits import (
    AddDecorator,
    Edit,
    InsertStatements,
    Pos,
    RemoveStatement,
    ReplaceExpression,
    WrapInWith,
)
from rnnfix.source.span import edit_span
from tests.fixture_args import fixed, single_file_fixtures
from tests.test_properties import FUZZ, training_scripts


def _outcome(source: str, edits: Sequence[Edit], tree: ast.Module | None) -> str:
    try:
        return "ok:" + rewrite.apply_edits(source, edits, tree)
    except Exception as exc:  # noqa: BLE001 - compared, not raised
        return f"error:{type(exc).__name__}: {exc}"


def _reference(source: str, edits: Sequence[Edit]) -> str:
    """What the whole file gives with a transformer that visits every node
    (``rewrite._EditTransformer.on_visit`` skips the subtrees without an edit)."""
    with mock.patch.object(rewrite._EditTransformer, "on_visit", lambda self, node: True):
        return _outcome(source, edits, None)


def assert_same(source: str, edits: Sequence[Edit]) -> None:
    tree = ast.parse(source)
    expected = _reference(source, edits)
    assert _outcome(source, edits, tree) == expected
    assert _outcome(source, edits, None) == expected


@pytest.mark.parametrize("path", single_file_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fix_of_the_fixtures(path: Path) -> None:
    """Each fix of the fixture alone, then all of them together (as the
    engine's first pass tries them), on the fixture's source. The engine's
    whole fix loop made both ways (every ``apply_edits`` call of every
    pass) is ``bench/snippet_check.py``: too slow for the suite."""
    result = fixed(path)
    fixes = [f.fix.edits for f in result.initial if f.fix is not None]
    if not fixes:
        return
    source = result.original
    for edits in fixes:
        assert_same(source, edits)
    assert_same(source, [e for edits in fixes for e in edits])


def test_the_fixtures_use_the_snippet() -> None:
    """The comparison above is no comparison if every fix falls back to the
    whole file: most fixes of the fixtures must be given a span."""
    spans = tried = 0
    for path in single_file_fixtures():
        result = fixed(path)
        fixes = [f.fix.edits for f in result.initial if f.fix is not None]
        tree = ast.parse(result.original) if fixes else None
        for edits in fixes:
            assert tree is not None
            tried += 1
            spans += edit_span(result.original, tree, edits) is not None
    assert tried > 100
    assert spans > tried // 2


def _char_col(line: str, byte_col: int) -> int:
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _random_edits(draw: st.DrawFn, source: str) -> list[Edit]:
    tree = ast.parse(source)
    lines = re.split(r"\r\n|\r|\n", source)  # as ``ast`` counts lines
    stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    exprs = [n for n in ast.walk(tree) if isinstance(n, ast.expr) and n.end_lineno is not None]
    funcs = [n for n in stmts if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def pos(line: int, col: int) -> Pos:
        return Pos(line, _char_col(lines[line - 1], col))

    edits: list[Edit] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["before", "after", "wrap", "remove", "replace", "decorate"]))
        if kind in ("before", "after", "wrap", "remove") and stmts:
            s = draw(st.sampled_from(stmts))
            at = pos(s.lineno, s.col_offset)
            if kind == "wrap":
                edits.append(WrapInWith(at, at, "torch.no_grad()"))
            elif kind == "remove":
                edits.append(RemoveStatement(at))
            else:
                code = draw(st.sampled_from(["model.train()", "if x:\n    y = 1", "pass"]))
                edits.append(InsertStatements(at, (code,), kind))  # type: ignore[arg-type]
        elif kind == "replace" and exprs:
            e = draw(st.sampled_from(exprs))
            assert e.end_lineno is not None and e.end_col_offset is not None
            start, end = pos(e.lineno, e.col_offset), pos(e.end_lineno, e.end_col_offset)
            edits.append(ReplaceExpression(start, end, "model"))
        elif kind == "decorate" and funcs:
            f = draw(st.sampled_from(funcs))
            edits.append(AddDecorator(pos(f.lineno, f.col_offset), "torch.no_grad()"))
    return edits


@FUZZ
@given(data=st.data(), source=training_scripts())
def test_random_edits_of_training_scripts(data: st.DataObject, source: str) -> None:
    assert_same(source, data.draw(st.composite(lambda d: _random_edits(d, source))()))


@FUZZ
@given(data=st.data(), source=hypothesmith.from_grammar())
def test_random_edits_of_any_program(data: st.DataObject, source: str) -> None:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return
    assert_same(source, data.draw(st.composite(lambda d: _random_edits(d, source))()))


_SHAPES = {
    "comments and footers": (
        "import torch\n\n# above f\n\ndef f():\n    a = 1\n    if a:\n        b = 2\n"
        "        # inner footer\n\n    # after a blank line\n   \n"
        "        # inner footer\n    # outer footer\n# above g\ndef g():\n    c = 3\n"
    ),
    "two-space file, four-space function": ("if x:\n  y = 1\n\ndef f():\n    a = 1\n    b = 2\n"),
    "tabs": "import os\n\ndef f():\n\ta = 1\n\tif a:\n\t\tb = 2\n",
    "semicolons": "x = 1; y = 2\ndef f():\n    a = 1\n    b = 2\nz = 3; w = 4\n",
    "backslash before": "x = 1 + \\\n    2\ndef f():\n    a = 1\n    b = 2\n",
    "no trailing newline": "def f():\n    a = 1\n    b = 2",
    "comment without newline at the end": "def f():\n    a = 1\n    b = 2\n# end",
    "form feed": "\x0cdef f():\n    a = 1\n    b = 2\n",
    "CRLF": "import os\r\n\r\ndef f():\r\n    a = 1\r\n    b = 2\r\n",
    "coding": "# -*- coding: latin-1 -*-\ndef f():\n    a = 1\n    b = 2\n",
    "U+2028 in a string": 'x = "a\u2028b"\ndef f():\n    a = 1\n    b = 2\n',
    "decorated": "@dec\n@dec2(1)\ndef f():\n    a = 1\n    b = 2\n",
    "deep nesting outside": "y = " + "f(" * 150 + ")" * 150 + "\ndef f():\n    a = 1\n",
    "parenthesised annotation outside": "(x): int = 1\ndef f():\n    a = 1\n    b = 2\n",
    "class and methods": (
        "class A:\n    def f(self):\n        a = 1\n\n    def g(self):\n        b = 2\n"
    ),
    "trailing comment and semicolon": "def f():\n    a = 1\n    b = 2  # c\nx = 1 ;\n",
}


@pytest.mark.parametrize("name", sorted(_SHAPES))
def test_shapes(name: str) -> None:
    source = _SHAPES[name]
    tree = ast.parse(source)
    lines = source.split("\n")
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        at = Pos(node.lineno, _char_col(lines[node.lineno - 1], node.col_offset))
        for edits in (
            [InsertStatements(at, ("model.train()",))],
            [InsertStatements(at, ("if x:\n    y = 1",), "after")],
            [WrapInWith(at, at, "torch.no_grad()")],
            [RemoveStatement(at)],
        ):
            assert_same(source, edits)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            at = Pos(node.lineno, node.col_offset)
            assert_same(source, [AddDecorator(at, "torch.no_grad()")])
