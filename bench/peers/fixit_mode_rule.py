"""A Fixit 2 rule doing a small part of rnnfix's job, for ``bench_peers.py``:
a loop that calls ``.eval()`` and trains (``.backward()``/``.step()``) but
never calls ``.train()``. The point is the cost of running a LibCST-based
rule engine over a tree, not the rule: it is far less precise than rnnfix.

    PYTHONPATH=bench/peers fixit --rules fixit_mode_rule lint PATH
"""

from __future__ import annotations

import libcst as cst
from fixit import Invalid, LintRule, Valid


class _Calls(cst.CSTVisitor):
    """The method names called anywhere under a node."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute):
            self.names.add(node.func.attr.value)


class EvalWithoutTrain(LintRule):
    MESSAGE = "this training loop calls .eval() and never .train() again"
    VALID = [
        Valid("for x in data:\n    model.train()\n    loss.backward()\n    model.eval()\n"),
        Valid("for x in data:\n    model.eval()\n    model(x)\n"),
    ]
    INVALID = [
        Invalid("for x in data:\n    loss.backward()\n    opt.step()\n    model.eval()\n"),
    ]

    def _loop(self, node: cst.For | cst.While) -> None:
        calls = _Calls()
        node.body.visit(calls)
        names = calls.names
        if "eval" in names and "train" not in names and names & {"backward", "step"}:
            self.report(node)

    def visit_For(self, node: cst.For) -> None:
        self._loop(node)

    def visit_While(self, node: cst.While) -> None:
        self._loop(node)
