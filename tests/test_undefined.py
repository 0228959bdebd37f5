"""The name net: reads that may find their name unbound, resolved as Python does."""

from __future__ import annotations

import ast

import pytest

from rnnfix.run.undefined import NameProblem, introduced, problems


def _problems(src: str) -> list[tuple[str, str, str]] | None:
    found = problems(ast.parse(src))
    return None if found is None else [(p.scope, p.name, p.kind) for p in found]


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        # Assigned later in the same function: the trainer.dispatch.train().
        (
            "def f(make):\n    trainer.dispatch.train()\n    trainer = make()\n",
            [("f", "trainer", "unbound")],
        ),
        # In a loop, bound only from the second iteration on.
        (
            "def f(make, n):\n    for i in n:\n        trainer.x()\n        trainer = make()\n",
            [("f", "trainer", "maybe-unbound")],
        ),
        ("print(later)\nlater = 1\n", [("<module>", "later", "unbound")]),
        ("x = 1\ndel x\nprint(x)\n", [("<module>", "x", "unbound")]),
        ("def f():\n    print(1)\n    print = 2\n", [("f", "print", "unbound")]),
        ("def f():\n    c += 1\n", [("f", "c", "unbound")]),
        ("def f():\n    x: int\n    return x\n", [("f", "x", "unbound")]),
        (
            "import sys\nif sys.argv:\n    m = 1\nprint(m)\n",
            [("<module>", "m", "maybe-unbound")],
        ),
        # The handler's name is deleted when the handler ends.
        (
            "try:\n    pass\nexcept Exception as e:\n    pass\nprint(e)\n",
            [("<module>", "e", "unbound")],
        ),
        # Methods and comprehensions do not see the class body's names.
        ("class A:\n    z = 1\n    def m(self):\n        return z\n", [("A.m", "z", "undefined")]),
        (
            "class A:\n    y = 1\n    a = [y for _ in range(3)]\n    b = [x for x in range(y)]\n",
            [("A", "y", "undefined")],
        ),
        ("def f():\n    return [x for x in range(3) if y]\n", [("f", "y", "undefined")]),
        (
            "def f():\n    r = [v for _ in range(3)]\n    v = 1\n    return r\n",
            [("f", "v", "unbound")],
        ),
    ],
)
def test_problems(src: str, expected: list[tuple[str, str, str]]) -> None:
    assert _problems(src) == expected


@pytest.mark.parametrize(
    "src",
    [
        "import torch\ndef f(model, xs):\n    model.eval()\n"
        "    with torch.no_grad():\n        return [model(x) for x in xs]\n",
        "def f():\n    global g\n    g = 1\ndef h():\n    return g\nprint(g)\n",
        "try:\n    import a\nexcept ImportError:\n    a = None\nprint(a)\n",
        "fs = [lambda: i for i in range(3)]\n",
        "def f(xs):\n    if any((y := x) for x in xs):\n        return y\n",
        "def f():\n    def g():\n        return v\n    v = 1\n    return g\n",
        "def f(p):\n    match p:\n        case [a, *rest]:\n            return a, rest\n"
        "        case {'k': v, **kw}:\n            return v, kw\n",
        "def f(x):\n    if x:\n        return 1\n    else:\n        y = 2\n    return y\n",
        "x = 1\nclass A:\n    x = x\n",
        "def f():\n    try:\n        a = 1\n    finally:\n        b = 2\n    return a, b\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a import B\n"
        "def f(x: B) -> B:\n    return x\n",
        "print(__file__, __name__)\nclass A:\n    print(__qualname__)\n"
        "    def f(self):\n        return __class__\n",
        "def f():\n    x = 1\n    def g():\n        nonlocal x\n        x += 1\n    return g\n",
        "def f(n):\n    for i in n:\n        if i:\n            continue\n        print(i)\n",
        "def f():\n    raise ValueError\n    print(unreachable)\n",
        "with open('f') as fh, open(fh.name) as g:\n    print(fh, g)\n",
        "def f(*args, **kwargs):\n    return args, kwargs, (lambda q, *r: q + r)(1)\n",
    ],
)
def test_no_problems(src: str) -> None:
    assert _problems(src) == []


def test_star_import_makes_names_unknowable() -> None:
    assert _problems("from os import *\nprint(q)\n") is None


def _p(name: str, kind: str, scope: str = "f") -> NameProblem:
    return NameProblem(scope, name, kind, 1)  # type: ignore[arg-type]


def test_introduced_counts_definite_problems() -> None:
    before = [_p("t", "unbound")]
    assert introduced(before, [_p("t", "unbound")]) == []
    assert introduced(before, [_p("t", "unbound"), _p("t", "unbound")]) == [_p("t", "unbound")]
    assert introduced([], [_p("u", "undefined")]) == [_p("u", "undefined")]


def test_introduced_counts_a_maybe_unbound_name_once_per_scope() -> None:
    before = [_p("m", "maybe-unbound")]
    assert introduced(before, [_p("m", "maybe-unbound"), _p("m", "maybe-unbound")]) == []
    assert introduced(before, [_p("m", "maybe-unbound", "g")]) == [_p("m", "maybe-unbound", "g")]
