"""The text path of ``apply_edits`` (``rnnfix.source.textedit``) against
libcst: wherever it gives a result, byte for byte what libcst gives (the
whole file, with a transformer that visits every node).

The edits come from every fix of every single-file fixture (alone and all
together), from edits put at random places of generated programs, and from
shapes the text path must refuse or place with care (comments above and
below, decorators, tabs, ``;``, ``\\``, a file without a final newline)."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rnnfix.source import textedit
from rnnfix.source.edits import AddDecorator, AddImport, Edit, InsertStatements, Pos
from tests.fixture_args import fixed, single_file_fixtures
from tests.test_properties import FUZZ, training_scripts
from tests.test_snippet import _SHAPES, _char_col, _random_edits, _reference


def assert_same_or_none(source: str, edits: Sequence[Edit]) -> bool:
    """True when the text path gave a result (and it is libcst's)."""
    got = textedit.text_edits(source, ast.parse(source), edits)
    if got is None:
        return False
    assert "ok:" + got == _reference(source, edits)
    return True


def _fixture_fixes() -> list[tuple[str, list[Sequence[Edit]]]]:
    out = []
    for path in single_file_fixtures():
        result = fixed(path)
        fixes = [f.fix.edits for f in result.initial if f.fix is not None]
        if fixes:
            out.append((result.original, fixes))
    return out


@pytest.mark.parametrize("path", single_file_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fix_of_the_fixtures(path: Path) -> None:
    result = fixed(path)
    fixes = [f.fix.edits for f in result.initial if f.fix is not None]
    if not fixes:
        return
    for edits in fixes:
        assert_same_or_none(result.original, edits)
    assert_same_or_none(result.original, [e for edits in fixes for e in edits])


def test_the_fixtures_use_the_text_path() -> None:
    """No comparison if every fix goes to libcst: most one-line fixes of the
    fixtures must be made as text."""
    tried = made = 0
    for source, fixes in _fixture_fixes():
        for edits in fixes:
            if all(isinstance(e, (InsertStatements, AddDecorator)) for e in edits):
                tried += 1
                made += assert_same_or_none(source, edits)
    assert tried > 50
    assert made > tried // 2


@FUZZ
@given(data=st.data(), source=training_scripts())
def test_random_edits_of_training_scripts(data: st.DataObject, source: str) -> None:
    assert_same_or_none(source, data.draw(st.composite(lambda d: _random_edits(d, source))()))


@FUZZ
@given(data=st.data(), source=hypothesmith.from_grammar())
def test_random_edits_of_any_program(data: st.DataObject, source: str) -> None:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return
    assert_same_or_none(source, data.draw(st.composite(lambda d: _random_edits(d, source))()))


_CODES = [
    "model.train()",
    "if args.train_text_encoder: text_encoder.train()",
    "if x:\n    y.train()",
    "if x:\n  y.train()\n  for q in r:\n    q()",
    "with torch.no_grad():\n\tz = f(x)",
]


def _random_inserts(draw: st.DrawFn, source: str) -> list[Edit]:
    """Only what the text path makes: inserts and decorators."""
    tree = ast.parse(source)
    lines = re.split(r"\r\n|\r|\n", source)  # as ``ast`` counts lines
    stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    if not stmts:
        return []
    edits: list[Edit] = []
    for _ in range(draw(st.integers(1, 3))):
        s = draw(st.sampled_from(stmts))
        at = Pos(s.lineno, _char_col(lines[s.lineno - 1], s.col_offset))
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and draw(st.booleans()):
            edits.append(AddDecorator(at, "torch.no_grad()"))
            continue
        codes = tuple(draw(st.lists(st.sampled_from(_CODES), min_size=1, max_size=2)))
        where = draw(st.sampled_from(["before", "after"]))
        edits.append(InsertStatements(at, codes, where))  # type: ignore[arg-type]
    return edits


@FUZZ
@given(data=st.data(), source=training_scripts())
def test_random_inserts_of_training_scripts(data: st.DataObject, source: str) -> None:
    assert_same_or_none(source, data.draw(st.composite(lambda d: _random_inserts(d, source))()))


@FUZZ
@given(data=st.data(), source=hypothesmith.from_grammar())
def test_random_inserts_of_any_program(data: st.DataObject, source: str) -> None:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return
    assert_same_or_none(source, data.draw(st.composite(lambda d: _random_inserts(d, source))()))


_MORE_SHAPES = {
    "comment above the loop body": ("for x in y:\n    # first\n    a = 1\n    b = 2\n\nc = 3\n"),
    "decorators with comments between": (
        "class A:\n    # lead\n    @dec\n    # between\n\n    def f(self):\n        a = 1\n"
    ),
    "multi-line decorator and call": (
        "@dec(\n    1,\n)  # why\ndef f():\n    x = g(\n        1,\n    )  # c\n    return x\n"
    ),
    "async and nested": (
        "async def f():\n    async with a:\n        b = 1\n    def g():\n        return 2\n"
    ),
    "after the last line of a block": (
        "def f():\n    if a:\n        b = 1\n        # footer\n    # lead of c\n    c = 2\n"
    ),
    "suite on the header line": "if a: b = 1\nelse:\n    c = 2\n",
    "string that looks like a comment": 'x = """\n# not a comment\n"""\ny = 1\n',
    "unicode before": 'def f():\n    s = "é"; t = 1\n    u = 2\n',
}


@pytest.mark.parametrize("name", sorted({**_SHAPES, **_MORE_SHAPES}))
def test_shapes(name: str) -> None:
    source = {**_SHAPES, **_MORE_SHAPES}[name]
    tree = ast.parse(source)
    lines = re.split(r"\r\n|\r|\n", source)  # as ``ast`` counts lines
    stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    for node in stmts:
        at = Pos(node.lineno, _char_col(lines[node.lineno - 1], node.col_offset))
        for edits in (
            [InsertStatements(at, ("model.train()",))],
            [InsertStatements(at, ("model.eval()",), "after")],
            [InsertStatements(at, ("if x: y.train()",), "after")],
            [InsertStatements(at, ("if x:\n    y.train()\n    for q in r:\n        q()",))],
            [InsertStatements(at, ("if x:\n  y.train()",), "after")],
            [InsertStatements(at, ("if x:\n\ty.train()",), "after")],
            [InsertStatements(at, ("a()", "b()")), InsertStatements(at, ("b()",)),
             InsertStatements(at, ("c()",), "after")],
        ):  # fmt: skip
            assert_same_or_none(source, edits)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert_same_or_none(source, [AddDecorator(at, "torch.no_grad()")])
            assert_same_or_none(
                source, [AddDecorator(at, "torch.no_grad()"), InsertStatements(at, ("x = 1",))]
            )
    # Edits that meet at one place: "after" of one statement, "before" of the next.
    for a, b in zip(stmts, stmts[1:], strict=False):
        pa = Pos(a.lineno, _char_col(lines[a.lineno - 1], a.col_offset))
        pb = Pos(b.lineno, _char_col(lines[b.lineno - 1], b.col_offset))
        assert_same_or_none(
            source, [InsertStatements(pb, ("b()",)), InsertStatements(pa, ("a()",), "after")]
        )


def test_the_common_fix_is_made_as_text() -> None:
    source = "for batch in loader:\n    loss = model(batch)\n    loss.backward()\n"
    edits = [InsertStatements(Pos(2, 4), ("model.train()",))]
    assert textedit.text_edits(source, ast.parse(source), edits) == (
        "for batch in loader:\n    model.train()\n    loss = model(batch)\n    loss.backward()\n"
    )
    source = "def f():\n  for batch in loader:\n    loss = model(batch)\n"
    edits = [InsertStatements(Pos(3, 4), ("if args.train_encoder:\n    encoder.train()",))]
    assert textedit.text_edits(source, ast.parse(source), edits) == (
        "def f():\n  for batch in loader:\n    if args.train_encoder:\n      encoder.train()\n"
        "    loss = model(batch)\n"
    )
    source = "def evaluate(model):\n    return model(x).item()\n"
    edits2 = [AddDecorator(Pos(1, 0), "torch.no_grad()")]
    assert textedit.text_edits(source, ast.parse(source), edits2) == ("@torch.no_grad()\n" + source)


@pytest.mark.parametrize(
    "edits",
    [
        [AddImport("torch")],
        [InsertStatements(Pos(2, 4), ("if x:\n    y = 1; z = 2",))],  # two on a line
        [InsertStatements(Pos(2, 4), ("if x:\n    y = (1,\n    2)",))],  # a continuation
        [InsertStatements(Pos(2, 4), ("if x:\n    y()\nelse:\n    z()",))],  # a clause
        [InsertStatements(Pos(2, 4), ("if x:\n    if y:\n            z()",))],  # 2 levels
        [InsertStatements(Pos(2, 4), ("if x:\n \ty()",))],  # spaces and a tab
        [InsertStatements(Pos(2, 4), ("model.train()  # why",))],  # a comment
        [InsertStatements(Pos(2, 4), ("x = = 1",))],
        [InsertStatements(Pos(2, 5), ("model.train()",))],  # no statement starts there
        [AddDecorator(Pos(2, 4), "torch.no_grad()")],  # not a function
    ],
)
def test_what_goes_to_libcst(edits: list[Edit]) -> None:
    source = "for batch in loader:\n    loss = model(batch)\n"
    assert textedit.text_edits(source, ast.parse(source), edits) is None


def test_errors_are_libcsts() -> None:
    """An edit the text path leaves alone gets libcst's result or error."""
    source = "x = 1\n"
    with pytest.raises(Exception, match="could not locate"):
        textedit.apply_edits(source, [InsertStatements(Pos(5, 0), ("y()",))], ast.parse(source))
