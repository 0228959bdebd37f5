"""captum attributions are resolved through imports; input-gradient evidence."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.grads.gradcode import attribution, forward_model, input_gradient
from rnnfix.analysis.syntax.imports import ImportMap


def _no_values(name: str, use: ast.AST) -> list[ast.expr]:
    return []


@pytest.mark.parametrize(
    "source",
    [
        "from captum.attr import Saliency\nSaliency(model).attribute(x)",
        "import captum.attr as ca\nca.IntegratedGradients(model).attribute(x)",
        "from captum.attr._core.deep_lift import DeepLift\nDeepLift(model).attribute(x)",
        "from captum.attr import NoiseTunnel, Saliency\nNoiseTunnel(Saliency(model)).attribute(x)",
    ],
)
def test_captum_gradient_methods(source: str) -> None:
    tree = ast.parse(source)
    imports = ImportMap.build(tree)
    call = tree.body[-1].value  # type: ignore[attr-defined]
    found = attribution(call, imports, _no_values)
    assert found is not None and ast.unparse(found.forward_func) == "model"


@pytest.mark.parametrize(
    "source",
    [
        "from captum.attr import Occlusion\nOcclusion(model).attribute(x)",  # no gradient
        "from mylib import Saliency\nSaliency(model).attribute(x)",  # not captum
        "Saliency(model).attribute(x)",  # not imported at all
    ],
)
def test_not_captum_gradient(source: str) -> None:
    tree = ast.parse(source)
    call = tree.body[-1].value  # type: ignore[attr-defined]
    assert attribution(call, ImportMap.build(tree), _no_values) is None


def test_forward_model_of_lambda_and_method() -> None:
    def is_model(text: str) -> bool:
        return text == "net"

    def no_function(name: str) -> None:
        return None

    lam = ast.parse("lambda x: net(x)[0]", mode="eval").body
    assert forward_model(lam, is_model, no_function) == "net"
    method = ast.parse("net.forward", mode="eval").body
    assert forward_model(method, is_model, no_function) == "net"
    other = ast.parse("lambda x: f(x)", mode="eval").body
    assert forward_model(other, is_model, no_function) is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x.requires_grad_()\nloss.backward()\nprint(x.grad)", True),
        ("loss.backward()\nfor p in net.parameters():\n    print(p.grad)", False),
        ("loss.backward()\nprint(net.fc.weight.grad)", False),
        ("g = torch.autograd.grad(loss, x)", True),
        ("g = torch.autograd.grad(loss, net.parameters())", False),
        ("g = torch.autograd.grad(loss, params)", False),
    ],
)
def test_input_gradient_evidence(source: str, expected: bool) -> None:
    tree = ast.parse("import torch\n" + source)
    imports = ImportMap.build(tree)
    sink = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and (
            (isinstance(n.func, ast.Attribute) and n.func.attr in ("backward", "grad"))
            and ast.unparse(n.func) in ("loss.backward", "torch.autograd.grad")
        )
    )
    loop_vars = {"p"}

    def is_param(text: str) -> bool:
        return text.split(".")[0] in loop_vars or text.startswith("net")

    assert input_gradient(list(ast.walk(tree)), sink, imports, is_param) is expected
