"""Which classes are test code (left alone unless include-tests)."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.project import testcode
from rnnfix.analysis.syntax.imports import ImportMap


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import unittest\nclass A(unittest.TestCase): pass\n", ["A"]),
        ("from unittest import TestCase as TC\nclass A(TC): pass\n", ["A"]),
        ("import unittest as ut\nclass A(ut.IsolatedAsyncioTestCase): pass\n", ["A"]),
        ("from absl.testing import absltest\nclass A(absltest.TestCase): pass\n", ["A"]),
        ("from common_utils import TestCase\nclass A(TestCase): pass\n", ["A"]),
        # Through a test class of the same file, defined above or below.
        ("class B(A): pass\nclass A(unittest.TestCase): pass\nclass C(B, Mixin): pass\n",
         ["A", "B", "C"]),
        # Collected by name: a Test* class with test_* methods.
        ("from base import BaseTest\nclass TestEval(BaseTest):\n def test_x(self): pass\n",
         ["TestEval"]),
        ("class TestEval:\n def test_x(self): pass\n", ["TestEval"]),
        # Not test code.
        ("import torch.nn as nn\nclass TestTimeAugmentation(nn.Module):\n"
         " def test_step(self): pass\n", []),
        ("class TestTime:\n def forward(self): pass\n", []),
        ("class Trainer(Base): pass\n", []),
        ("class Mixin:\n def test_x(self): pass\n", []),
    ],
)  # fmt: skip
def test_test_case_classes(source: str, expected: list[str]) -> None:
    tree = ast.parse(source)
    found = testcode.test_case_classes(tree, ImportMap.build(tree))
    assert sorted(c.name for c in found) == expected
