"""The author's condition of an optimizer's ownership of a model
(rnnfix.analysis.modes.condowner, issue 24.6): the evidence for ``if
<condition>: model.train()``. Shapes from diffusers' DreamBooth scripts."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.modes.condowner import owned_only_when
from rnnfix.rules.base import FileContext

_SCRIPT = """\
import itertools

import torch
from transformers import CLIPTextModel


def main(args, train_dataloader, unet):
    text_encoder = CLIPTextModel.from_pretrained("m", subfolder="text_encoder"){load}
    {freeze}
    params_to_optimize = (
        itertools.chain(unet.parameters(), text_encoder.parameters())
        if {own}
        else unet.parameters()
    )
    optimizer = torch.optim.AdamW(params_to_optimize, lr=1e-5)
    {extra}
    for epoch in range(3):
        unet.train()
        for batch in train_dataloader:
            loss = unet(text_encoder(batch["input_ids"])[0]).mean()
            loss.backward()
            optimizer.step()
"""


def _condition(
    freeze: str = "if not args.train_text_encoder: text_encoder.requires_grad_(False)",
    own: str = "args.train_text_encoder",
    load: str = "",
    extra: str = "",
) -> str | None:
    source = _SCRIPT.format(freeze=freeze, own=own, load=load, extra=extra)
    tree = ast.parse(source)
    flow = FileContext(source, tree).facts.modes
    step = next(s for s in flow.training_steps if s.kind == "optimizer_step")
    found = owned_only_when(flow, step, "text_encoder")
    return ast.unparse(found) if found is not None else None


def test_dreambooth_shape() -> None:
    assert _condition() == "args.train_text_encoder"


def test_freeze_on_the_load_with_the_same_flag() -> None:
    """diffusers' multi-subject inpainting script: ``.requires_grad_(flag)`` on the load."""
    found = _condition(freeze="pass", load=".requires_grad_(args.train_text_encoder)")
    assert found == "args.train_text_encoder"


def test_no_freeze_at_all() -> None:
    assert _condition(freeze="pass") == "args.train_text_encoder"


def test_the_optimizer_handed_back_by_prepare_is_the_same() -> None:
    found = _condition(extra="optimizer = accelerator.prepare(optimizer)")
    assert found == "args.train_text_encoder"


@pytest.mark.parametrize(
    "kwargs",
    [
        # frozen on both paths, or under another flag: the condition says nothing
        {"freeze": "text_encoder.requires_grad_(False)"},
        {"freeze": "if not args.freeze_te: text_encoder.requires_grad_(False)"},
        {"freeze": "pass", "load": ".requires_grad_(False)"},
        # a part thawed somewhere: a scheme of the author's
        {"extra": "text_encoder.text_model.final_layer_norm.requires_grad_(True)"},
        # not a plain option: assigned in the file, or an expression
        {"extra": "args.train_text_encoder = False"},
        {"own": "args.train_text_encoder and epoch > 0"},
        {"own": "not args.freeze_text_encoder", "freeze": "pass"},
        # the optimizer rebuilt: which one steps is not read
        {"extra": "optimizer = torch.optim.SGD(unet.parameters(), lr=1e-3)"},
    ],
)
def test_no_condition(kwargs: dict[str, str]) -> None:
    assert _condition(**kwargs) is None


def test_ownership_without_a_condition() -> None:
    source = _SCRIPT.format(freeze="pass", own="True", load="", extra="")
    source = source.replace("\n        if True\n        else unet.parameters()", "")
    assert "if True" not in source
    tree = ast.parse(source)
    flow = FileContext(source, tree).facts.modes
    step = next(s for s in flow.training_steps if s.kind == "optimizer_step")
    assert owned_only_when(flow, step, "text_encoder") is None
