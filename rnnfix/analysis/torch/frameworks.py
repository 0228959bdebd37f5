"""Is this file torch code at all?

PaddlePaddle's ``nn.Layer``, MindSpore's ``Cell``, OneFlow, Jittor and
MegEngine modules have ``train()``/``eval()`` and a forward of their own, and
TensorFlow/Keras and MXNet code says ``model.evaluate``/``training``: read as
torch, their evaluation code gets ``import torch`` and ``torch.no_grad()``,
which does nothing for them and adds a dependency the project does not have.
A file that imports one of these frameworks and never imports torch is not
torch code (a model class of the run it imports would be its own framework's
too, as the file's own code is)."""

from __future__ import annotations

import ast
import re

from rnnfix.analysis.syntax.walks import walk_tree

_OTHER_FRAMEWORKS = frozenset(
    {"paddle", "paddlenlp", "paddleseg", "paddledet", "ppdet", "mindspore", "oneflow",
     "jittor", "megengine", "tensorflow", "keras", "mxnet"}
)  # fmt: skip
# A necessary condition, from the text: one of their names and an import.
_MENTION = re.compile(
    r"\b(?:paddle\w*|ppdet|mindspore|oneflow|jittor|megengine|tensorflow|keras|mxnet)\b"
)


def other_framework_only(source: str, tree: ast.Module) -> bool:
    """The file imports a deep-learning framework other than torch and no
    module of torch (``import torch``, ``from torch import nn``)."""
    if _MENTION.search(source) is None:
        return False
    other = False
    for node in walk_tree(tree):
        if isinstance(node, ast.Import):
            roots = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            roots = [(node.module or "").split(".")[0]]
        else:
            continue
        if "torch" in roots:
            return False
        other = other or any(r in _OTHER_FRAMEWORKS for r in roots)
    return other
