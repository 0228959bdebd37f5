"""Which parameters of a helper are False at one call (RNF003's
'it calls `sample_z`, which needs gradients')."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.grads.falseparams import false_parameters

HELPER = "def sample_z(shape=64, fix_class=-1, req_grad=False, *, keep=False):\n    pass\n"


def _at(call: str, helper: str = HELPER) -> frozenset[str]:
    func = ast.parse(helper).body[0]
    assert isinstance(func, ast.FunctionDef)
    node = ast.parse(call).body[0]
    assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
    return false_parameters(func, node.value)


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("sample_z(shape=10, fix_class=3)", {"req_grad", "keep"}),
        ("sample_z(10, 3, True)", {"keep"}),
        ("sample_z(10, 3, False, keep=True)", {"req_grad"}),
        ("sample_z(req_grad=flag)", {"keep"}),
        ("sample_z(*args)", set()),
        ("sample_z(**options)", set()),
    ],
)
def test_false_at_the_call(call: str, expected: set[str]) -> None:
    assert _at(call) == expected


def test_a_rebound_parameter_is_not_known() -> None:
    helper = "def sample_z(req_grad=False):\n    req_grad = not req_grad\n"
    assert _at("sample_z()", helper) == frozenset()


def test_a_decorated_helper_is_not_read() -> None:
    assert _at("sample_z()", "@wraps\n" + HELPER) == frozenset()


def test_a_bound_method_skips_self() -> None:
    helper = "def sample(self, req_grad=False):\n    pass\n"
    assert _at("self.sample(True)", helper) == frozenset()
    assert _at("self.sample()", helper) == {"req_grad"}


def test_a_flag_handed_down_stays_known() -> None:
    """ncrfpp: ``batchify_with_label(batch, gpu, False)`` passes its
    ``if_train`` on to the helper that builds the tensors with
    ``requires_grad=if_train``: False there too, but only for a name the
    caller knows is False."""
    func = ast.parse(HELPER).body[0]
    assert isinstance(func, ast.FunctionDef)
    call = ast.parse("sample_z(10, 3, if_train, keep=other)").body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    assert false_parameters(func, call.value, frozenset({"if_train"})) == {"req_grad"}
    assert false_parameters(func, call.value) == frozenset()
