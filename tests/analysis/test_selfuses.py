"""What the classes of a file read on ``self`` (``project.selfuses``): RNF003
asks whether a base class of another file may call a subclass's method."""

from __future__ import annotations

import ast

from rnnfix.analysis.project.selfuses import self_uses

_SOURCE = """\
import abc
from framework import Base


class Root(object):
    def __init__(self, args):
        self.model = self._build_model()


class Child(Root, abc.ABC):
    def run(self):
        return self.helper()


class Framework(Base):
    def fit(self):
        self.evaluate_batch()


class Dynamic:
    def run(self, stage):
        return getattr(self, f"{stage}_step")()


class Named:
    def run(self):
        return getattr(self, "val_step")()
"""


def test_self_uses() -> None:
    found = self_uses(ast.parse(_SOURCE)).classes
    assert found["Root"] == frozenset({"model", "_build_model"})
    # in-file bases add theirs; ``object`` and ``abc.ABC`` call nothing
    assert found["Child"] == frozenset({"model", "_build_model", "helper"})
    # a base of another file or a library may call anything
    assert found["Framework"] is None
    # a computed name may be any method; a constant one is that method
    assert found["Dynamic"] is None
    assert found["Named"] == frozenset({"val_step"})
