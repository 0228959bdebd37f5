"""Which objects are optimizers, and whose parameters each one updates.

An optimizer is whatever is built from ``X.parameters()``: ``torch.optim.*``,
a library's ``Lamb(chain(enc.parameters(), dec.parameters()))``, a
``get_train_op(params=model.parameters())`` that returns a callable, param
groups (``[{"params": net.head.parameters()}]``). It updates exactly the
models whose ``parameters()`` it was given; one built inside a module's own
class from ``self.parameters()`` (``self.critic.optimizer``) updates that
module. Owners are written as the flow tracks them (must-aliases resolved:
``self.model = model; Adam(model.parameters())`` updates ``self.model``).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Protocol

from rnnfix.analysis.syntax.aliases import canonical
from rnnfix.analysis.syntax.names import dotted, is_below, strip_self_returning
from rnnfix.analysis.syntax.scopes import FuncNode
from rnnfix.analysis.syntax.walks import walk_subtree
from rnnfix.analysis.torch.passthrough import passed_back

if TYPE_CHECKING:
    from rnnfix.analysis.syntax.imports import ImportMap
    from rnnfix.analysis.syntax.scopes import FileIndex
    from rnnfix.analysis.torch.models import ModelInfo

# Calls that take parameters but build no optimizer (counting, clipping, copying).
_NOT_OPTIMIZERS = frozenset(
    {"sum", "len", "list", "tuple", "set", "sorted", "max", "min", "any", "all", "print",
     "iter", "next", "enumerate", "zip", "map", "dict", "copy", "deepcopy"}
)  # fmt: skip

# (class name for ``self.x`` paths, else the function or module binding it; dotted text)
Key = tuple[str | ast.AST | None, str]


# The nodes ``Optimizers._bindings`` reads a binding from.
_BINDERS = (
    ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr,
    ast.With, ast.AsyncWith,
)  # fmt: skip


class FlowNames(Protocol):
    """What ``Optimizers`` reads of the mode flow (``modes.modeflow.ModeFlow``,
    which builds it): the file, and the paths the flow tracks models under."""

    @property
    def imports(self) -> ImportMap: ...

    @property
    def index(self) -> FileIndex: ...

    def aliases(
        self, scope: FuncNode | None, params: bool = False
    ) -> dict[str, tuple[str, ast.stmt]]: ...

    def canonical(self, key: str, scope: FuncNode | None) -> str: ...

    def model_info(self, key: str) -> ModelInfo | None: ...


class Optimizers:
    def __init__(self, flow: FlowNames) -> None:
        self.flow = flow
        self.class_optimizers: dict[str, set[str]] = {}  # module class -> optimizer attrs
        # Every binding of a path: the models it updates when it is built
        # from ``parameters()``, None for anything else (then it is unknown).
        seen: dict[Key, list[set[str] | None]] = {}
        # Where each binding of a function's own name is, for the reaching one
        # at a step (``optimizer = Adam([emb])`` ... ``optimizer =
        # Adam(unet.parameters())``: each loop steps its own).
        self._sites: dict[Key, list[tuple[ast.AST, set[str] | None]]] = {}
        for scope in [None, *flow.index.functions]:
            cls = self._class_of(scope)
            for node in flow.index.scope_nodes(scope):
                if not isinstance(node, _BINDERS):
                    continue  # ``_bindings`` finds nothing in any other node
                for text, owners in self._bindings(node, scope):
                    key: Key = (cls, text) if text.startswith("self.") else (scope, text)
                    seen.setdefault(key, []).append(owners)
                    self._sites.setdefault(key, []).append((node, owners))
                    if cls is not None and text.startswith("self.") and owners == {"self"}:
                        self.class_optimizers.setdefault(cls, set()).add(text[len("self.") :])
        self._owners: dict[Key, set[str] | None] = {}
        for key, found in seen.items():
            if any(o is not None for o in found):
                known = [o for o in found if o is not None]
                complete = len(known) == len(found)
                self._owners[key] = set().union(*known) if complete else None

    def _bindings(self, node: ast.AST, scope: FuncNode | None) -> list[tuple[str, set[str] | None]]:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if isinstance(node.value, ast.Constant) and node.value.value is None:
                return []  # ``optimizer = None`` before it is built: nothing steps it
            targets: list[ast.expr] = (
                list(node.targets) if isinstance(node, ast.Assign) else [node.target]
            )
            owners = self._built_from(node.value, scope) if len(targets) == 1 else None
            return [
                (t, owners if t_node is targets[0] else None)
                for t_node, t in _texts(targets)
                if not self._prepared(node, t_node, t)
            ]
        if isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
            return [(t, None) for _, t in _texts([node.target])]
        if isinstance(node, (ast.With, ast.AsyncWith)):
            bound = [i.optional_vars for i in node.items if i.optional_vars is not None]
            return [(t, None) for _, t in _texts(bound)]
        return []

    def _prepared(self, node: ast.Assign | ast.AnnAssign, elt: ast.expr, text: str) -> bool:
        """``model, optimizer = accelerator.prepare(model, optimizer)``: the
        same optimizer comes back, over the same parameters; no new binding."""
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or node.value is None:
            return False
        target = node.targets[0]
        if isinstance(target, (ast.Tuple, ast.List)) and any(e is elt for e in target.elts):
            return passed_back(node.value, text, _same, (target.elts, elt))
        return elt is target and passed_back(node.value, text, _same)

    def _built_from(self, built: ast.expr, scope: FuncNode | None) -> set[str] | None:
        value = strip_self_returning(built)
        if not isinstance(value, ast.Call):
            return None
        qual = self.flow.imports.qualname(value.func) or dotted(value.func) or ""
        last = qual.rsplit(".", 1)[-1]
        if last in _NOT_OPTIMIZERS or qual.startswith("torch.nn.") or "sched" in qual.lower():
            return None
        params = next((k.value for k in value.keywords if k.arg == "params"), None)
        if params is None and value.args:
            params = value.args[0]
        owners = parameter_owners(params) if params is not None else None
        if owners == set() and params is not None:
            # ``Adam([image])``, ``Adam([self.log_alpha])``: tensors optimised
            # directly; an element such as ``model.weight`` is part of ``model``.
            # Also lists joined with ``+``: stylegan2-pytorch's projector
            # optimises ``Adam([latent_in] + noises)`` through a generator in
            # eval mode (GAN inversion), and nothing trains the generator.
            texts = _tensor_list_texts(params)
            if texts and self._optimiser_class(value):
                owners = texts
        if not owners:
            return None  # not built from parameters(): not known to be an optimizer
        aliases = self.flow.aliases(scope, params=True)
        return {canonical(o, aliases) for o in owners}

    def _optimiser_class(self, value: ast.Call) -> bool:
        """A torch optimizer: a list of tensors given to anything else says
        nothing about optimisation."""
        return (self.flow.imports.qualname(value.func) or "").startswith("torch.optim.")

    def _class_of(self, scope: FuncNode | None) -> str | None:
        info = self.flow.index.functions.get(scope) if scope is not None else None
        return info.cls.name if info is not None and info.cls is not None else None

    def is_optimizer(self, text: str, scope: FuncNode | None = None) -> bool:
        return self.owners_of(text, scope) is not None or any(t == text for _, t in self._owners)

    def _lookup(self, text: str, scope: FuncNode | None) -> set[str] | None:
        """Python's scoping: the function's own binding, an enclosing
        function's, the module's; a parameter on the way hides them."""
        if text.startswith("self."):
            return self._owners.get((self._class_of(scope), text))
        root = text.split(".")[0]
        fn = scope
        while fn is not None:
            found = self._owners.get((fn, text))
            if found is not None:
                return found
            info = self.flow.index.functions.get(fn)
            if info is None or root in info.params or root in info.kwonly:
                return None
            fn = info.parent
        return self._owners.get((None, text))

    def may_own(self, model: str) -> bool:
        """Some optimizer of the file may update ``model``: one built from its
        parameters, or one whose owners are not all known."""
        for owners in self._owners.values():
            if owners is None or any(is_below(model, o) for o in owners):
                return True
        return False

    def reaching_owners(self, text: str, scope: FuncNode, at: ast.AST) -> frozenset[str] | None:
        """The owners of the binding of ``text`` (a name of ``scope``'s own, not
        ``self.x``) that reaches ``at`` in straight-line code: the last one
        before it, when every binding is a statement of the function's own
        body (none in a loop or a branch, where an earlier iteration or another
        path could bring another one). None when that does not hold."""
        sites = self._sites.get((scope, text))
        if not sites or text.startswith("self.") or len(sites) < 2:
            return None
        body_ids = {id(s) for s in scope.body}
        if any(id(node) not in body_ids for node, _ in sites):
            return None
        pos = (getattr(at, "lineno", 0), getattr(at, "col_offset", 0))
        before = [
            (node, owners)
            for node, owners in sites
            if (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)) < pos
        ]
        if not before:
            return None
        owners = before[-1][1]
        if not owners:
            return None
        aliases = self.flow.aliases(scope, params=True)
        return frozenset(canonical(o, aliases) for o in owners)

    def built_over(self, model: str) -> bool:
        """Some optimizer of the file is built over ``model``'s parameters (or
        those of a part of it): known owners only, unlike ``may_own``."""
        return any(
            owners is not None and any(is_below(o, model) for o in owners)
            for owners in self._owners.values()
        )

    def owners_of(self, text: str, scope: FuncNode | None) -> frozenset[str] | None:
        """The models (as the flow tracks them in ``scope``) whose parameters
        the optimizer ``text`` updates; None when unknown."""
        found = self._lookup(text, scope)
        if found is not None:
            return frozenset(found)
        owner, _, attr = text.rpartition(".")
        if owner:
            info = self.flow.model_info(self.flow.canonical(owner, scope))
            cls = info.class_name if info is not None else None
            if cls is not None and attr in self.class_optimizers.get(cls, set()):
                return frozenset({self.flow.canonical(owner, scope)})
        return None


def _same(text: str) -> str:
    return text


def _texts(targets: list[ast.expr]) -> list[tuple[ast.expr, str]]:
    """Dotted paths a binding target writes; tuple elements one by one."""
    out: list[tuple[ast.expr, str]] = []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            out.extend(_texts(list(t.elts)))
        elif isinstance(t, ast.Starred):
            out.extend(_texts([t.value]))
        else:
            text = dotted(t)
            if text is not None:
                out.append((t, text))
    return out


def _tensor_list_texts(params: ast.AST) -> set[str] | None:
    """``[a, self.b]`` -> {a, self.b}; ``[latent] + noises`` -> {latent,
    noises} (a name joined to a list is a list of tensors); None when some
    part is not a dotted path or a list of them."""
    if isinstance(params, (ast.List, ast.Tuple)):
        texts = [dotted(e) for e in params.elts]
        if not texts or any(t is None for t in texts):
            return None
        return {t for t in texts if t is not None}
    if isinstance(params, ast.BinOp) and isinstance(params.op, ast.Add):
        left, right = _tensor_list_texts(params.left), _tensor_list_texts(params.right)
        if left is None and isinstance(params.left, ast.Name) and right is not None:
            left = {params.left.id}
        if right is None and isinstance(params.right, ast.Name) and left is not None:
            right = {params.right.id}
        return left | right if left is not None and right is not None else None
    return None


def parameter_owners(params: ast.AST) -> set[str] | None:
    """``model.parameters()``, ``chain(a.parameters(), b.parameters())``,
    ``[{"params": net.head.parameters()}]`` -> owners; None when some part of
    it is not a dotted path."""
    owners: set[str] = set()
    for node in walk_subtree(params):  # ``ast.walk``'s nodes, in one loop
        if (
            node.__class__ is ast.Call
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("parameters", "named_parameters")
        ):
            owner = dotted(node.func.value)
            if owner is None:
                return None
            owners.add(owner)
    return owners
