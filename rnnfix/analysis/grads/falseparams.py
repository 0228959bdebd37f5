"""Parameters of a local function that are ``False`` at one call of it.

PyTorch-GAN's ``cluster_gan/clustergan.py`` samples its latents with
``def sample_z(..., req_grad=False)`` and ``Variable(t, requires_grad=req_grad)``;
an evaluation loop that calls ``sample_z(shape=n_c, fix_class=idx)`` makes
tensors that do not require grad (TORCH_FACTS: ``requires_grad`` defaults to
False), so the helper does not need gradients *at that call*. A parameter
counts only when the call leaves it to a literal ``False`` default or passes a
literal ``False``, and the body never rebinds it; anything else (``*args``,
``**kwargs``, a decorator that may change the signature, a passed name) keeps
the old reading that the helper may need gradients.
"""

from __future__ import annotations

import ast

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _is_false(expr: ast.AST | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is False


def false_parameters(
    func: Function, call: ast.Call, known_false: frozenset[str] = frozenset()
) -> frozenset[str]:
    """Names of ``func``'s parameters known to be ``False`` at ``call``.
    ``known_false``: the caller's own names known to be ``False`` there (its
    parameters at its own call), so a flag handed down a chain of helpers
    stays known (ncrfpp's ``batchify_with_label(..., if_train=False)``
    passing ``if_train`` on to ``batchify_sequence_labeling_with_label``)."""
    if func.decorator_list or any(isinstance(a, ast.Starred) for a in call.args):
        return frozenset()
    if any(k.arg is None for k in call.keywords):
        return frozenset()
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    # ``self.method(...)`` is bound: the receiver fills the first parameter.
    if isinstance(call.func, ast.Attribute) and positional:
        positional = positional[1:]
    pos_defaults: list[ast.expr | None] = [None] * (
        len([*args.posonlyargs, *args.args]) - len(args.defaults)
    ) + list(args.defaults)
    if isinstance(call.func, ast.Attribute) and pos_defaults:
        pos_defaults = pos_defaults[1:]
    passed = {k.arg: k.value for k in call.keywords if k.arg is not None}
    false: set[str] = set()
    params = [
        *zip(positional, pos_defaults, strict=True),
        *zip(args.kwonlyargs, args.kw_defaults, strict=True),
    ]
    for i, (param, default) in enumerate(params):
        if i < len(positional) and i < len(call.args):
            value: ast.AST | None = call.args[i]
        else:
            value = passed.get(param.arg, default)
        if _is_false(value) or (isinstance(value, ast.Name) and value.id in known_false):
            false.add(param.arg)
    return frozenset(false - _rebound(func))


def _rebound(func: Function) -> set[str]:
    # ``ast.walk``, not ``walk_local``: a nested function's ``nonlocal`` rebinds too.
    names: set[str] = set()
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names.update(n.names)
    return names
