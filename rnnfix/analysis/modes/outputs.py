"""Whether what a statement computes with a model reaches an *output*: is
printed, logged, written to a file, saved or plotted.

This is the behaviour that makes a forward after training an evaluation
whatever the code is called (issue 36.3: "its outputs feed metrics,
predictions, scores, samples or files"): nanoGPT's lecture script ends with
``print(decode(m.generate(context, max_new_tokens=500)[0].tolist()))``, a
char-RNN prints the characters it samples after each epoch. A forward whose
result goes nowhere a person reads (BatchNorm statistics recomputed after
training, features handed to other code) is not one.

A plain local taint, in source order over the statements given: a name
becomes tainted when a statement binds it from an expression that runs a
source call or reads a tainted name (``out = model(x)``, ``idx = out.argmax()``,
``samples.append(idx)`` taints ``samples``); an output is a call named like a
sink whose arguments do the same. Two passes, so a loop's carried names count.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

# Calls whose arguments a person reads, by their last name: printing,
# logging, writing, saving and plotting.
SINKS = frozenset(
    {"print", "pprint", "write", "writelines", "save", "save_image", "imsave", "imwrite",
     "savefig", "savetxt", "dump", "log", "info", "debug", "warning", "add_scalar",
     "add_scalars", "add_image", "add_images", "add_text", "add_figure", "add_audio",
     "log_metrics", "imshow", "plot", "scatter", "display"}
)  # fmt: skip
# A call of an output in a file's text (``regiontext``, the summaries).
SINK_CALL = re.compile(r"\b(?:" + "|".join(sorted(SINKS)) + r")[\s\\]*\(")
# Methods that put an argument into their receiver (a list of samples).
_COLLECTS = frozenset({"append", "extend", "add", "insert", "update", "put"})


def _name_of(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _targets(stmt: ast.AST) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return [stmt.target]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, ast.NamedExpr):
        return [stmt.target]
    return []


def _bound_names(target: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def feeds_output(stmts: list[ast.stmt], is_source: Callable[[ast.Call], bool]) -> bool:
    """Whether a value computed by a source call in ``stmts`` (in source
    order; nested functions and classes are not entered) reaches a sink."""
    tainted: set[str] = set()

    def reads(expr: ast.AST | None) -> bool:
        if expr is None or _metadata(expr):
            return False
        if isinstance(expr, ast.Name):
            return expr.id in tainted
        if isinstance(expr, ast.Call) and is_source(expr):
            return True
        return any(reads(c) for c in ast.iter_child_nodes(expr))

    nodes = [n for s in stmts if not isinstance(s, _ELSEWHERE) for n in _local_walk(s)]
    for _ in range(2):
        for n in nodes:
            if isinstance(n, ast.Call):
                name = _name_of(n.func)
                args = [*n.args, *(k.value for k in n.keywords)]
                if name in SINKS and any(reads(a) for a in args):
                    return True
                if (
                    name in _COLLECTS
                    and isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Name)
                    and any(reads(a) for a in args)
                ):
                    tainted.add(n.func.value.id)
                continue
            targets = _targets(n)
            if not targets:
                continue
            value = n.iter if isinstance(n, (ast.For, ast.AsyncFor)) else getattr(n, "value", None)
            if reads(value):
                for t in targets:
                    tainted |= _bound_names(t)
    return False


# What a tensor is, not what it holds: a shape printed while debugging is
# no result a person reads.
_METADATA_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad"})
_METADATA_METHODS = frozenset({"size", "dim", "numel", "type"})


def _metadata(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Attribute):
        return expr.attr in _METADATA_ATTRS
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in _METADATA_METHODS
    )


# Code that runs elsewhere, at another time.
_ELSEWHERE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _local_walk(node: ast.AST) -> list[ast.AST]:
    """``node`` and what is under it in source order, not entering nested
    functions, lambdas or classes (they run elsewhere)."""
    out: list[ast.AST] = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append(n)
        children = [c for c in ast.iter_child_nodes(n) if not isinstance(c, _ELSEWHERE)]
        stack.extend(reversed(children))
    return out
