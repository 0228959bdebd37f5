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


def test_test_functions_that_assert_and_main_self_checks_are_test_code() -> None:
    from rnnfix.analysis.project.testcode import test_function_spans

    src = """\
def _test_forward(model, loader):
    for x, y in loader:
        assert model(x).shape == y.shape


def test_prints(model, loader):
    for x, y in loader:
        print(model(x))


if __name__ == "__main__":
    net = Net()
    out = net(load("x.pt"))
    assert out.shape == (1, 8)
"""
    spans = test_function_spans(ast.parse(src))
    assert spans == [(1, 3), (11, 14)]  # not ``test_prints``: it asserts nothing


def test_a_demo_scripts_argument_assert_is_not_a_self_check() -> None:
    from rnnfix.analysis.project.testcode import test_function_spans

    src = """\
if __name__ == "__main__":
    model = load_model()
    blobs, im_scales = _get_image_blob(im)
    assert len(im_scales) == 1, "Only single-image batch implemented"
    print(model(blobs))
"""
    assert test_function_spans(ast.parse(src)) == []
