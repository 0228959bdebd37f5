"""Which methods a file calls on an instance of a class before which."""

from __future__ import annotations

import ast
import textwrap

from rnnfix.analysis.modes.objectuse import method_order
from rnnfix.analysis.syntax.names import dotted


def _order(source: str) -> set[tuple[str, str]]:
    tree = ast.parse(textwrap.dedent(source))
    return set(method_order(tree, lambda func: dotted(func) == "Classifier"))


def test_sequence_and_constructor() -> None:
    found = _order(
        """
        clf = Classifier(net).to(device)
        clf.predict(x)
        clf.fit(loader)
        """
    )
    assert ("predict", "fit") in found
    assert ("fit", "predict") not in found
    assert {("__init__", "predict"), ("__init__", "fit")} <= found


def test_loop_back_edge() -> None:
    found = _order(
        """
        def main():
            clf = Classifier(net)
            for _ in range(3):
                clf.fit(loader)
                clf.predict(x)
        """
    )
    assert ("predict", "fit") in found and ("fit", "predict") in found


def test_two_branches_of_one_if_never_follow() -> None:
    found = _order(
        """
        clf = Classifier(net)
        if mode == "predict":
            clf.predict(x)
        else:
            clf.fit(loader)
        """
    )
    assert ("predict", "fit") not in found


def test_other_classes_and_other_scopes_do_not_count() -> None:
    found = _order(
        """
        other = Other(net)
        other.predict(x)
        other.fit(loader)
        clf = Classifier(net)
        clf.predict(x)

        def later():
            clf.fit(loader)
        """
    )
    assert ("predict", "fit") not in found
