"""Positions of a pass's output, mapped back onto its input."""

from __future__ import annotations

from rnnfix.rules import Finding
from rnnfix.run.linemap import LineMap, identity

OLD = "def f(model, xs):\n    for x in xs:\n        model(x)\n    return 1\n"
NEW = (
    "@torch.no_grad()\n"
    "def f(model, xs):\n"
    "    model.eval()\n"
    "    with torch.no_grad():\n"
    "        for x in xs:\n"
    "            model(x)\n"
    "    model.train()\n"
    "    return 1\n"
)


def test_lines_and_columns_map_back() -> None:
    m = LineMap(OLD, NEW)
    # A decorator over the def, an eval() and a with before the loop: the line below.
    assert [m.line(n) for n in (1, 2, 3, 4)] == [1, 1, 2, 2]
    # Re-indented by the with: the same lines, columns shifted back.
    assert (m.line(5), m.col(5, 9)) == (2, 5)
    assert (m.line(6), m.col(6, 13)) == (3, 9)
    # train() inserted before `return`, which is as deep: the line below.
    assert m.line(7) == 4
    assert m.line(8) == 4


def test_insertion_at_the_end_of_a_block_maps_to_the_line_above() -> None:
    old = "for x in xs:\n    step(x)\nprint(1)\n"
    new = "for x in xs:\n    step(x)\n    model.train()\nprint(1)\n"
    m = LineMap(old, new)
    assert m.line(3) == 2
    assert m.col(3, 5) == 5  # put at the line's indentation


def test_changed_line_maps_to_itself() -> None:
    m = LineMap("a = 1\nmodel.module.train()\n", "a = 1\nmodel.train()\n")
    assert m.line(2) == 2


def test_composition_and_messages() -> None:
    first = LineMap("a()\nb()\n", "x()\na()\nb()\n")
    second = LineMap("x()\na()\nb()\n", "x()\na()\ny()\nb()\n")
    both = second.then(first)
    assert [both.line(n) for n in (1, 2, 3, 4)] == [1, 1, 2, 2]
    f = Finding("RNF001", "set by `eval()` on line 4", 4, 1, end_line=4, end_col=4)
    mapped = both.finding(f)
    assert (mapped.line, mapped.message, mapped.end_line) == (2, "set by `eval()` on line 2", 2)
    assert second.then(identity("x()\na()\nb()\n")) is second
    assert identity("a\nb\n").line(2) == 2
