"""Which names and attribute paths hold torch modules ("models").

Never guessed from a name: an object is a model when

- it is built from an ``nn.Module`` subclass of this file or a torch module
  (``Net()``, ``nn.LSTM(...)``, ``nn.DataParallel(Net()).to(dev)``, torchvision), or
- ``.eval()`` / ``.train()`` / ``.train(False)`` is called on it *and* it is called
  (``model(x)``, ``model.forward(x)``) or its ``.parameters()`` are used, or
- it is called and its ``.parameters()`` are used (e.g. fed to an optimizer), or
- it is a parameter that receives a model at a call in this file, or an
  attribute assigned a model (``self.model = model``).

Receivers of ``.train(data)``-like calls (xgboost/lightgbm boosters, other
libraries' trainers), instances of this file's non-module classes, and names
bound to imported non-torch modules are never models.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rnnfix.analysis.imports import ImportMap
from rnnfix.analysis.names import dotted
from rnnfix.analysis.scopes import FileIndex, FuncNode, walk_scope

RNN_CLASSES = {"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN"}
# Wrappers whose result trains/evaluates the wrapped module: the mode is the inner one's.
WRAPPERS = {
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.compile",
}
# Methods that return the module itself.
SELF_RETURNING = {
    "to",
    "cuda",
    "cpu",
    "float",
    "double",
    "half",
    "bfloat16",
    "train",
    "requires_grad_",
}
_CONTAINERS = {"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"}
_NOT_MODULES = {"Parameter", "ParameterList", "ParameterDict", "Buffer"}


@dataclass(frozen=True)
class ModelInfo:
    key: str  # dotted text as written: "model", "self.critic"
    built_at: ast.Call | None  # the constructor call, when built in this file
    class_name: str | None  # local class name or qualified torch name ("torch.nn.LSTM")
    has_rnn: bool | None  # contains an LSTM/GRU/RNN (None: not known)
    evidence: str  # "built" | "mode+call" | "call+parameters" | "argument"


def is_mode_call(call: ast.Call) -> bool | None:
    """For ``x.eval()`` / ``x.train(...)``: True if it is a torch-module-style
    mode switch, False if it is some other library's ``train``/``eval``; None
    when it is neither method."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("train", "eval"):
        return None
    if func.attr == "eval":
        return not call.args and not call.keywords
    if call.keywords:
        return len(call.keywords) == 1 and call.keywords[0].arg == "mode" and not call.args
    if not call.args:
        return True
    if len(call.args) > 1:
        return False
    arg = call.args[0]
    if isinstance(arg, ast.Constant):
        return isinstance(arg.value, bool)
    # ``model.train(is_training)`` / ``model.train(self.training)``; a data
    # argument (``booster.train(params)``) is another library's train.
    text = (dotted(arg) or "").lower()
    return "train" in text or "mode" in text


class ModuleClasses:
    """Local classes that are ``nn.Module`` subclasses, Lightning modules, and
    which of them contain an RNN."""

    def __init__(self, index: FileIndex, imports: ImportMap) -> None:
        self.modules: set[str] = set()
        self.lightning: set[str] = set()
        self.with_rnn: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, cls in index.classes.items():
                if name in self.modules:
                    continue
                for base in cls.bases:
                    q = imports.qualname(base) or ""
                    local = isinstance(base, ast.Name) and base.id in self.modules
                    if local or q.startswith(("torch.nn.", "pytorch_lightning.", "lightning.")):
                        self.modules.add(name)
                        changed = True
                        break
        for name, cls in index.classes.items():
            for base in cls.bases:
                q = imports.qualname(base) or ""
                if "Lightning" in q or (isinstance(base, ast.Name) and base.id in self.lightning):
                    self.lightning.add(name)
            if any(
                isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "training_step"
                for s in cls.body
            ):
                self.lightning.add(name)
        changed = True
        while changed:
            changed = False
            for name, cls in index.classes.items():
                if name in self.with_rnn:
                    continue
                for node in ast.walk(cls):
                    if isinstance(node, ast.Call):
                        q = imports.qualname(node.func) or ""
                        local = isinstance(node.func, ast.Name) and node.func.id in self.with_rnn
                        if q in RNN_CLASSES or local:
                            self.with_rnn.add(name)
                            changed = True
                            break


def mode_receiver(call: ast.Call, imports: ImportMap) -> str | None:
    """The model ``x.eval()`` / ``x.to(device).train()`` switches, as dotted text."""
    if not isinstance(call.func, ast.Attribute):
        return None
    return dotted(unwrap_built(call.func.value, imports))


def unwrap_built(value: ast.AST, imports: ImportMap) -> ast.AST:
    """``nn.DataParallel(Net()).to(dev)`` -> ``Net()``; ``model.to(dev)`` -> ``model``."""
    while True:
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in SELF_RETURNING
        ):
            value = value.func.value
        elif (
            isinstance(value, ast.Call) and value.args and imports.qualname(value.func) in WRAPPERS
        ):
            value = value.args[0]
        else:
            return value


def built_class(
    value: ast.AST, imports: ImportMap, classes: ModuleClasses
) -> tuple[ast.Call, str, bool | None] | None:
    """(constructor call, class name, has_rnn) when ``value`` builds a module."""
    value = unwrap_built(value, imports)
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Name) and func.id in classes.modules:
        return value, func.id, func.id in classes.with_rnn
    q = imports.qualname(func)
    if q is None:
        return None
    last = q.rsplit(".", 1)[-1]
    # Loss modules have no train/eval behaviour worth tracking.
    if q in _CONTAINERS:
        inner = [n for a in value.args for n in ast.walk(a) if isinstance(n, ast.Call)]
        rnn = any(_rnn_of(n, imports, classes) for n in inner)
        return value, q, rnn
    if (
        q.startswith("torch.nn.")
        and last[:1].isupper()
        and last not in _NOT_MODULES
        and not last.endswith("Loss")
    ):
        return value, q, q in RNN_CLASSES
    if q.startswith("torchvision.models.") or q == "timm.create_model":
        return value, q, False
    return None


def _rnn_of(call: ast.Call, imports: ImportMap, classes: ModuleClasses) -> bool:
    found = built_class(call, imports, classes)
    return bool(found and found[2])


def assignment_pairs(node: ast.Assign | ast.AnnAssign) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs, ``a, b = A(), B()`` element-wise."""
    assert node.value is not None
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    out: list[tuple[ast.expr, ast.expr]] = []
    for t in targets:
        if (
            isinstance(t, (ast.Tuple, ast.List))
            and isinstance(node.value, (ast.Tuple, ast.List))
            and len(t.elts) == len(node.value.elts)
        ):
            out.extend(zip(t.elts, node.value.elts, strict=True))
        else:
            out.append((t, node.value))
    return out


def find_models(
    tree: ast.Module, index: FileIndex, imports: ImportMap, classes: ModuleClasses
) -> dict[str, ModelInfo]:
    built: dict[str, ModelInfo] = {}
    mode_receivers: set[str] = set()
    not_models: set[str] = set()
    called: set[str] = set()
    parameters: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for t, value in assignment_pairs(node):
                found = built_class(value, imports, classes)
                text = dotted(t)
                if found and text:
                    call, name, rnn = found
                    built[text] = ModelInfo(text, call, name, rnn, "built")
        elif isinstance(node, ast.Call):
            func = node.func
            text = dotted(func)
            if text:
                called.add(text)
            if isinstance(func, ast.Attribute):
                recv = dotted(func.value)
                if recv is None:
                    # ``model.to(device).train()``
                    recv = mode_receiver(node, imports) if is_mode_call(node) else None
                    if recv is not None:
                        mode_receivers.add(recv)
                    continue
                if func.attr == "forward":
                    called.add(recv)
                elif func.attr in ("parameters", "named_parameters"):
                    parameters.add(recv)
                kind = is_mode_call(node)
                if kind is True:
                    mode_receivers.add(mode_receiver(node, imports) or recv)
                elif kind is False:
                    not_models.add(recv)
    # Instances of local non-module classes, imported modules (``xgb``, ``pd``),
    # local functions and classes are never models.
    for text, cls in index.instance_types.items():
        if cls not in classes.modules:
            not_models.add(text)
    models: dict[str, ModelInfo] = dict(built)
    for key in sorted(mode_receivers | (called & parameters)):
        if key in models or key in not_models:
            continue
        root = key.split(".")[0]
        if root in imports.names or root in index.module_functions or root in index.classes:
            continue
        if key in mode_receivers and (key in called or key in parameters):
            models[key] = ModelInfo(key, None, None, None, "mode+call")
        elif key in called and key in parameters:
            models[key] = ModelInfo(key, None, None, None, "call+parameters")
    # A submodule path of a model built here (``self.model.lstm.eval()``) is a model too.
    for key in sorted(mode_receivers - models.keys() - not_models):
        if any(key.startswith(m + ".") for m in models):
            models[key] = ModelInfo(key, None, None, None, "submodule")
    _propagate(tree, index, models)
    return models


def _propagate(tree: ast.Module, index: FileIndex, models: dict[str, ModelInfo]) -> None:
    """Parameters that receive a model, and attributes assigned one, are models."""
    scopes: list[tuple[list[ast.stmt], FuncNode | None]] = [(tree.body, None)]
    scopes += [(fn.body, fn) for fn in index.functions]
    for _ in range(4):
        added = False
        for body, scope in scopes:
            for node in walk_scope(body):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target, value = dotted(node.targets[0]), dotted(node.value)
                    if target and value in models and target not in models:
                        added = True
                        models[target] = _derived(target, models[value])
                elif isinstance(node, ast.Call):
                    res = index.resolve(node, scope)
                    if res is None:
                        continue
                    for param, arg in res.args.items():
                        if arg in models and (param not in models or _weak(models[param])):
                            added = True
                            models[param] = _derived(param, models[arg])
        if not added:
            return


def _weak(info: ModelInfo) -> bool:
    return info.evidence in ("mode+call", "call+parameters")


def _derived(key: str, src: ModelInfo) -> ModelInfo:
    return ModelInfo(key, src.built_at, src.class_name, src.has_rnn, "argument")
