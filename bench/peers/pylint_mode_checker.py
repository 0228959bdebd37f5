"""A pylint plugin doing a small part of rnnfix's job, for ``bench_peers.py``
(dslinter, the data-science pylint plugin, no longer installs on Python
3.11): a loop that calls ``.eval()`` and trains (``.backward()``/``.step()``)
but never calls ``.train()``. The same rule as ``fixit_mode_rule.py``; the
point is the cost of pylint's astroid trees and checker walk.

    PYTHONPATH=bench/peers pylint --load-plugins=pylint_mode_checker \\
        --disable=all --enable=eval-without-train --recursive=y PATH
"""

from __future__ import annotations

from astroid import nodes
from pylint.checkers import BaseChecker
from pylint.lint import PyLinter


class ModeToggleChecker(BaseChecker):
    name = "mode-toggle"
    msgs = {
        "W9701": (
            "this training loop calls .eval() and never .train() again",
            "eval-without-train",
            "A model left in eval mode trains with dropout off and BatchNorm frozen.",
        )
    }

    def _loop(self, node: nodes.For | nodes.While) -> None:
        names = {
            call.func.attrname
            for stmt in node.body
            for call in stmt.nodes_of_class(nodes.Call)
            if isinstance(call.func, nodes.Attribute)
        }
        if "eval" in names and "train" not in names and names & {"backward", "step"}:
            self.add_message("eval-without-train", node=node)

    def visit_for(self, node: nodes.For) -> None:
        self._loop(node)

    def visit_while(self, node: nodes.While) -> None:
        self._loop(node)


def register(linter: PyLinter) -> None:
    linter.register_checker(ModeToggleChecker(linter))
