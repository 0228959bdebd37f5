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
