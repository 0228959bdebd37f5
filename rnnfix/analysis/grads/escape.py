"""Can what an evaluation region computes reach a backward that rnnfix does
not see? (RNF003's question, RNF006's too.)

``no_grad`` detaches everything computed under it. Inside one function the
value flow (``rnnfix.analysis.grads.valueflow``) finds a later ``backward``; this
module finds the ways a result *leaves* the function, to code that may
differentiate it: returned or yielded, stored on ``self``, on a parameter or
a global (or in a container held by one), handed to a callback. A PPO
policy's ``evaluate_actions`` returns the log-probabilities its caller's loss
is built from: its name says "evaluate", its results say "training".

The taint is flow-insensitive and errs towards "carries a gradient": only
operations that certainly drop the graph (``.item()``, ``.detach()``,
``argmax``, comparisons, ``float(...)``, ``x.shape``, any ``numpy`` function)
stop it; so does
reading a name whose last binding before the read, in the same block and
with nothing nested between binding it, is such a value (``loss =
loss.detach().cpu()`` then ``total += loss``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import FUNCTIONS, Scope, parameters, walk_local

# Methods whose result holds no autograd graph.
_DETACHING_METHODS = frozenset(
    {"item", "tolist", "numpy", "detach", "detach_", "argmax", "argmin", "argsort", "size",
     "dim", "numel", "eq", "ne", "lt", "gt", "le", "ge", "nonzero", "long", "int", "bool",
     "byte", "isnan", "isinf", "isfinite", "data_ptr", "nelement", "stride", "tobytes"}
)  # fmt: skip
_DETACHING_BUILTINS = frozenset(
    {"float", "int", "bool", "len", "str", "repr", "round", "print", "isinstance", "format",
     "hash", "id", "type"}
)  # fmt: skip
_DETACHING_TORCH = frozenset(
    {"torch.argmax", "torch.argmin", "torch.argsort", "torch.eq", "torch.ne", "torch.lt",
     "torch.gt", "torch.le", "torch.ge", "torch.isnan", "torch.isinf", "torch.isfinite",
     "torch.numel", "torch.is_tensor", "numpy.array", "numpy.asarray"}
)  # fmt: skip
# Attributes without a graph: metadata, and ``.data``/``.grad`` (detached).
_METADATA = frozenset(
    {"shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "is_leaf", "layout",
     "data", "grad"}
)  # fmt: skip
_MUTATORS = frozenset(
    {"append", "extend", "insert", "update", "add", "setdefault", "put", "push", "put_nowait",
     "appendleft", "__setitem__", "copy_"}
)  # fmt: skip
_CALLBACK_WORDS = ("callback", "hook")


@dataclass(frozen=True)
class Escape:
    node: ast.AST
    how: str  # "returned", "yielded", "stored on `self.x`", "passed to callback `cb`"


def escapes(
    scope: Scope,
    region: list[ast.stmt],
    is_forward: Callable[[ast.Call], bool],
    is_model: Callable[[str], bool],
    qualname: Callable[[ast.expr], str | None],
    helpers: Mapping[str, ast.FunctionDef] | None = None,
    detached: Callable[[ast.expr], bool] | None = None,
) -> list[Escape]:
    """Where a value computed by a forward in ``region`` (statements of
    ``scope``) leaves ``scope``. Nothing leaves module-level code: a script's
    globals are the script's. ``helpers``: the module-level functions of the
    file, by name: a call of one whose every ``return`` drops the graph of
    whatever it is given (``score(y, out)`` returning an ``.item()`` count
    over ``len(y)``) carries nothing. ``detached``: the same question for a
    function another file of the run defines (``ProjectView.returns_detached``:
    SimGNN's ``calculate_loss`` of ``utils.py``, a ``math.log`` of its inputs)."""
    if not isinstance(scope, FUNCTIONS):
        return []
    taint = _Taint(scope, region, is_forward, is_model, qualname, helpers or {})
    taint.detached = detached
    taint.run()
    return list(taint.exits())


def returns_detached(
    func: ast.FunctionDef,
    qualname: Callable[[ast.expr], str | None],
    helpers: Mapping[str, ast.FunctionDef],
    depth: int = 0,
) -> bool:
    """Every ``return`` of ``func`` gives back a value without a graph, whatever
    its parameters carry: its parameters are tainted and no return value
    carries (``escape``'s taint), and it stores nothing outside itself."""
    if depth > 2 or any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk_local(func)):
        return False
    returns = [n for n in walk_local(func) if isinstance(n, ast.Return)]
    if not returns or any(r.value is None for r in returns):
        return False
    taint = _Taint(func, [], lambda _c: False, lambda _n: False, qualname, helpers, depth + 1)
    taint.tainted = set(taint.params)
    taint.run()
    return not any(taint.carries(r.value) for r in returns)


class _Taint:
    def __init__(
        self,
        scope: ast.FunctionDef | ast.AsyncFunctionDef,
        region: list[ast.stmt],
        is_forward: Callable[[ast.Call], bool],
        is_model: Callable[[str], bool],
        qualname: Callable[[ast.expr], str | None],
        helpers: Mapping[str, ast.FunctionDef] | None = None,
        depth: int = 0,
    ) -> None:
        self.scope = scope
        self.helpers = helpers or {}
        self.depth = depth
        self._detached: dict[str, bool] = {}
        # ``escapes``' question for functions of other files (None: not asked).
        self.detached: Callable[[ast.expr], bool] | None = None
        self.is_forward = is_forward
        self.is_model = is_model
        self.qualname = qualname
        self.params = set(parameters(scope)) | {
            a.arg for a in (scope.args.vararg, scope.args.kwarg) if a is not None
        }
        self.globals = {
            n
            for s in walk_local(scope)
            if isinstance(s, (ast.Global, ast.Nonlocal))
            for n in s.names
        }
        # Names the function binds: any other name it reads is a module
        # global (or a closure's), which outlives the call like ``self``.
        self.locals = self.params | {
            n.id
            for n in walk_local(scope)
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
        }
        # Forwards count only where the region runs them; nested functions
        # and lambdas defined in it run the model when they are called.
        self.seeds = {id(n) for n in _walk_with_nested(region) if isinstance(n, ast.Call)}
        self.tainted: set[str] = set()
        self.nodes = list(_walk_with_nested(scope.body))
        # The function itself too: a statement of its own body has it as parent
        # (``_rebound_clean`` finds the block a read's statement sits in).
        self.parents = {c: n for n in (scope, *self.nodes) for c in ast.iter_child_nodes(n)}

    # --- does an expression carry a graph from the region? -----------------
    def carries(self, expr: ast.AST | None) -> bool:
        if expr is None or isinstance(expr, (ast.Constant, ast.Compare, ast.JoinedStr)):
            return False
        if isinstance(expr, ast.Name):
            return expr.id in self.tainted and not self._rebound_clean(expr)
        if isinstance(expr, ast.Attribute):
            if expr.attr in _METADATA:
                return False
            text = dotted(expr)
            if text is not None and text in self.tainted:
                return True
            return self.carries(expr.value)
        if isinstance(expr, (ast.Lambda, *FUNCTIONS)):
            return self._runs_model(expr)
        if isinstance(expr, ast.Call):
            return self._call_carries(expr)
        return any(self.carries(c) for c in ast.iter_child_nodes(expr) if isinstance(c, ast.expr))

    def _rebound_clean(self, name: ast.Name) -> bool:
        """The binding ``name`` reads is, for certain, a value without a graph:
        the last statement before its own in the same block that binds the
        name is ``name = <a value that carries nothing>`` (facenet-pytorch's
        ``loss_batch = loss_batch.detach().cpu()`` before ``loss +=
        loss_batch``), and no statement between binds it in a nested block.
        Straight-line code only: a binding under an ``if`` or a loop between
        the two is "unknown", and the name stays tainted."""
        child: ast.AST = name
        cur = self.parents.get(name)
        while cur is not None and not isinstance(child, ast.stmt):
            child, cur = cur, self.parents.get(cur)
        if cur is None or not isinstance(child, ast.stmt):
            return False
        block = next((b for b in _blocks(cur) if any(child is st for st in b)), None)
        if block is None:
            return False
        for stmt in reversed(block[: next(i for i, st in enumerate(block) if st is child)]):
            if _mutates(stmt, name.id):
                return False  # ``outs = []`` then ``outs.append(model(x))``: it holds them
            if name.id not in _bound_names(stmt):
                continue
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == name.id
            ):
                return not self.carries(stmt.value)
            return False
        return False

    def _call_carries(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _DETACHING_METHODS:
            return False
        if isinstance(func, ast.Name) and func.id in _DETACHING_BUILTINS:
            return False
        qual = self.qualname(func) or ""
        if qual in _DETACHING_TORCH or qual.startswith(("numpy.", "math.")):
            # numpy turns a tensor into an array through ``__array__``, which
            # refuses one that requires grad, and ``math`` into a float: what
            # they return holds no graph.
            return False
        if isinstance(func, ast.Name) and self._detaching_helper(func.id):
            return False
        if self.detached is not None and self._imported(func) and self.detached(func):
            return False
        if id(call) in self.seeds and self.is_forward(call):
            return True
        args = [*call.args, *(k.value for k in call.keywords)]
        if id(call) in self.seeds and any(
            (text := dotted(_unstar(a))) is not None and self.is_model(text) for a in args
        ):
            return True  # the model handed to a helper that presumably runs it
        receiver = func.value if isinstance(func, ast.Attribute) else None
        return any(self.carries(a) for a in args) or self.carries(receiver)

    def _imported(self, func: ast.expr) -> bool:
        """``func`` may name a function of another file: a plain or dotted
        name that this function does not bind and the file does not define."""
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        return (
            isinstance(root, ast.Name)
            and root.id not in self.locals
            and root.id not in self.helpers
            and root.id not in ("self", "cls")
        )

    def _detaching_helper(self, name: str) -> bool:
        """``name`` is a module-level function of the file (not one this
        function binds) whose returns carry no graph (``returns_detached``)."""
        if name in self.locals or name not in self.helpers:
            return False
        if name not in self._detached:
            self._detached[name] = False  # recursion: carries
            self._detached[name] = returns_detached(
                self.helpers[name], self.qualname, self.helpers, self.depth
            )
        return self._detached[name]

    def _runs_model(self, fn: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Call) and id(n) in self.seeds and self.is_forward(n)
            for n in ast.walk(fn)
        )

    # --- propagation --------------------------------------------------------
    def run(self) -> None:
        changed = True
        while changed:
            changed = False
            for node in self.nodes:
                for target in self._written_by(node):
                    if target not in self.tainted:
                        self.tainted.add(target)
                        changed = True

    def _written_by(self, node: ast.AST) -> Iterator[str]:
        """Names a statement taints: targets of an assignment whose value
        carries, a container a carrying value is added to, a nested function
        that runs the model."""
        if isinstance(node, (*FUNCTIONS,)) and node is not self.scope:
            if self._runs_model(node):
                yield node.name
            return
        for targets, value in _assignments(node):
            if self.carries(value):
                for t in targets:
                    yield from _names(t)
        mutated = _mutated(node)
        if mutated is not None and any(self.carries(a) for a in mutated[1]):
            yield from _names(mutated[0])

    # --- exits ----------------------------------------------------------------
    def exits(self) -> Iterator[Escape]:
        for node in walk_local(self.scope):
            if isinstance(node, ast.Return) and self.carries(node.value):
                yield Escape(node, "returned")
            elif isinstance(node, (ast.Yield, ast.YieldFrom)) and self.carries(node.value):
                yield Escape(node, "yielded")
            elif isinstance(node, ast.Call):
                yield from self._call_exit(node)
            for targets, value in _assignments(node):
                if not self.carries(value):
                    continue
                for t in targets:
                    holder = self._outside(t)
                    if holder is not None:
                        yield Escape(node, f"stored on `{holder}`")

    def _call_exit(self, call: ast.Call) -> Iterator[Escape]:
        mutated = _mutated(call)
        if mutated is not None and any(self.carries(a) for a in mutated[1]):
            holder = self._outside(mutated[0], mutation=True)
            if holder is not None:
                yield Escape(call, f"stored in `{holder}`")
                return
        args = [*call.args, *(k.value for k in call.keywords)]
        if not any(self.carries(a) for a in args):
            return
        func = call.func
        text = dotted(func) or ""
        last = text.rsplit(".", 1)[-1].lower()
        # A function parameter called for its effect (``on_batch(out)``) keeps
        # what it is given; one whose result is used (``loss_fn(out, y)``) is
        # applied, and its result is followed like any other value.
        statement = isinstance(self.parents.get(call), ast.Expr)
        if (statement and isinstance(func, ast.Name) and func.id in self.params) or any(
            w in last for w in _CALLBACK_WORDS
        ):
            yield Escape(call, f"passed to callback `{text}`")

    def _outside(self, target: ast.AST, mutation: bool = False) -> str | None:
        """The text of ``target`` when it lives beyond the call: a global, an
        attribute of ``self``, of a parameter or of a global (declared or only
        read: ``policy.saved_log_probs.append(...)`` on a module's model), or
        (when it is written into, not rebound) a parameter or a module-level
        name itself."""
        base = target
        while isinstance(base, ast.Subscript):
            base = base.value
            mutation = True
        if isinstance(base, ast.Name):
            if base.id in self.globals or (
                mutation and (base.id in self.params or base.id not in self.locals)
            ):
                return base.id
            return None
        text = dotted(base)
        if text is None or not isinstance(base, ast.Attribute):
            return None
        root = text.split(".")[0]
        if root in self.params or root in self.globals or root not in self.locals:
            return text
        return None


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    """The statement lists of ``node`` (``body``, ``orelse``, ``finalbody``)."""
    return [
        b for f in ("body", "orelse", "finalbody") if isinstance(b := getattr(node, f, None), list)
    ]


def _mutates(stmt: ast.stmt, name: str) -> bool:
    """``stmt`` (at any depth, not in nested functions) changes what ``name``
    holds in place: ``name.append(...)`` (``_MUTATORS``), ``name[k] = ...``,
    ``name.attr = ...``."""
    for n in walk_local(stmt):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in _MUTATORS
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == name
        ):
            return True
        if (
            isinstance(n, (ast.Subscript, ast.Attribute))
            and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name)
            and n.value.id == name
        ):
            return True
    return False


def _bound_names(stmt: ast.stmt) -> set[str]:
    """Every name ``stmt`` binds, at any depth (loop targets, ``with ...
    as``, assignments in nested blocks; not in nested functions)."""
    return {
        n.id
        for n in walk_local(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
    }


def _walk_with_nested(nodes: list[ast.stmt]) -> Iterator[ast.AST]:
    for n in nodes:
        yield from ast.walk(n)


def _unstar(expr: ast.expr) -> ast.expr:
    return expr.value if isinstance(expr, ast.Starred) else expr


def _assignments(node: ast.AST) -> list[tuple[list[ast.expr], ast.AST | None]]:
    if isinstance(node, ast.Assign):
        return [(node.targets, node.value)]
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
        return [([node.target], node.value)]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [([node.target], node.iter)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [([i.optional_vars], i.context_expr) for i in node.items if i.optional_vars]
    if isinstance(node, ast.comprehension):
        return [([node.target], node.iter)]
    return []


def _mutated(node: ast.AST) -> tuple[ast.expr, list[ast.expr]] | None:
    """``c.append(v)`` -> (c, [v])."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MUTATORS
    ):
        return node.func.value, [*node.args, *(k.value for k in node.keywords)]
    return None


def _names(target: ast.AST) -> Iterator[str]:
    """``a, self.b[i]`` -> a, self.b, self; a write into an object taints the
    object as a whole too."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for e in target.elts:
            yield from _names(e)
        return
    if isinstance(target, ast.Starred):
        yield from _names(target.value)
        return
    while isinstance(target, ast.Subscript):
        target = target.value
    text = dotted(target)
    if text is None:
        return
    parts = text.split(".")
    for i in range(len(parts), 0, -1):
        yield ".".join(parts[:i])


def no_caller_reason(tree: ast.Module, func: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """Why a function without resolved call sites may still be called, said
    truly: PPO-PyTorch's ``ActorCritic.evaluate`` is called in the same file
    as ``self.policy.evaluate(...)`` (an attribute rnnfix does not resolve),
    so "no caller in this file" would be untrue there; a call of that name
    may also be another object's method, so it is named as one that may be."""
    name = func.name
    inside = {id(n) for n in ast.walk(func)}  # its own calls (``self.encoder.inference``)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or id(node) in inside:
            continue
        called = node.func
        if (isinstance(called, ast.Attribute) and called.attr == name) or (
            isinstance(called, ast.Name) and called.id == name
        ):
            text = dotted(called) or name
            return (
                f"`{name}` has no call in this file that rnnfix resolves (`{text}(...)` "
                f"on line {node.lineno} may be one)"
            )
    return f"`{name}` has no caller in this file"
