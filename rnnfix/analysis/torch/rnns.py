"""Which objects contain a cuDNN RNN (``nn.LSTM``, ``nn.GRU``, ``nn.RNN``).

An object's RNNs are found from how it is built: an RNN constructor, a
container (``nn.Sequential``, ``nn.ModuleList``, ``nn.ModuleDict``) holding
one, a data-parallel wrapper around one, or a class defined in this file whose
methods assign such submodules to ``self.<attr>`` (recursively, bases
included), or, with a project index, a module class of another file of the
run. Each RNN is reported with the attribute path that reaches it from
the object (``encoder.lstm``), so a fix can name it, and with its ``dropout``
and ``num_layers`` as written, so a fix can tell whether train mode changes its
output. ``nn.LSTMCell``/``GRUCell``/``RNNCell`` do not use cuDNN's RNN kernel
and never count.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace

from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.walks import nodes_of, walk_tree
from rnnfix.analysis.torch.api import DATA_PARALLEL

_NN = ("torch.nn.", "torch.nn.modules.rnn.")
RNN_KINDS = ("LSTM", "GRU", "RNN")
RNN_CLASSES = frozenset(p + k for p in _NN for k in RNN_KINDS)
_CONTAINERS = frozenset(
    f"{p}{c}"
    for p in ("torch.nn.", "torch.nn.modules.container.")
    for c in ("Sequential", "ModuleList", "ModuleDict")
)
# Positional index of ``num_layers`` and ``dropout`` in LSTM/GRU/RNN(...).
_NUM_LAYERS_ARG = 2
_DROPOUT_ARG = 5
_MAX_DEPTH = 6


@dataclass(frozen=True)
class RnnSpec:
    """One RNN inside an object. ``path`` is the attribute path from the object
    ("" when the object is the RNN); ``nameable`` is False when the path stops
    at a container or loop whose element cannot be written statically.
    ``dropout``/``num_layers`` are None when written as expressions we cannot read."""

    kind: str
    path: str
    nameable: bool
    dropout: float | None
    num_layers: int | None
    line: int

    @property
    def train_mode_exact(self) -> bool:
        """Whether train mode gives the same output as eval mode: only the
        inter-layer dropout differs, and it exists only with dropout > 0 and
        more than one layer."""
        return self.dropout == 0 or self.num_layers == 1

    def describe(self) -> str:
        """``dropout=0.3, num_layers=2`` as far as known."""
        drop = "an unknown `dropout`" if self.dropout is None else f"`dropout={self.dropout:g}`"
        layers = "" if self.num_layers is None else f", `num_layers={self.num_layers}`"
        return drop + layers

    def under(self, attr: str, nameable: bool = True) -> RnnSpec:
        path = f"{attr}.{self.path}" if self.path else attr
        return replace(self, path=path, nameable=self.nameable and nameable)


class RnnIndex:
    """RNN discovery for one file. ``imported``: the RNNs of a module class of
    another file of the run that an expression names (the project index), or
    None when it is not one."""

    def __init__(
        self,
        tree: ast.Module,
        imports: ImportMap,
        imported: Callable[[ast.expr], tuple[RnnSpec, ...] | None] | None = None,
    ) -> None:
        self.tree = tree
        self.imports = imports
        self.imported = imported
        self.classes: dict[str, ast.ClassDef] = {}
        for node in nodes_of(tree, ast.ClassDef):
            if isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, node)
        self._constants = _module_constants(tree)
        self._busy: set[str] = set()
        self._cache: dict[str, tuple[RnnSpec, ...]] = {}

    def has_rnn_constructor(self) -> bool:
        """Whether the file builds an LSTM/GRU/RNN anywhere (or subclasses one)."""
        for node in walk_tree(self.tree):
            if isinstance(node, ast.Call) and self.imports.qualname(node.func) in RNN_CLASSES:
                return True
            if isinstance(node, ast.ClassDef) and any(
                self.imports.qualname(b) in RNN_CLASSES for b in node.bases
            ):
                return True
        return False

    def of_class(self, name: str) -> tuple[RnnSpec, ...] | None:
        """The RNNs an instance of local class ``name`` holds; None when the class
        is not defined in this file."""
        if name in self._cache:
            return self._cache[name]
        cls = self.classes.get(name)
        if cls is None or name in self._busy:
            return None  # not cached: a cycle's inner answer is partial
        self._busy.add(name)
        try:
            specs: list[RnnSpec] = []
            for base in cls.bases:
                qual = self.imports.qualname(base)
                if qual in RNN_CLASSES:
                    # ``class MyLSTM(nn.LSTM)``: the object is the RNN; its
                    # arguments come from callers we do not follow.
                    specs.append(RnnSpec(qual.rsplit(".", 1)[1], "", True, None, None, cls.lineno))
                elif isinstance(base, ast.Name) and base.id in self.classes:
                    specs.extend(self.of_class(base.id) or ())
                elif self.imported is not None:
                    specs.extend(self.imported(base) or ())
            for node in ast.walk(cls):
                specs.extend(self._self_assignment(node, depth=1))
            result = tuple(dict.fromkeys(specs))
            self._cache[name] = result
            return result
        finally:
            self._busy.discard(name)

    def _self_assignment(self, node: ast.AST, depth: int) -> list[RnnSpec]:
        """RNNs stored by one statement of a method: ``self.x = ...``,
        ``self.layers.append(...)``, ``self.add_module("x", ...)``."""
        out: list[RnnSpec] = []
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                attr = _self_attr(t)
                if attr is not None:
                    for spec in self.of_expr(node.value, depth) or ():
                        out.append(spec.under(attr))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            method = node.func.attr
            owner = _self_attr(node.func.value)
            if owner is not None and method in ("append", "extend", "insert", "add_module"):
                value = node.args[-1]
                for spec in self.of_expr(value, depth) or ():
                    out.append(spec.under(owner, nameable=False))
            elif (
                dotted(node.func.value) == "self"
                and method in ("add_module", "register_module")
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and node.args[0].value.isidentifier()
            ):
                for spec in self.of_expr(node.args[1], depth) or ():
                    out.append(spec.under(node.args[0].value))
        return out

    def of_expr(self, expr: ast.AST, depth: int = 0) -> tuple[RnnSpec, ...] | None:
        """The RNNs of the object ``expr`` builds; None when it is not built
        from something this file defines or torch provides (a parameter, a load)."""
        if depth > _MAX_DEPTH:
            return None
        expr = strip_self_returning(expr)
        if isinstance(expr, ast.IfExp):
            a, b = self.of_expr(expr.body, depth + 1), self.of_expr(expr.orelse, depth + 1)
            if a is None and b is None:
                return None
            return (*(a or ()), *(b or ()))
        if isinstance(expr, (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)):
            elts = [expr.elt] if isinstance(expr, (ast.ListComp, ast.GeneratorExp)) else expr.elts
            found = [s for e in elts for s in (self.of_expr(e, depth + 1) or ())]
            return tuple(replace(s, nameable=False) for s in found)
        if isinstance(expr, ast.Dict):
            found = [s for v in expr.values for s in (self.of_expr(v, depth + 1) or ())]
            return tuple(replace(s, nameable=False) for s in found)
        if not isinstance(expr, ast.Call):
            return None
        qual = self.imports.qualname(expr.func)
        if qual in RNN_CLASSES:
            return (self._spec(qual.rsplit(".", 1)[1], expr),)
        if qual in _CONTAINERS or qual in DATA_PARALLEL:
            found = [
                s
                for a in [*expr.args, *(k.value for k in expr.keywords if k.arg is None)]
                for s in (self.of_expr(a, depth + 1) or ())
            ]
            if qual in DATA_PARALLEL:
                return tuple(s.under("module") for s in found)
            return tuple(replace(s, nameable=False) for s in found)
        if isinstance(expr.func, ast.Name) and expr.func.id in self.classes:
            return self.of_class(expr.func.id)
        if self.imported is not None:
            return self.imported(expr.func)
        return None

    def _spec(self, kind: str, call: ast.Call) -> RnnSpec:
        return RnnSpec(
            kind=kind,
            path="",
            nameable=True,
            dropout=self._number(call, "dropout", _DROPOUT_ARG, 0.0),
            num_layers=_as_int(self._number(call, "num_layers", _NUM_LAYERS_ARG, 1)),
            line=call.lineno,
        )

    def _number(self, call: ast.Call, name: str, index: int, default: float) -> float | None:
        value: ast.expr | None = None
        for k in call.keywords:
            if k.arg == name:
                value = k.value
            elif k.arg is None:
                return None  # ``**kwargs`` may carry it
        if value is None and len(call.args) > index:
            value = call.args[index]
        if value is None:
            if any(isinstance(a, ast.Starred) for a in call.args):
                return None
            return default
        if isinstance(value, ast.Name) and value.id in self._constants:
            return self._constants[value.id]
        return _literal_number(value)


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and dotted(node.value) == "self":
        return node.attr
    return None


def _literal_number(node: ast.AST) -> float | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _as_int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _module_constants(tree: ast.Module) -> dict[str, float]:
    """``DROPOUT = 0.3`` at module level, bound exactly once in the file."""
    counts: dict[str, int] = {}
    for node in nodes_of(tree, ast.Name):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            counts[node.id] = counts.get(node.id, 0) + 1
    out: dict[str, float] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and counts.get(stmt.targets[0].id) == 1
        ):
            number = _literal_number(stmt.value)
            if number is not None:
                out[stmt.targets[0].id] = number
    return out
