"""``outputs.feeds_output``: what a model computes reaching a print, a log,
a file or a plot, through names, collections and loops; and not otherwise."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.modes.outputs import feeds_output


def _model_call(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "model"


@pytest.mark.parametrize(
    "code",
    [
        "print(model(x))",
        "out = model(x)\nscore = out.argmax(1)\nlogger.info('score %s', score)",
        "samples = []\nsamples.append(model(z))\ntorch.save(samples, 'samples.pt')",
        "for _ in range(10):\n    idx = sample(model(idx))\n    print(itos[idx.item()], end='')",
        "img = model(z)\nsave_image(img, 'out.png')",
        "writer.add_scalar('psnr', psnr(model(x), y), step)",
        "out = model(x)\nprint(out.shape, out.mean())",  # a shape beside a value
    ],
)
def test_reaches_an_output(code: str) -> None:
    assert feeds_output(ast.parse(code).body, _model_call)


@pytest.mark.parametrize(
    "code",
    [
        "model(x)",  # BatchNorm statistics recomputed: the output is dropped
        "out = model(x)\nprint('done')",
        "feats = model(x)\nhead_loss = criterion(head(feats), y)",
        "torch.save(model.state_dict(), 'm.pt')",
        "print(model)",
        "def later():\n    print(model(x))",  # a nested function runs elsewhere
        # What the output is, not what it holds: a shape printed while debugging.
        "out = model(x)\nprint(out.shape, out.size(0), out.dtype)",
    ],
)
def test_reaches_no_output(code: str) -> None:
    assert not feeds_output(ast.parse(code).body, _model_call)
