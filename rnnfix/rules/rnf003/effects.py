"""What train mode does to the models of an RNF003 message.

The message used to say "dropout on, BatchNorm statistics updated" for every
model; a model with Dropout and no BatchNorm has no statistics to update, and
TORCH_FACTS is the authority on what the messages may claim. When the file
shows how a model is built (a class of this file, ``nn.Sequential(...)``, a
``torch.nn`` layer), the message names only the kinds of mode-dependent
layers it builds; otherwise it says what train mode does to such layers
without claiming the model has them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from rnnfix.analysis.torch.models import unwrap_built
from rnnfix.rules.base import FileContext

_DROPOUT = frozenset(
    {"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"}
)
_BATCHNORM = frozenset(
    {"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d",
     "LazyBatchNorm2d", "LazyBatchNorm3d"}
)  # fmt: skip
# torch.nn layers whose forward does not depend on the mode (no dropout
# argument, no running statistics): they add no kind and hide nothing.
_PLAIN = frozenset(
    {"Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
     "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm",
     "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "LeakyReLU", "ELU",
     "Identity", "Flatten", "Unflatten", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
     "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
     "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Parameter", "ParameterList", "ParameterDict",
     "Sequential", "ModuleList", "ModuleDict", "Module", "LSTMCell", "GRUCell", "RNNCell"}
)  # fmt: skip
_TENSORS = frozenset(
    {"torch.zeros", "torch.ones", "torch.randn", "torch.rand", "torch.empty", "torch.tensor",
     "torch.arange", "torch.full", "torch.eye", "torch.linspace", "torch.zeros_like",
     "torch.ones_like", "torch.randn_like"}
)  # fmt: skip
_UNKNOWN = "unknown"
_RNNS = frozenset({"LSTM", "GRU", "RNN"})


def train_mode_effects(ctx: FileContext, models: Iterable[str]) -> str:
    """``dropout on``, ``BatchNorm statistics updated``, both, or, when a
    model's layers are not all readable here, what train mode does to such
    layers (a claim that holds for any model)."""
    kinds: set[str] = set()
    for model in models:
        kinds |= _model_kinds(ctx, model)
    if _UNKNOWN in kinds:
        return "any Dropout or BatchNorm layer it has works as in training"
    if not kinds:
        # Every layer is readable and none depends on the mode: say so, not
        # "dropout on" for a model without dropout.
        return "it builds no Dropout or BatchNorm layer, so only its mode flag differs"
    parts = [p for k, p in (("dropout", "dropout on"), ("bn", "BatchNorm statistics updated"))
             if k in kinds]  # fmt: skip
    return ", ".join(parts)


def _model_kinds(ctx: FileContext, model: str) -> set[str]:
    flow = ctx.facts.modes
    info = flow.models.get(model)
    if info is None or info.built_at is None:
        return {_UNKNOWN}
    return _Reader(ctx).kinds_of(unwrap_built(info.built_at, flow.imports))


class _Reader:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.imports = ctx.facts.modes.imports
        self.classes = {
            n.name: n for n in ctx.tree.body if isinstance(n, ast.ClassDef)
        }  # module-level classes of the file
        self.seen: set[str] = set()

    def kinds_of(self, built: ast.AST) -> set[str]:
        if not isinstance(built, ast.Call):
            return {_UNKNOWN}
        func = built.func
        if isinstance(func, ast.Name) and func.id in self.classes:
            return self._class_kinds(func.id)
        q = self.imports.qualname(func)
        if q is None or not q.startswith("torch.nn.") or q.count(".") != 2:
            return {_UNKNOWN}
        last = q.rsplit(".", 1)[-1]
        if last in _DROPOUT:
            return {"dropout"}
        if last in _BATCHNORM:
            return {"bn"}
        if last in _RNNS:
            return {_UNKNOWN}  # inter-layer dropout, by arguments rnnfix does not weigh
        if last in ("Sequential", "ModuleList", "ModuleDict"):
            out: set[str] = set()
            for a in [*built.args, *(k.value for k in built.keywords)]:
                for n in ast.walk(a):
                    if isinstance(n, ast.Call) and self._is_layer_call(n):
                        out |= self.kinds_of(n)
            return out
        if last in _PLAIN or last.endswith("Loss"):
            return set()
        return {_UNKNOWN}

    def _is_layer_call(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.classes:
            return True
        q = self.imports.qualname(func)
        return q is not None and q.startswith("torch.nn.") and q.count(".") == 2

    def _stores_unknown(self, node: ast.Assign) -> bool:
        """``self.<x> = f(...)`` with ``f`` neither a layer rnnfix reads nor a
        tensor factory: ``f`` may return a module holding any layer."""
        if not any(
            isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
            for t in node.targets
        ):
            return False
        value = unwrap_built(node.value, self.imports)
        if not isinstance(value, ast.Call) or self._is_layer_call(value):
            return False
        q = self.imports.qualname(value.func)
        return q not in _TENSORS

    def _class_kinds(self, name: str) -> set[str]:
        if name in self.seen:
            return set()  # a cycle adds nothing new
        self.seen.add(name)
        cls = self.classes[name]
        out: set[str] = set()
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.classes:
                out |= self._class_kinds(base.id)
            else:
                q = self.imports.qualname(base)
                if q not in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                    return {_UNKNOWN}  # a base rnnfix cannot read may build anything
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and self._stores_unknown(node):
                return {_UNKNOWN}  # ``self.body = torchvision.models.resnet18()``
            if isinstance(node, ast.Attribute) and node.attr == "training":
                return {_UNKNOWN}  # mode-dependent code of its own
            if isinstance(node, ast.Call) and self._is_layer_call(node):
                out |= self.kinds_of(node)
            elif isinstance(node, ast.Call):
                q = self.imports.qualname(node.func)
                if (
                    q is not None
                    and q.startswith("torch.nn.functional.")
                    and ("dropout" in q or "batch_norm" in q)
                ):
                    return {_UNKNOWN}  # a functional layer whose mode is passed in
                last = q.rsplit(".", 1)[-1] if q else _last_name(node.func)
                if last[:1].isupper():
                    return {_UNKNOWN}  # a class of elsewhere (a backbone) may hold any layer
        return out


def _last_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""
