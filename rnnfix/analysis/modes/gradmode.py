"""Grad mode for the mode flow: whether autograd records at a node of the file.

False under ``torch.no_grad()`` / ``inference_mode()`` /
``set_grad_enabled(False)`` (a ``with`` block or a decorator of the node's own
scope), else the mode every caller of the scope in this file runs it in (the
same value at every call site), True at module level, None where unknown.
``ModeFlow.grad_enabled`` asks it; the summaries (``rnnfix.analysis.modes.summary``)
ask for a scope's own ``with`` blocks and decorators only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rnnfix.analysis.grads.gradctx import grad_context
from rnnfix.analysis.syntax.scopes import FuncNode

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView


class GradModes:
    """The grad mode questions of one file's flow, memoised per scope."""

    def __init__(self, flow: FlowView) -> None:
        self.flow = flow
        self._scope_grads: dict[FuncNode, bool | None] = {}

    def context_grad(self, expr: ast.expr) -> bool | None:
        """True/False for a grad-mode context manager or decorator; None otherwise."""
        grad = grad_context(self.flow.imports, expr)
        return {"on": True, "off": False}.get(grad) if grad is not None else None

    def decorator_grad(self, fn: FuncNode) -> bool | None:
        for dec in fn.decorator_list:
            value = self.context_grad(dec)
            if value is not None:
                return value
        return None

    def local_grad(self, node: ast.AST) -> bool | None:
        """Grad mode set by ``with`` blocks and decorators of ``node``'s own scope."""
        child, parent = node, self.flow.parents.get(node)
        while parent is not None:
            if isinstance(parent, (ast.With, ast.AsyncWith)) and any(
                child is s for s in parent.body
            ):
                for item in reversed(parent.items):
                    value = self.context_grad(item.context_expr)
                    if value is not None:
                        return value
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return self.decorator_grad(parent)
            if isinstance(parent, ast.Lambda):
                return None
            child, parent = parent, self.flow.parents.get(parent)
        return True  # module level: grad is on by default

    def grad(self, node: ast.AST) -> bool | None:
        local = self.local_grad(node)
        if local is not None:
            return local
        scope = self.flow.scope_of(node)
        return None if scope is None else self._scope_grad(scope)

    def _scope_grad(self, root: FuncNode) -> bool | None:
        """Grad mode every caller of ``root`` runs it in: the same value at
        every call site (through callers' callers where a site's own code does
        not say), None where they differ, a caller is unknown or the callers
        form a cycle. Iterative and memoised: call chains may be thousands of
        functions long, and a per-path walk is exponential in a diamond."""
        memo = self._scope_grads
        on_stack: set[FuncNode] = set()
        stack: list[tuple[FuncNode, Iterator[ast.Call], set[bool | None]]] = []

        def push(scope: FuncNode) -> None:
            on_stack.add(scope)
            sites = self.flow.call_sites(scope)
            stack.append((scope, iter([call for _, call, _ in sites]), set() if sites else {None}))

        if root not in memo:
            push(root)
        while stack:
            scope, pending, values = stack[-1]
            for call in pending:
                local = self.local_grad(call)
                if local is not None:
                    values.add(local)
                    continue
                caller = self.flow.scope_of(call)
                if caller is None or caller in on_stack:
                    values.add(None)
                elif caller in memo:
                    values.add(memo[caller])
                else:
                    push(caller)
                    break
            else:
                stack.pop()
                on_stack.discard(scope)
                memo[scope] = values.pop() if len(values) == 1 else None
                if stack:
                    stack[-1][2].add(memo[scope])
        return memo[root]
