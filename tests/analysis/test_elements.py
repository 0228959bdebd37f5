"""``Elements``: which models a loop over a container switches (issue 36.1).
Only elements written out in the file count: a literal, ``dict(k=v)``, or an
empty container filled by straight-line constant-key statements."""

from __future__ import annotations

import ast
import textwrap

import pytest

from rnnfix.analysis.modes.elements import Elements, loop_spelling


def _elements(source: str) -> tuple[Elements, ast.Module]:
    tree = ast.parse(textwrap.dedent(source))
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    return Elements(tree, parents), tree


def _switch(tree: ast.Module) -> ast.Call:
    """The first ``.eval()`` call of the file."""
    return next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "eval"
    )


def _read(source: str) -> tuple[str, ...] | None:
    elements, tree = _elements(source)
    call = _switch(tree)
    receiver = call.func.value  # type: ignore[attr-defined]
    if isinstance(receiver, ast.Name):
        return elements.of_loop_variable(receiver.id, call)
    return elements.of_subscript(receiver, call)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("nets = dict(G=G, D=D)\nfor n in nets.values():\n    n.eval()\n", ("G", "D")),
        ("nets = dict(G=G, D=D)\nfor k, n in nets.items():\n    n.eval()\n", ("G", "D")),
        (
            'nets = {}\nnets["G"] = Gen()\nnets["D"] = Dis()\nfor k in nets:\n    nets[k].eval()\n',
            ('nets["G"]', 'nets["D"]'),
        ),
        (
            'nets = {}\nnets["G"] = g\nfor k in nets.keys():\n    nets[k].eval()\n',
            ("g",),
        ),
        ("ms = []\nms.append(enc)\nms.append(dec)\nfor m in ms:\n    m.eval()\n", ("enc", "dec")),
        (
            "class A:\n"
            "    def __init__(self):\n"
            "        self.nets = {}\n"
            '        self.nets["G"] = Gen()\n'
            "    def ev(self):\n"
            "        for n in self.nets.values():\n"
            "            n.eval()\n",
            ('self.nets["G"]',),
        ),
    ],
)
def test_written_out_elements(source: str, expected: tuple[str, ...]) -> None:
    assert _read(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        # filled under a condition, in a loop, at a variable key
        'nets = {}\nnets["G"] = G\nif d:\n    nets["D"] = D\n'
        "for n in nets.values():\n    n.eval()\n",
        "ms = []\nfor x in xs:\n    ms.append(x)\nfor m in ms:\n    m.eval()\n",
        "nets = {}\nfor k in ks:\n    nets[k] = build(k)\nfor n in nets.values():\n    n.eval()\n",
        # changed in another way too
        'nets = {}\nnets["G"] = G\nnets.update(o)\nfor n in nets.values():\n    n.eval()\n',
        # the same key twice
        'nets = {}\nnets["G"] = G\nnets["G"] = H\nfor n in nets.values():\n    n.eval()\n',
        # the loop runs before the container is full
        'nets = {}\nnets["G"] = G\nfor n in nets.values():\n    n.eval()\nnets["D"] = D\n',
        # a dict's keys, a list's values()
        'nets = {}\nnets["G"] = G\nfor n in nets:\n    n.eval()\n',
        # a subset of the keys, a key from elsewhere, a list indexed by its elements
        'nets = {}\nnets["G"] = G\nfor k in ("G",):\n    nets[k].eval()\n',
        'nets = {}\nnets["G"] = G\ndef f(k):\n    nets[k].eval()\n',
        "ms = []\nms.append(a)\nfor k in ms:\n    ms[k].eval()\n",
        # under a condition inside the loop (a helper switching by its flag)
        'nets = {}\nnets["G"] = G\nfor k in nets:\n    if t:\n        nets[k].train()\n'
        "    else:\n        nets[k].eval()\n",
        # a module container is a module itself
        'nets = nn.ModuleDict({"G": G})\nfor n in nets.values():\n    n.eval()\n',
        # a comprehension
        "ms = [Net() for _ in range(3)]\nfor m in ms:\n    m.eval()\n",
    ],
)
def test_elements_not_read(source: str) -> None:
    assert _read(source) is None


def test_loop_spelling_repeats_the_authors_items_and_key_loops() -> None:
    elements, tree = _elements("nets = dict(G=G, D=D)\nfor k, n in nets.items():\n    n.eval()\n")
    call = _switch(tree)
    found = loop_spelling(elements, call, {"G", "D"}, ast.unparse(tree), tree)
    assert found == "for k, n in nets.items():\n    n.{method}()"
    source = 'nets = {}\nnets["G"] = G\nnets["D"] = D\nfor k in nets:\n    nets[k].eval()\n'
    elements, tree = _elements(source)
    found = loop_spelling(elements, _switch(tree), {"G", "D"}, source, tree)
    assert found == "for k in nets:\n    nets[k].{method}()"
    # a loop over more models than the step's: no loop of ours
    assert loop_spelling(elements, _switch(tree), {"G"}, source, tree) is None
