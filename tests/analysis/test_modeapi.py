"""Which parameters hold functions (``rnnfix.analysis.modes.modeapi``): calling
one is no forward, whatever the rest of the file makes of its name."""

from __future__ import annotations

import ast

from rnnfix.analysis.modes.modeapi import callable_parameters, function_parameters

SOURCE = """
import functools
from typing import Any, Callable, Optional


def standard_test(self: Any, fn: Callable[..., Any], kwargs, model) -> None:
    def dummy() -> None:
        fn(self, **kwargs)
        model(kwargs)


def quoted(fn: "typing.Callable[[int], int]", hook: Optional[Callable] = None):
    return fn(1)


def slow_test(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        fn(*args, **kwargs)

    return wrapper
"""


def _functions() -> tuple[dict[ast.AST, ast.AST], dict[str, ast.FunctionDef]]:
    tree = ast.parse(SOURCE)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    funcs = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    return parents, funcs


def test_annotated_callables_are_functions() -> None:
    _, funcs = _functions()
    assert callable_parameters(funcs["standard_test"]) == {"fn"}
    assert callable_parameters(funcs["quoted"]) == {"fn"}  # Optional[...] is not read


def test_enclosing_functions_and_wraps() -> None:
    parents, funcs = _functions()
    assert function_parameters(parents, funcs["dummy"]) == {"fn"}
    assert function_parameters(parents, funcs["wrapper"]) == {"fn"}
    assert "model" not in function_parameters(parents, funcs["dummy"])


SETTERS = """
import torch
from torch import nn


class Pair(object):
    def __init__(self):
        self.enc = nn.GRU(4, 4)
        self.dec = nn.GRU(4, 4)

    def train_start(self):
        self.enc.train()
        self.dec.train()

    def warm_start(self, x):
        self.enc.train()
        return self.enc(x)

    def maybe_train(self, flag):
        if flag:
            self.enc.train()


def run(x):
    pair = Pair()
    pair.train_start()
    pair.warm_start(x)
    pair.maybe_train(True)
"""


def test_setter_call_needs_a_pure_mode_setter() -> None:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.modes.modeapi import setter_call
    from rnnfix.analysis.torch.mode import Mode

    tree = ast.parse(SETTERS)
    flow = FileContext(source=SETTERS, tree=tree).facts.modes
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    calls = [s.value for s in run.body if isinstance(s, ast.Expr)]
    assert isinstance(calls[0], ast.Call)
    # sets train mode on every path, runs nothing: a setter
    assert setter_call(flow, calls[0], run) == {"pair.enc": Mode.TRAIN, "pair.dec": Mode.TRAIN}
    assert setter_call(flow, calls[1], run) is None  # runs a forward: not a mode setter
    assert setter_call(flow, calls[2], run) is None  # arguments, and only on some paths
