"""Calls that hand a model back as it was: accelerate's ``Accelerator.prepare``,
``unwrap_model`` and peft's ``get_peft_model``.

``model, optimizer, loader = accelerator.prepare(model, optimizer, loader)``
returns its arguments in order, a model wrapped for the device setup (DDP,
FSDP, or the model itself); ``Module.train``/``eval`` reach through those
wrappers, and ``prepare`` switches no mode. ``unwrap_model(model)`` (a method
of ``Accelerator``, or the one-line local helper the Hugging Face example
scripts define around it) returns the wrapped module, and ``get_peft_model(model,
config)`` a wrapper whose forward runs ``model``'s modules in the mode they
have. So a model bound again to its own name by one of them keeps the mode it
had: the flow must not forget that a ``from_pretrained`` model is in eval
(issue 24.6), nor that a built one trains; and the optimizer a ``prepare``
hands back updates the parameters it was built over.

The one reading of these calls, shared by the mode flow and the optimizer
index. Any receiver counts (``self.accelerator`` of a trainer class, an
accelerator passed as a parameter, OpenRLHF's ``strategy.prepare``): the name
and the positions are what is read.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from rnnfix.analysis.syntax.names import dotted

# ``unwrap_model(model)`` and the local ``_unwrap_model`` helpers around it:
# the module inside the wrapper, the same object the flow tracks as ``model``.
UNWRAPPERS = frozenset({"unwrap_model", "_unwrap_model"})
_PASS_BACK = frozenset({"prepare", "get_peft_model", *UNWRAPPERS})


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def unwrapped(value: ast.AST) -> ast.expr | None:
    """The model of ``X.unwrap_model(model)`` / ``_unwrap_model(model)``: the
    module a mode call on the result switches (``unwrap_model(model).eval()``
    is ``model``'s eval for every layer the forward runs)."""
    if (
        isinstance(value, ast.Call)
        and _name(value.func) in UNWRAPPERS
        and len(value.args) == 1
        and not isinstance(value.args[0], ast.Starred)
    ):
        return value.args[0]
    return None


def passed_back(
    value: ast.expr,
    key: str,
    canonical: Callable[[str], str],
    unpacked: tuple[list[ast.expr], ast.expr] | None = None,
) -> bool:
    """What ``value`` binds (with ``unpacked``, ``(elements, element)``: the
    element of a tuple target) is the very object ``key`` was before: ``model =
    accelerator.prepare(model)``, element ``i`` of ``a, b =
    accelerator.prepare(a, b)``, ``model, *rest = accelerator.prepare(model,
    opt, loader)`` (elements after the star count from the end), ``model =
    unwrap_model(model)``. ``canonical`` maps the argument's text to the path
    the caller tracks (must-aliases resolved)."""
    if not isinstance(value, ast.Call) or not value.args:
        return False
    name = _name(value.func)
    args = value.args
    if name not in _PASS_BACK or any(isinstance(a, ast.Starred) for a in args):
        return False
    if unpacked is not None:
        elts, elt = unpacked
        if name != "prepare" or isinstance(elt, ast.Starred):
            return False
        index = _argument_index(elts, elt, len(args))
        if index is None:
            return False
        arg = args[index]
    elif name != "prepare" or len(args) == 1:
        arg = args[0]  # the model is the first argument
    else:
        return False
    text = dotted(arg)
    return text is not None and canonical(text) == key


def _argument_index(elts: list[ast.expr], elt: ast.expr, count: int) -> int | None:
    """The position among ``count`` returned values that unpacking binds to
    ``elt``; None when the shapes do not match."""
    position = next((i for i, e in enumerate(elts) if e is elt), None)
    if position is None:
        return None
    stars = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
    if not stars:
        return position if len(elts) == count else None
    if len(stars) > 1 or count < len(elts) - 1:
        return None  # not valid Python, or a ValueError at run time
    star = stars[0]
    return position if position < star else count - (len(elts) - position)
