"""Where trained weights are loaded into a model, read from the source.

A *load* puts weights into an object that is then used as a model:

- ``model.load_state_dict(state)`` (not ``target.load_state_dict(net.state_dict())``,
  which copies another model's weights: an RL target network);
- ``model = torch.load(path)`` of a whole module, also out of a checkpoint
  dict (``ckpt = torch.load(path); model = ckpt["model"].float()``);
- ``model = Net.load_from_checkpoint(path)`` (Lightning returns the module in
  train mode; its docs call ``eval()`` after it);
- ``model = load_model(path)``: a function that returns a model it loaded
  without switching its mode (``returns_loaded_model``), of this file or of
  another file of the run (``ModuleSummary.loaders``).

Left out on purpose: ``torch.jit.load`` / ``torch.export.load`` (TorchScript
and exported programs carry their own mode), ``from_pretrained`` (transformers
returns models in eval mode). Whether the result is a module at all is
decided by its use: a value that is never called is a state dict.

Used by RNF006 (``rnnfix.analysis.inference``) and by the project index,
which records the loader functions of every file.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from rnnfix.analysis.flow import chained_mode
from rnnfix.analysis.names import dotted
from rnnfix.analysis.syntax import FUNCTIONS, walk_local
from rnnfix.analysis.torchapi import strip_self_returning

Qualname = Callable[[ast.expr], "str | None"]

_TORCH_LOADS = frozenset({"torch.load", "torch.serialization.load"})


def unwrap_value(value: ast.AST) -> tuple[ast.AST, bool]:
    """``torch.load(p)["model"].float().to(dev)`` -> (``torch.load(p)``, True):
    the value under self-returning methods, subscripts and ``.get(...)``;
    the flag says whether something was taken out of it (a checkpoint dict)."""
    picked = False
    while True:
        stripped = strip_self_returning(value)
        if stripped is not value:
            value = stripped
        elif isinstance(value, ast.Subscript):
            value, picked = value.value, True
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "get"
            and value.args
        ):
            value, picked = value.func.value, True
        else:
            return value, picked


def is_torch_load(value: ast.AST, qualname: Qualname) -> bool:
    if not isinstance(value, ast.Call):
        return False
    qual = qualname(value.func)
    # ``torch`` from a star import (``from model import *``) has no qualname.
    return qual in _TORCH_LOADS or (qual is None and dotted(value.func) == "torch.load")


def is_checkpoint_load(value: ast.AST) -> bool:
    """``Net.load_from_checkpoint(path)`` (Lightning)."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "load_from_checkpoint"
    )


def state_dict_receiver(call: ast.Call) -> str | None:
    """``model.load_state_dict(state)`` -> ``model`` (``model.module`` -> ``model``:
    a data-parallel wrapper's only child); None for any other call and for a
    copy of another object's weights (``target.load_state_dict(net.state_dict())``)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "load_state_dict" and call.args):
        return None
    arg = call.args[0]
    if (
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.attr == "state_dict"
    ):
        return None
    receiver = dotted(func.value)
    if receiver is not None and receiver.endswith(".module"):
        receiver = receiver[: -len(".module")]
    return receiver


NOT_A_LOADER = 0
LOADER = 1  # returns a loaded object of a class it does not show
MODULE_LOADER = 2  # ... built from an ``nn.Module`` class (``is_module`` says so)


def returns_loaded_model(
    func: ast.AST, qualname: Qualname, is_module: Callable[[ast.expr], bool] = lambda _: False
) -> int:
    """Whether ``func`` returns an object it loaded weights into (or loaded
    whole) and never switched the mode of: ``def load_model(p): m = Net();
    m.load_state_dict(torch.load(p)); return m`` (``MODULE_LOADER`` when
    ``is_module`` says what it built ``m`` from is a module class). A helper
    that calls ``m.eval()`` (or ``train()``) anywhere manages the mode itself."""
    if not isinstance(func, FUNCTIONS):
        return NOT_A_LOADER
    built: set[str] = set()
    bindings: dict[str, int] = {}
    loaded: set[str] = set()
    switched: set[str] = set()
    checkpoints: set[str] = set()
    returned: list[ast.expr] = []
    for n in walk_local(func):
        if isinstance(n, ast.Call):
            receiver = state_dict_receiver(n)
            if receiver is not None:
                loaded.add(receiver)
            elif (
                isinstance(n.func, ast.Attribute)
                and n.func.attr in ("eval", "train")
                and (text := dotted(strip_self_returning(n.func.value))) is not None
            ):
                switched.add(text)
        elif isinstance(n, ast.Assign) and len(n.targets) == 1:
            target = dotted(n.targets[0])
            if target is None:
                continue
            if dotted(unwrap_value(n.value)[0]) != target:  # ``m = m.to(dev)`` keeps it
                bindings[target] = bindings.get(target, 0) + 1
            if chained_mode(n.value) is not None:
                switched.add(target)
                continue
            if is_module(n.value):
                built.add(target)
            inner, picked = unwrap_value(n.value)
            if is_torch_load(inner, qualname) and not picked:
                checkpoints.add(target)
                loaded.add(target)  # a whole module, if it is used as one
            elif is_checkpoint_load(inner) or (
                picked and isinstance(inner, ast.Name) and inner.id in checkpoints
            ):
                loaded.add(target)
            elif picked and is_torch_load(inner, qualname):
                loaded.add(target)
        elif isinstance(n, ast.Return) and n.value is not None:
            returned.append(n.value)
    if not returned or not loaded:
        return NOT_A_LOADER
    texts: set[str] = set()
    for value in returned:
        if chained_mode(value) is not None:
            return NOT_A_LOADER  # ``return model.eval()``
        text = dotted(strip_self_returning(value))
        if text is None or text not in loaded or text in switched:
            return NOT_A_LOADER
        if bindings.get(text, 0) > 1:
            # Bound on several paths (``model = attempt_load(p)`` on one, a
            # loaded ``DetectionModel`` on another): what it returns may come
            # from code that sets the mode itself.
            return NOT_A_LOADER
        texts.add(text)
    return MODULE_LOADER if texts <= built else LOADER
