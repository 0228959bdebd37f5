"""The comments that make a mode call deliberate (analysis/modes/comments.py)."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.modes.comments import EVAL_INTENTS, TRAIN_INTENTS, intent_comment


def _first_call(source: str) -> tuple[list[str], ast.AST]:
    tree = ast.parse(source)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    return source.splitlines(), call


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("model.eval()  # freeze BN\n", "frozen BatchNorm"),
        ("model.eval()  # fix batchnorm statistics\n", "frozen BatchNorm"),
        ("model.eval()  # batch size 1\n", "batch size 1"),
        ("model.eval()  # bs=1, so no batch statistics\n", "batch size 1"),
        ("# linear probing\nbackbone.eval()\n", "a frozen feature model"),
        ("model.train()  # MC dropout\n", "Monte Carlo dropout"),
        ("model.train()  # keep dropout on for uncertainty\n", "Monte Carlo dropout"),
        ("# use batch statistics at test time\nmodel.train()\n", "BatchNorm batch statistics"),
        ("model.train()  # test-time adaptation\n", "test-time adaptation"),
    ],
)
def test_says_why(source: str, kind: str) -> None:
    lines, call = _first_call(source)
    assert intent_comment(lines, call) == kind


@pytest.mark.parametrize(
    "source",
    [
        "model.eval()  # eval mode\n",
        "model.eval()\n",
        'print("# freeze bn"); model.eval()\n',  # a string, not a comment
        "# freeze bn\n\nmodel.eval()\n",  # a blank line between: about something else
        "model.train()  # back to training\n",
    ],
)
def test_no_evidence(source: str) -> None:
    lines, call = _first_call(source)
    call = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)][-1]
    assert intent_comment(lines, call) is None


def test_kinds_per_mode() -> None:
    lines, call = _first_call("model.eval()  # MC dropout off here\n")
    assert intent_comment(lines, call, EVAL_INTENTS) is None
    lines, call = _first_call("model.train()  # freeze bn\n")
    assert intent_comment(lines, call, TRAIN_INTENTS) is None
