"""RNF003's messages name only the mode-dependent layers a model is shown to build."""

from __future__ import annotations

import ast

import pytest

from rnnfix.analysis.context import FileContext
from rnnfix.rules.rnf003.effects import train_mode_effects

_HEAD = "import torch\nimport torch.nn as nn\n\n"
_UNSURE = "any Dropout or BatchNorm layer it has works as in training"


def _effects(body: str, model: str = "model") -> str:
    source = _HEAD + body
    return train_mode_effects(FileContext(source=source, tree=ast.parse(source)), [model])


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # nanoGPT-like: Dropout, LayerNorm, Linear, no BatchNorm
        (
            "class GPT(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.drop = nn.Dropout(0.1)\n        self.ln = nn.LayerNorm(8)\n"
            "model = GPT()\n",
            "dropout on",
        ),
        (
            "model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())\n",
            "BatchNorm statistics updated",
        ),
        (
            "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.bn = nn.BatchNorm1d(8)\n"
            "class Net(Block):\n    def __init__(self):\n        super().__init__()\n"
            "        self.drop = nn.Dropout(0.5)\n"
            "model = Net().to('cpu')\n",
            "dropout on, BatchNorm statistics updated",
        ),
        # an imported backbone, a model read from a parameter, self.training,
        # an RNN whose dropout depends on its arguments: not claimed either way
        (
            "import torchvision\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.body = torchvision.models.resnet18()\n"
            "        self.drop = nn.Dropout(0.5)\nmodel = Net()\n",
            _UNSURE,
        ),
        ("def f(model):\n    return model(1)\n", _UNSURE),
        (
            "class Net(nn.Module):\n    def forward(self, x):\n"
            "        return x * 2 if self.training else x\nmodel = Net()\n",
            _UNSURE,
        ),
        ("model = nn.LSTM(8, 8, num_layers=2, dropout=0.3)\n", _UNSURE),
        # pytorch-tutorial's logistic regression: every layer read, none mode-dependent
        (
            "model = nn.Linear(784, 10)\n",
            "it builds no Dropout or BatchNorm layer, so only its mode flag differs",
        ),
    ],
)
def test_effects_name_what_the_model_builds(body: str, expected: str) -> None:
    assert _effects(body) == expected
