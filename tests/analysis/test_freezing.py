"""The author's evidence against an edit (``rnnfix.analysis.modes.freezing``):
freezing, partial modes, ``None`` paths and conditional ``train()``."""

from __future__ import annotations

import ast
import textwrap

from rnnfix.analysis.modes.modeflow import ModeFlow
from rnnfix.rules.base import FileContext


def flow(source: str) -> tuple[ModeFlow, ast.Module]:
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    return FileContext(source=source, tree=tree).facts.modes, tree


def call_named(tree: ast.AST, text: str) -> ast.Call:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node) == text:
            return node
    raise AssertionError(f"no call {text!r}")


def function(tree: ast.AST, name: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise AssertionError(f"no function {name!r}")


HEADER = """
import torch
from torch import nn
unet = nn.Linear(2, 2)
text_encoder = nn.Linear(2, 2)
"""


def test_requires_grad_false_freezes_and_a_later_unfreeze_thaws() -> None:
    mf, _ = flow(HEADER + "unet.requires_grad_(False)\ntext_encoder.requires_grad_(False)\n")
    assert mf.freezing.frozen("unet") and mf.freezing.frozen("unet.weight")
    mf, _ = flow(HEADER + "unet.requires_grad_(False)\nunet.requires_grad_(True)\n")
    assert not mf.freezing.frozen("unet")
    assert mf.freezing.frozen_on_some_path("unet")


def test_a_part_unfrozen_means_the_model_trains() -> None:
    # a linear probe: the backbone frozen, its head trained
    mf, _ = flow(HEADER + "unet.requires_grad_(False)\nunet.fc.requires_grad_(True)\n")
    assert not mf.freezing.frozen("unet")


def test_freezing_loops_and_helpers() -> None:
    loop = "for p in unet.parameters():\n    p.requires_grad = False\n"
    mf, _ = flow(HEADER + loop)
    assert mf.freezing.frozen("unet")
    helper = (
        "def freeze_params(params):\n    for param in params:\n"
        "        param.requires_grad = False\n"
        "freeze_params(unet.parameters())\n"
    )
    mf, _ = flow(HEADER + helper)
    assert mf.freezing.frozen("unet")
    some = (
        "for n, p in unet.named_parameters():\n"
        "    if 'fc' not in n:\n"
        "        p.requires_grad = False\n"
    )
    mf, _ = flow(HEADER + some)
    assert not mf.freezing.frozen("unet")  # only some parameters: not the whole model


def test_an_eval_beside_a_freeze() -> None:
    src = (
        HEADER
        + "if cond:\n    unet.train()\nelse:\n    unet.eval()\n    unet.requires_grad_(False)\n"
    )
    mf, tree = flow(src)
    assert mf.freezing.freezes_near(call_named(tree, "unet.eval()"), "unet") is not None
    assert mf.freezing.freezes_near(call_named(tree, "unet.train()"), "unet") is None


def test_none_on_some_path_and_none_defaults() -> None:
    src = HEADER + (
        "def main(args, loss_fct=None, *, scaler=None):\n"
        "    model = nn.Linear(2, 2)\n"
        "    if args.pre_compute:\n"
        "        text_encoder = None\n"
        "    return model\n"
    )
    mf, tree = flow(src)
    fn = function(tree, "main")
    assert mf.freezing.may_be_none("text_encoder", fn) is not None
    assert mf.freezing.may_be_none("model", fn) is None
    assert mf.freezing.none_default("loss_fct", fn) and mf.freezing.none_default("scaler", fn)
    assert not mf.freezing.none_default("args", fn)


def test_conditional_train_only() -> None:
    src = HEADER + (
        "def train(args, loader):\n"
        "    for epoch in range(3):\n"
        "        unet.train()\n"
        "        if args.train_text_encoder:\n"
        "            text_encoder.train()\n"
        "        if epoch % 5 == 0:\n"
        "            unet.eval()\n"
    )
    mf, tree = flow(src)
    fn = function(tree, "train")
    assert mf.freezing.conditional_train("text_encoder", fn) is not None
    # a conditional eval() (validation every N epochs) is no author's condition on train()
    assert mf.freezing.conditional_train("unet", fn) is None


def test_partial_train_after_an_eval() -> None:
    src = HEADER + (
        "def finetune(model, loader, opt):\n"
        "    model.eval()\n"
        "    model.layer4.train()\n"
        "    for x in loader:\n"
        "        model(x).sum().backward()\n"
        "        opt.step()\n"
    )
    mf, tree = flow(src)
    step = call_named(tree, "opt.step()")
    part = mf.freezing.partial_train_after(call_named(tree, "model.eval()"), step, "model")
    assert part is not None and ast.unparse(part) == "model.layer4.train()"
