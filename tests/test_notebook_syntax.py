"""IPython syntax masked by IPython's rules (IPython/core/inputtransformer2.py)."""

from __future__ import annotations

import ast

import pytest

from rnnfix.source.notebook_syntax import (
    cell_magic,
    has_python_body,
    is_automagic,
    mask,
    split_lines,
    unmask,
)

M = "__rnnfix_magic__"


@pytest.mark.parametrize(
    ("cell", "masked", "pieces"),
    [
        ("!echo a && \\\n  echo b\nx = 1\n", f"{M}(0\n)\nx = 1\n", ["!echo a && \\\n  echo b"]),
        ('print(\n    "%d"\n    % (x,)\n)\n', None, []),
        ("x = 1 \\\n% 2\n", None, []),
        ('s = """\n%s\n!x\n"""\n', None, []),
        ("s = 'a\\\n%b'\n", None, []),
        ("x = %timeit -o f()\n", f"x = {M}(0)\n", ["%timeit -o f()"]),
        ("y = !ls -l\n", f"y = {M}(0)\n", ["!ls -l"]),
        ("y != 3\nz = y%2\n", None, []),
        ("if a:\n    %time f()\n", f"if a:\n    {M}(0)\n", ["%time f()"]),
        ("obj?\nobj.attr??\n", f"{M}(0)\n{M}(1)\n", ["obj?", "obj.attr??"]),
        ("f(1,\n  2)?\n", f"{M}(0\n)\n", ["f(1,\n  2)?"]),
        ("x = 1  # what?\n", None, []),
        ("s = 'what?'\n", None, []),
        ("%%time\nx = 1\n", f"{M}(0)\nx = 1\n", ["%%time"]),
        (",f a b\n;f a b\n/f a b\n", f"{M}(0)\n{M}(1)\n{M}(2)\n", [",f a b", ";f a b", "/f a b"]),
        ("!a \\\r\n b\r\nx = 1\r\n", f"{M}(0\r\n)\r\nx = 1\r\n", ["!a \\\r\n b"]),
        ("d = {\n  'k': 1,\n}\n%who\n", f"d = {{\n  'k': 1,\n}}\n{M}(0)\n", ["%who"]),
        ("!tail -f x \\", f"{M}(0)", ["!tail -f x \\"]),
    ],
)
def test_mask(cell: str, masked: str | None, pieces: list[str]) -> None:
    magics: list[str] = []
    out = mask(cell, magics)
    assert out == (cell if masked is None else masked)
    assert magics == pieces
    assert unmask(out, magics) == cell
    assert len(split_lines(out)) == len(split_lines(cell))  # line numbers kept
    ast.parse(out)


def test_split_lines_only_at_python_newlines() -> None:
    assert split_lines("a\x0cb\u2028c\r\nd\re\nf") == ["a\x0cb\u2028c\r\n", "d\r", "e\n", "f"]


@pytest.mark.parametrize(
    ("cell", "name", "python"),
    [
        ("%%time\nx = 1", "time", True),
        ("\n%%timeit -n1\nx", "timeit", True),
        ("%%capture out\nx", "capture", True),
        ("%%prun -s cumulative\nx", "prun", True),
        ("%%bash\nls", "bash", False),
        ("  %%time\n  x = 1", "time", False),
        ("%%time?", "?", False),
        ("x = 1\n%%time", None, False),
        ("%time x", None, False),
    ],
)
def test_cell_magic(cell: str, name: str | None, python: bool) -> None:
    assert cell_magic(cell) == name
    assert has_python_body(cell) is python


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("pip install torch\n", True),
        ("  conda install -y numpy", True),
        ("cd /content\n\n", True),
        ("pip = 3\n", False),  # an assignment (and Python)
        ("pip install a\npip install b\n", False),  # automagic: one-line cells only
        ("import torch\n", False),
        ("frobnicate the data\n", False),
    ],
)
def test_automagic(cell: str, expected: bool) -> None:
    assert is_automagic(cell) is expected
