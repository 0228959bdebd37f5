"""``torch.frameworks``: a file of another deep-learning framework is not torch code."""

from __future__ import annotations

import ast
import textwrap

import pytest

from rnnfix.analysis.torch.frameworks import other_framework_only


def _other(code: str) -> bool:
    source = textwrap.dedent(code)
    return other_framework_only(source, ast.parse(source))


@pytest.mark.parametrize(
    "code",
    [
        "import paddle\nmodel.eval()\n",
        "import paddle.nn as nn\n",
        "from mindspore import nn\n",
        "import tensorflow as tf\n",
        "def f():\n    import oneflow as flow\n",
    ],
)
def test_another_framework_without_torch(code: str) -> None:
    assert _other(code)


@pytest.mark.parametrize(
    "code",
    [
        "import torch\nimport paddle\n",
        "import paddle\nfrom torch import nn\n",
        "import numpy as np\nmodel.eval()\n",
        "from models import Net  # paddle-free\n",
        "from .paddle import convert\n",  # a module of the project named paddle
    ],
)
def test_torch_or_no_framework(code: str) -> None:
    assert not _other(code)
