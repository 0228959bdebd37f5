"""The mode a loader of the file hands back: ``def load_model(path): model =
Net(); model.load_state_dict(...); model.eval(); return model`` returns its
model in eval mode, and ``get_generator(ckpt)`` that ends ``generator.train();
return generator`` in train mode. The caller's ``model = load_model(p)`` (or
``fields, model, opt = load_test_model(...)`` for a tuple) then holds a model
in that mode, as if it had switched it itself; without this the mode was
unknown there, and a fine-tuning loop after an eval loader (RNF001) or a
backward through it (RNF004) went unseen.

Read from the loader's syntax alone, and only when it is plain: every
``return`` gives back the same local (or a tuple of names with the model at
the same place), and the mode calls on that local are statements of the
function's own body, outside any branch or loop; the last one is the mode.
"""

from __future__ import annotations

import ast
import weakref
from typing import TYPE_CHECKING

from rnnfix.analysis.syntax.walks import FUNCTIONS, scope_of, walk_local
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.mode import Mode

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView

Func = ast.FunctionDef | ast.AsyncFunctionDef
# Position in a returned tuple (None: the value returned whole) -> the
# switch that sets the mode it is returned in.
ReturnedSwitches = dict[int | None, ast.Call]

_CACHE: weakref.WeakKeyDictionary[ast.AST, ReturnedSwitches] = weakref.WeakKeyDictionary()


def returned_switches(func: ast.AST) -> ReturnedSwitches:
    if not isinstance(func, FUNCTIONS):
        return {}
    found = _CACHE.get(func)
    if found is None:
        found = _CACHE[func] = _returned_switches(func)
    return found


def loader_switches(flow: FlowView, value: ast.AST) -> ReturnedSwitches:
    """``returned_switches`` of the loader of this file that ``value`` calls
    (empty when it calls none)."""
    if not isinstance(value, ast.Call):
        return {}
    scope = scope_of(flow.parents, value)
    res = flow.resolve(value, scope if isinstance(scope, FUNCTIONS) else None)
    return returned_switches(res.callee.node) if res is not None else {}


def switch_mode(call: ast.Call) -> Mode | None:
    switch = module_mode_switch(call)
    return switch.mode if switch is not None else None


def _returned_switches(func: Func) -> ReturnedSwitches:
    shapes: set[tuple[str | None, ...]] = set()
    for node in walk_local(func):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return {}
        if not isinstance(node, ast.Return):
            continue
        value = node.value
        if isinstance(value, ast.Name):
            shapes.add((value.id,))
        elif isinstance(value, ast.Tuple) and not any(
            isinstance(e, ast.Starred) for e in value.elts
        ):
            shapes.add(tuple(e.id if isinstance(e, ast.Name) else None for e in value.elts))
        else:
            return {}
    if len(shapes) != 1:
        return {}
    shape = shapes.pop()
    whole = len(shape) == 1 and not _returns_tuple(func)
    out: ReturnedSwitches = {}
    for position, name in enumerate(shape):
        if name is None:
            continue
        switch = _own_switch(func, name)
        if switch is not None:
            out[None if whole else position] = switch
    return out


def _returns_tuple(func: Func) -> bool:
    return any(
        isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) for n in walk_local(func)
    )


def _own_switch(func: Func, name: str) -> ast.Call | None:
    """The last plain ``name.train()``/``name.eval()`` statement of
    ``func``'s own body; None when there is none, or when ``name`` is
    switched anywhere else in the function (a branch, a loop, a chain)."""
    top: list[ast.Call] = []
    for s in func.body:
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            top.append(s.value)
    for n in walk_local(func):
        if not isinstance(n, ast.Call):
            continue
        switch = module_mode_switch(n)
        if switch is None or switch.target != name:
            continue
        if not any(n is c for c in top) or switch.mode not in (Mode.TRAIN, Mode.EVAL):
            return None
        if n.args or n.keywords:
            if not (
                switch.mode is Mode.TRAIN
                and len(n.args) == 1
                and isinstance(n.args[0], ast.Constant)
                and n.args[0].value is True
                and not n.keywords
            ):
                return None
    last: ast.Call | None = None
    for call in top:
        switch = module_mode_switch(call)
        if switch is not None and switch.target == name:
            last = call
    return last
