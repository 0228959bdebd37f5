"""May a fix call ``train()``/``eval()`` on this object? The one answer every
rule that inserts or redirects a mode call asks for (RNF001, RNF002, RNF003,
RNF004).

A mode call may go on ``key`` only when

- nothing overrides ``train``/``eval`` on the way in a form the call cannot go
  through (``classfacts.mode_overrides``): the class of ``key``, its bases, the
  classes of its submodules, and for a data-parallel wrapper the class it
  wraps (the wrapper's ``train()`` calls ``module.train(mode)``);
- ``key`` is a module whose mode matters: not a plain-Python object (yolov5's
  ``ComputeLoss``, a class of the file that is no ``nn.Module``), not a
  module without parameters or mode-dependent code (``nn.Softmax()``, a loss,
  a metric module) that merely has a forward.

``ReceiverCheck.provable`` says whether the run *proves* ``key`` is such a
module (built from a known module class, annotated as one, or switched by the
file's own mode calls); an object the run cannot see the class of is neither
allowed nor refused by ``reason``: a rule that guesses (RNF001 under
``--strict``) must require ``provable``.

The class of ``key`` comes from its assignments in the file (``model =
nn.DataParallel(Net()).to(dev)``, ``self.model = model``, followed through
names), from the model analysis (a parameter that receives a model), or from
its owner's class (``model.encoder`` where ``model``'s class of this file
assigns ``self.encoder = Encoder()``). Classes of other files of the run come
from the project index (``ClassSummary.mode_overrides`` / ``holds_state``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, Protocol

from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted, is_below, strip_self_returning
from rnnfix.analysis.syntax.walks import nodes_of
from rnnfix.analysis.torch import classfacts, library
from rnnfix.analysis.torch.api import (
    WRAPPERS,
    is_mode_free_torch_module,
    is_stateless_torch_module,
    module_mode_switch,
)

if TYPE_CHECKING:
    from rnnfix.analysis.modes.modeflow import ModeFlow
    from rnnfix.analysis.project.summaries import ClassSummary
    from rnnfix.analysis.project.view import ProjectView

Method = Literal["train", "eval"]
Kind = Literal["module", "stateless", "not_module", "unknown"]

_NOT_MODULES = frozenset({"Parameter", "ParameterList", "ParameterDict", "Buffer"})
_CONTAINERS = frozenset(
    f"{p}{c}"
    for p in ("torch.nn.", "torch.nn.modules.container.")
    for c in ("Sequential", "ModuleList", "ModuleDict")
)
_BASE_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
_MAX_DEPTH = 4
_COPIES = frozenset({"copy.deepcopy", "copy.copy"})


@dataclass(frozen=True)
class ClassRef:
    """What one constructor builds. ``module``: an ``nn.Module`` (None: not
    known); ``stateful``: may hold parameters or mode-dependent layers;
    ``overrides``: method -> why a mode call cannot go through an instance."""

    name: str
    module: bool | None
    stateful: bool = True
    overrides: Mapping[str, str] = field(default_factory=dict)
    wrapped: tuple[ClassRef, ...] = ()  # a data-parallel wrapper's module

    def blocker(self, method: Method) -> str | None:
        # ``eval()`` is ``self.train(False)``: a broken ``train`` breaks both.
        for ref in (self, *self.wrapped):
            why = ref.overrides.get(method) or ref.overrides.get("train")
            if why is not None:
                return why
        return None


_UNKNOWN = ClassRef("?", None)
# The nodes ``Receivers`` reads: bindings, annotations and mode calls.
_READ = frozenset({ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.arg, ast.Call})


class ClassTable:
    """Facts about the classes one file defines or imports, as ``ClassRef``s.

    ``modules``: the file's classes that are ``nn.Module`` subclasses;
    ``lookup``: a class of another file of the run an expression names."""

    def __init__(
        self,
        classes: Mapping[str, ast.ClassDef],
        imports: ImportMap,
        modules: Collection[str],
        lookup: Callable[[ast.expr], ClassSummary | None] | None = None,
        file: str | None = None,
        functions: Mapping[str, ast.AST] | None = None,
        mode_free_of: Callable[[ast.expr], bool] | None = None,
    ) -> None:
        self.file = file  # named in the reasons (a summary for other files of the run)
        self.classes = classes
        # The file's module-level functions: a class may build its layers
        # through one (``self.norm = select_norm(norm, dim)``).
        self.functions = functions or {}
        self.imports = imports
        self.modules = modules
        self.lookup = lookup
        # Whether a class of another file of the run that an expression names
        # computes the same in both modes (``ProjectView.mode_free``).
        self.mode_free_of = mode_free_of
        self._overrides: dict[str, dict[str, str]] = {}
        self._mode_free: dict[str, frozenset[str] | None] = {}
        self._state: dict[str, bool] = {}
        self._busy: set[str] = set()
        self._built: dict[ast.Call, ClassRef] = {}

    # --- constructors -----------------------------------------------------
    def ref_call(self, call: ast.Call) -> ClassRef:
        """What ``call`` builds; wrappers and containers hold what their arguments build.
        Once per call (asked per reference to what it built)."""
        found = self._built.get(call)
        if found is None:
            found = self._ref_call(call)
            if not self._busy:  # inside a class's own question, answers are provisional
                self._built[call] = found
        return found

    def _ref_call(self, call: ast.Call) -> ClassRef:
        q = self.imports.qualname(call.func) or ""
        if q in WRAPPERS:
            inner = tuple(self.ref_call(a) for a in call.args[:1] if isinstance(a, ast.Call))
            return ClassRef(q, True, True, {}, inner)
        if q in _CONTAINERS:
            inner = tuple(
                self.ref_call(n) for a in call.args for n in ast.walk(a) if isinstance(n, ast.Call)
            )
            inner = tuple(r for r in inner if r.module)
            # Stateless only when every element is written out and provably
            # stateless: ``nn.Sequential(*layers)`` may hold anything.
            leaves = _elements([*call.args, *(k.value for k in call.keywords)])
            stateful = any(
                not isinstance(leaf, ast.Call) or self.ref_call(leaf).stateful for leaf in leaves
            )
            return ClassRef(q, True, stateful, {}, inner)
        return self.ref(call.func)

    def ref(self, func: ast.expr) -> ClassRef:
        """What calling the class ``func`` names builds; for a factory
        function of the file (``classfacts.returned_class``), what the class it
        returns builds."""
        if isinstance(func, ast.Name) and func.id in self.functions:
            made = classfacts.returned_class(self.functions[func.id])
            if made is not None and made != func.id and made in self.classes:
                return self.ref(ast.Name(id=made, ctx=ast.Load()))
            builder = self._builder(made) if made is not None else None
            if builder is not None:
                return ClassRef(builder, True, True)  # ``models.resnet50(...)``, adapted
            if made is not None and made != func.id and self.lookup is not None:
                # A class the file imports from another file of the run.
                expr = _dotted_expr(made)
                found = self.lookup(expr) if expr is not None else None
                if found is not None and found.is_module:
                    return ClassRef(found.name, True, found.holds_state, found.mode_overrides)
            return _UNKNOWN
        if isinstance(func, ast.Name) and func.id in self.classes:
            name = func.id
            if name not in self.modules:
                return ClassRef(name, False, False)
            return ClassRef(name, True, self.holds_state(name), self.overrides(name))
        q = self.imports.qualname(func)
        if q is not None and q.startswith("torch.nn."):
            last = q.rsplit(".", 1)[-1]
            if last[:1].isupper() and last not in _NOT_MODULES:
                return ClassRef(q, True, not is_stateless_torch_module(q))
        if q is not None and library.torchvision_builder(q):
            # ``torchvision.models.resnet18(...)``: a module whose class
            # overrides neither ``train`` nor ``eval``.
            return ClassRef(q, True, True)
        if q is not None and q.startswith(library.ZOOS):
            return ClassRef(q, None)  # a model zoo: a module, but which is not ours to say
        row = library.row(q)
        if q is not None and row is not None and row.kind == "loader" and not row.needs_use:
            return ClassRef(q, True)  # ``torch.jit.load(f)``: a ScriptModule
        if q is not None and row is not None and row.kind == "module":
            return ClassRef(q, True)  # a library's module class the table knows
        found = self.lookup(func) if self.lookup is not None else None
        if found is not None:
            if not found.is_module:
                return ClassRef(found.name, False, False)
            return ClassRef(found.name, True, found.holds_state, found.mode_overrides)
        return _UNKNOWN

    def _builder(self, made: str) -> str | None:
        """The torchvision builder ``made`` (a name as a factory writes it,
        ``models.resnet50``) names through the file's imports, if it is one."""
        try:
            expr = ast.parse(made, mode="eval").body
        except SyntaxError:
            return None
        q = self.imports.qualname(expr)
        return q if q is not None and library.torchvision_builder(q) else None

    # --- local classes ------------------------------------------------------
    def overrides(self, name: str) -> dict[str, str]:
        """Why ``train``/``eval`` cannot be called on an instance of local
        class ``name``: its own overrides, its bases', its submodules'."""
        if name in self._overrides:
            return self._overrides[name]
        cls = self.classes.get(name)
        if cls is None or name in self._busy:
            return {}
        self._busy.add(name)
        try:
            out = classfacts.mode_overrides(cls, self.file)
            own = classfacts.methods(cls)
            for base in cls.bases:
                for method, why in self._base_ref(base).overrides.items():
                    if method not in own:
                        out.setdefault(method, why)
            for attr, value, _fn in classfacts.self_assignments(cls):
                for node in ast.walk(value):
                    if not isinstance(node, ast.Call):
                        continue
                    inner = self.ref_call(node).blocker("train")
                    if inner is not None:
                        held = f"`{name}.{attr}` holds a module that cannot switch: {inner}"
                        out.setdefault("train", held)
                        out.setdefault("eval", held)
        finally:
            self._busy.discard(name)
        self._overrides[name] = out
        return out

    def _base_ref(self, base: ast.expr) -> ClassRef:
        if isinstance(base, ast.Name) and base.id in self.classes:
            return self.ref(base)
        q = self.imports.qualname(base)
        if q in _BASE_MODULE:
            return ClassRef(q, True, False)
        return self.ref(base)

    def mode_layers(self, name: str) -> bool:
        """Whether local module class ``name``, one of its local bases or a
        local class it builds, has a layer whose forward depends on the mode
        (``classfacts.builds_mode_layers``)."""
        memo = self.__dict__.setdefault("_layers", {})
        if name in memo:
            return bool(memo[name])
        cls = self.classes.get(name)
        memo[name] = False  # a cycle of local classes proves nothing
        if cls is not None:
            found = any(
                isinstance(b, ast.Name) and self.mode_layers(b.id) for b in cls.bases
            ) or classfacts.builds_mode_layers(cls, self.imports.qualname, self.mode_layers)
        else:
            # A layer-building function of the file (``select_norm`` returning
            # ``nn.BatchNorm1d(dim)`` on one branch, ``conv_bn(...)``): the
            # class that calls it may hold what it builds.
            func = self.functions.get(name)
            found = func is not None and classfacts.function_builds_mode_layers(
                func, self.imports.qualname, self.mode_layers
            )
        memo[name] = found
        return found

    def transductive_norm(self, name: str) -> bool | None:
        """``classfacts.transductive_norm`` of the file's class ``name``, its
        bases and the classes of the file it builds read the same way; None
        for a name that is no class of the file, or builds no such layer."""
        memo = self.__dict__.setdefault("_transductive", {})
        if name in memo:
            return memo[name]  # type: ignore[no-any-return]
        cls = self.classes.get(name)
        memo[name] = None  # a cycle of local classes proves nothing
        if cls is None:
            return None
        found: bool | None = None
        for base in cls.bases:
            inner = self.transductive_norm(base.id) if isinstance(base, ast.Name) else None
            if inner is False:
                memo[name] = False
                return False
            found = found or inner
        own = classfacts.transductive_norm(cls, self.imports.qualname, self.transductive_norm)
        result = False if own is False else (found or own)
        memo[name] = result
        return result

    def holds_state(self, name: str) -> bool:
        """Whether an instance of local module class ``name`` may hold
        parameters, submodules or mode-dependent code (True unless proven not)."""
        if name in self._state:
            return self._state[name]
        cls = self.classes.get(name)
        if cls is None or name in self._busy:
            return True
        self._busy.add(name)
        try:
            state = any(self._base_ref(b).stateful for b in cls.bases) or classfacts.holds_state(
                cls, self._stateless_value
            )
        finally:
            self._busy.discard(name)
        self._state[name] = state
        return state

    def _stateless_value(self, value: ast.expr, fn: classfacts.FuncDef) -> bool:
        """``value`` provably holds no parameter and no module."""
        if isinstance(value, ast.Constant | ast.JoinedStr):
            return True
        if isinstance(value, ast.Tuple | ast.List | ast.Set):
            return all(self._stateless_value(e, fn) for e in value.elts)
        if isinstance(value, ast.UnaryOp):
            return self._stateless_value(value.operand, fn)
        if isinstance(value, ast.BinOp):
            return self._stateless_value(value.left, fn) and self._stateless_value(value.right, fn)
        if isinstance(value, ast.IfExp):
            # ``self.loss = error_rate if eval_mode else TextureLoss(w)``: either
            # branch may be what it holds.
            return self._stateless_value(value.body, fn) and self._stateless_value(value.orelse, fn)
        if isinstance(value, ast.Name):
            return _constant_default(fn, value.id) or self._function_reference(value.id, fn)
        if isinstance(value, ast.Call):
            q = self.imports.qualname(value.func) or ""
            if q.startswith("torch.") and not q.startswith("torch.nn."):
                return q.rsplit(".", 1)[-1] != "Parameter"  # a tensor, not a parameter
            ref = self.ref_call(value)
            return ref.module is False or (ref.module is True and not ref.stateful)
        return False

    # --- mode-free classes ----------------------------------------------------
    def mode_free_call(self, call: ast.Call) -> bool:
        """``call`` builds a module whose forward provably computes the same in
        train and eval mode, whatever other files it needs are (``mode_free``)."""
        q = self.imports.qualname(call.func) or ""
        if is_mode_free_torch_module(q):
            return True
        if isinstance(call.func, ast.Name) and call.func.id in self.classes:
            needs = self.mode_free(call.func.id)
            return needs is not None and all(self._external_mode_free(n) for n in needs)
        return self._external_mode_free(dotted(call.func))

    def _external_mode_free(self, name: str | None) -> bool:
        if name is None or self.mode_free_of is None:
            return False
        parts = name.split(".")
        expr: ast.expr = ast.Name(id=parts[0], ctx=ast.Load())
        for part in parts[1:]:
            expr = ast.Attribute(value=expr, attr=part, ctx=ast.Load())
        return self.mode_free_of(expr)

    def mode_free(self, name: str) -> frozenset[str] | None:
        """Whether module class ``name`` of the file computes the same in train
        and eval mode: the dotted names (as the file writes them) of the
        classes of other files it builds or derives from, on which that
        depends; None when it is not provable. Its bases, and everything it
        keeps on ``self``, must be shown to be: ``nn.Module``, a ``torch.nn``
        layer without a mode (``nn.Linear``, ``nn.ReLU``), a container of
        those, a mode-free class, a plain object or value; a constructor
        argument only where the class never runs it (read only as a number
        or a tensor: ``Normal(mu, self.std)``). Nothing in the class may read
        ``self.training``, register children by name or build a layer with a
        mode. ``eval()`` on such a module changes nothing (recurrent-visual-
        attention's Linear-only glimpse, core and location networks)."""
        if name in self._mode_free:
            return self._mode_free[name]
        cls = self.classes.get(name)
        if cls is None or name in self._busy:
            return None
        self._busy.add(name)
        try:
            found = self._class_mode_free(cls)
        finally:
            self._busy.discard(name)
        self._mode_free[name] = found
        return found

    def _class_mode_free(self, cls: ast.ClassDef) -> frozenset[str] | None:
        needs: set[str] = set()
        for base in cls.bases:
            q = self.imports.qualname(base) or ""
            if q in _BASE_MODULE or is_mode_free_torch_module(q):
                continue
            if isinstance(base, ast.Name) and base.id in self.classes:
                inner = self.mode_free(base.id)
            else:
                text = dotted(base)
                inner = (
                    frozenset({text}) if text is not None and not q.startswith("torch.") else None
                )
            if inner is None:
                return None
            needs |= inner
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and node.attr == "training":
                return None
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else dotted(func)
            if called in _REGISTERING or called == "setattr":
                return None  # children added by name: not read here
            q = self.imports.qualname(func) or ""
            if q.startswith("torch.nn.") and q.rsplit(".", 1)[-1][:1].isupper():
                if not (is_mode_free_torch_module(q) or q in _CONTAINERS):
                    return None  # a layer with a mode (Dropout, BatchNorm, an RNN)
        for attr, value, fn in classfacts.self_assignments(cls):
            inner = self._value_mode_free(value, fn, cls, attr)
            if inner is None:
                return None
            needs |= inner
        for value, fn in _added_children(cls):
            inner = self._value_mode_free(value, fn, cls, None)
            if inner is None:
                return None
            needs |= inner
        return frozenset(needs)

    def _value_mode_free(
        self, value: ast.expr, fn: classfacts.FuncDef, cls: ast.ClassDef, attr: str | None
    ) -> frozenset[str] | None:
        """What ``value``, kept on an instance, needs to be mode-free (see
        ``mode_free``); None when it cannot be."""
        if isinstance(value, ast.IfExp):
            body = self._value_mode_free(value.body, fn, cls, attr)
            orelse = self._value_mode_free(value.orelse, fn, cls, attr)
            return body | orelse if body is not None and orelse is not None else None
        if isinstance(value, ast.Call):
            q = self.imports.qualname(value.func) or ""
            if q in _CONTAINERS:
                return self._elements_mode_free(value, fn, cls)
            if is_mode_free_torch_module(q):
                return frozenset()
            if isinstance(value.func, ast.Name) and value.func.id in self.classes:
                if value.func.id not in self.modules:
                    return frozenset()  # a plain object: no child a mode call reaches
                return self.mode_free(value.func.id)
            if isinstance(value.func, ast.Name) and value.func.id in self.functions:
                return None  # a layer built by a function of the file
            text = dotted(value.func)
            if (
                text is not None
                and not q.startswith("torch.")
                and q.rsplit(".", 1)[-1][:1].isupper()
            ):
                return frozenset({text})  # a class of another file, maybe
        if self._stateless_value(value, fn):
            return frozenset()
        if (
            attr is not None
            and isinstance(value, ast.Name)
            and _inert_attribute(cls, attr, self.imports)
        ):
            return frozenset()  # a constructor argument the class never runs
        return None

    def _elements_mode_free(
        self, call: ast.Call, fn: classfacts.FuncDef, cls: ast.ClassDef
    ) -> frozenset[str] | None:
        """``nn.Sequential(nn.Linear(...), nn.ReLU())``, ``nn.ModuleList([Block()
        for _ in range(n)])``: every element written out and mode-free."""
        needs: set[str] = set()
        values: list[ast.expr] = [*call.args, *(k.value for k in call.keywords)]
        for v in values:
            if isinstance(v, ast.Starred):
                v = v.value  # ``nn.Sequential(*[Block(w) for _ in range(n)])``
                if not isinstance(v, ast.ListComp | ast.GeneratorExp | ast.List | ast.Tuple):
                    return None
            if isinstance(v, ast.ListComp | ast.GeneratorExp):
                v = v.elt
            elif isinstance(v, ast.DictComp):
                v = v.value
            leaves = _elements([v])
            for leaf in leaves:
                if isinstance(leaf, ast.Starred):
                    return None
                inner = self._value_mode_free(leaf, fn, cls, None)
                if inner is None:
                    return None
                needs |= inner
        return frozenset(needs)

    def _function_reference(self, name: str, fn: classfacts.FuncDef) -> bool:
        """``name`` in ``fn`` is a module-level function of the file (a plain
        function object, no parameter and no module): not a parameter of
        ``fn`` nor a name it binds, and not a class."""
        if name not in self.functions or name in self.classes:
            return False
        a = fn.args
        params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p}
        if name in params:
            return False
        return not any(
            isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)
            for n in ast.walk(fn)
        )


# Methods that add a child to a module or a container on ``self``.
_REGISTERING = frozenset({"add_module", "register_module", "register_parameter"})
_ADDING = frozenset({"append", "extend", "insert", "update"})
# Builtins that read a number: a value handed to them is no module.
_NUMERIC_BUILTINS = frozenset({"int", "float", "round", "abs", "min", "max", "range", "len"})


def _added_children(cls: ast.ClassDef) -> Iterator[tuple[ast.expr, classfacts.FuncDef]]:
    """What a method adds to a container on ``self``: ``self.layers.append(v)``,
    ``self.blocks[k] = v`` (a list's elements are what ``extend`` takes)."""
    for fn, this in _methods_with_self(cls):
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _ADDING
                and _on(node.func.value, this)
            ):
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    yield from ((v, fn) for v in _elements([arg]))
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Subscript) and _on(t.value, this):
                        yield node.value, fn


def _methods_with_self(cls: ast.ClassDef) -> Iterator[tuple[classfacts.FuncDef, str]]:
    for fn in classfacts.methods(cls).values():
        params = [p.arg for p in (*fn.args.posonlyargs, *fn.args.args)]
        if params:
            yield fn, params[0]


def _on(expr: ast.expr, this: str) -> bool:
    text = dotted(expr)
    return text is not None and is_below(text, this)


def _inert_attribute(cls: ast.ClassDef, attr: str, imports: ImportMap) -> bool:
    """Every read of ``self.<attr>`` in the class uses it as a number or a
    tensor (an operand, a ``torch`` function's or a numeric builtin's
    argument, an index), never runs it: whatever a caller passes, the class
    runs no module through it."""
    for fn, this in _methods_with_self(cls):
        parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(fn):
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        for node in parents:
            if (
                isinstance(node, ast.Attribute)
                and node.attr == attr
                and isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name)
                and node.value.id == this
                and not _numeric_use(node, parents, imports)
            ):
                return False
    return True


def _numeric_use(read: ast.expr, parents: Mapping[ast.AST, ast.AST], imports: ImportMap) -> bool:
    up = parents.get(read)
    if isinstance(up, ast.keyword):
        up = parents.get(up)
    if isinstance(up, ast.BinOp | ast.UnaryOp | ast.Compare | ast.BoolOp | ast.FormattedValue):
        return True
    if isinstance(up, ast.Subscript) and up.slice is read:
        return True
    if isinstance(up, ast.Call) and up.func is not read:
        q = imports.qualname(up.func) or ""
        return (q.startswith("torch.") and not q.startswith("torch.nn.")) or (
            dotted(up.func) in _NUMERIC_BUILTINS
        )
    return False


def _elements(values: list[ast.expr]) -> list[ast.expr]:
    """The elements of literal lists, tuples and dict values, flattened."""
    out: list[ast.expr] = []
    for v in values:
        if isinstance(v, ast.List | ast.Tuple):
            out.extend(_elements(v.elts))
        elif isinstance(v, ast.Dict):
            out.extend(_elements([x for x in v.values if x is not None]))
        else:
            out.append(v)
    return out


def _constant_default(fn: classfacts.FuncDef, name: str) -> bool:
    """``name`` is a parameter of ``fn`` whose default is a constant (``gamma=2``,
    ``weight=None``): what a loss or a metric keeps, not a module it is given."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    pairs = list(zip(positional, [*defaults, *a.defaults], strict=True))
    pairs += list(zip(a.kwonlyargs, a.kw_defaults, strict=True))
    for arg, default in pairs:
        if arg.arg == name:
            return isinstance(default, ast.Constant)
    return False


@dataclass(frozen=True)
class ReceiverCheck:
    """The answer for one mode call on ``key``. ``reason``: why none may go
    there (None: nothing refuses it); ``provable``: the run proves ``key`` is
    a module whose mode matters."""

    key: str
    method: Method
    kind: Kind
    reason: str | None
    override: bool  # ``reason`` is an override of ``train``/``eval``

    @property
    def provable(self) -> bool:
        return self.kind == "module" and self.reason is None


class ReceiverFacts(Protocol):
    """What ``Receivers`` reads of the file's facts (``FileFacts``)."""

    @property
    def modes(self) -> ModeFlow: ...

    @property
    def project(self) -> ProjectView | None: ...

    def ancestors(self, node: ast.AST) -> list[ast.AST]: ...


class ReceiverSource(Protocol):
    """The file ``Receivers`` answers for (``FileContext``, whose facts build
    it: a protocol, so that this module does not import the context)."""

    @property
    def tree(self) -> ast.Module: ...

    @property
    def facts(self) -> ReceiverFacts: ...


class Receivers:
    """Per file, shared by the rules (``ctx.facts.receivers``)."""

    def __init__(self, ctx: ReceiverSource) -> None:
        self.ctx = ctx
        flow = ctx.facts.modes
        self.flow = flow
        self.table = ClassTable(
            flow.index.classes,
            flow.imports,
            flow.classes.modules,
            _lookup(ctx),
            functions=classfacts.module_functions(ctx.tree.body),
            mode_free_of=ctx.facts.project.mode_free if ctx.facts.project is not None else None,
        )
        self._assigned: dict[str, list[ast.expr]] = {}
        self._annotated: dict[str, list[ast.expr]] = {}
        self._switched: set[str] = set()
        for node in nodes_of(ctx.tree, *_READ):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for target, value in _pairs(t, node.value):
                        text = dotted(target)
                        if text is not None:
                            self._assigned.setdefault(text, []).append(value)
                if isinstance(node, ast.AnnAssign) and (text := dotted(node.target)):
                    self._annotated.setdefault(text, []).append(node.annotation)
            elif isinstance(node, ast.AnnAssign) and (text := dotted(node.target)):
                self._annotated.setdefault(text, []).append(node.annotation)
            elif isinstance(node, ast.NamedExpr):
                self._assigned.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, ast.arg) and node.annotation is not None:
                self._annotated.setdefault(node.arg, []).append(node.annotation)
            elif (sw := module_mode_switch(node)) is not None:
                text = dotted(strip_self_returning(sw.receiver))
                if text is not None:
                    self._switched.add(text)
        self._cache: dict[tuple[str, str, str | None], ReceiverCheck] = {}
        self._self_class: str | None = None

    def check(self, key: str, method: Method = "train", at: ast.AST | None = None) -> ReceiverCheck:
        """May a fix put ``key.<method>()`` in the file? ``at``: where the call
        would go; inside a method of a class of this file, ``self`` and
        ``self.<attr>`` are read from that class (``self.train()`` in a module
        whose ``train`` is a training loop)."""
        cls = self._enclosing_class(key, at)
        found = self._cache.get((key, method, cls))
        if found is None:
            self._self_class = cls
            try:
                found = self._check(key, method)
            finally:
                self._self_class = None
            self._cache[(key, method, cls)] = found
        return found

    def _enclosing_class(self, key: str, at: ast.AST | None) -> str | None:
        """The class of this file whose method binds ``key``'s root as its first parameter."""
        if at is None:
            return None
        root = key.split(".", 1)[0]
        ancestors = self.ctx.facts.ancestors(at)
        for i, node in enumerate(ancestors):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                params = [p.arg for p in (*node.args.posonlyargs, *node.args.args)]
                owner = ancestors[i + 1] if i + 1 < len(ancestors) else None
                if isinstance(owner, ast.ClassDef) and params and params[0] == root:
                    name = owner.name
                    return name if self.table.classes.get(name) is owner else None
                if root in params:
                    return None  # a parameter of a nested function: not ``self``
        return None

    def outermost(self, keys: Iterable[str]) -> list[str]:
        """``keys`` without those below another of them (``model.encoder``
        when ``model`` is there too): ``Module.train`` recurses, so one call on
        the outermost model covers its submodules."""
        keys = list(dict.fromkeys(keys))
        return [k for k in keys if not any(k != o and is_below(k, o) for o in keys)]

    def _check(self, key: str, method: Method) -> ReceiverCheck:
        refs = self._refs(key, 0)
        for ref in refs:
            why = ref.blocker(method)
            if why is not None:
                return ReceiverCheck(key, method, "module", why, True)
        flat = [r for ref in refs for r in (ref.wrapped or (ref,))]
        plain = [r for r in flat if r.module is False]
        if plain:
            reason = f"`{key}` is a `{plain[0].name}`, not an `nn.Module`"
            return ReceiverCheck(key, method, "not_module", reason, False)
        if flat and all(r.module is True and not r.stateful for r in flat):
            name = flat[0].name.replace("torch.nn.", "nn.")
            reason = (
                f"`{key}` (`{name}`) has no parameters and behaves the same in train "
                "and eval mode: it is not the model"
            )
            return ReceiverCheck(key, method, "stateless", reason, False)
        if any(r.module is True for r in flat) or self._declared_module(key):
            return ReceiverCheck(key, method, "module", None, False)
        return ReceiverCheck(key, method, "unknown", None, False)

    def _declared_module(self, key: str) -> bool:
        """Annotated as a module class, or switched by the file's own mode calls."""
        if key in self._switched:
            return True
        return any(self.table.ref(a).module is True for a in self._annotated.get(key, ()))

    def _refs(self, key: str, depth: int) -> list[ClassRef]:
        if depth > _MAX_DEPTH:
            return []
        if self._self_class is not None and depth == 0:
            root, _, rest = key.partition(".")
            this = ast.Name(id=self._self_class, ctx=ast.Load())
            if not rest:
                return [self.table.ref(this)]
            if "." not in rest:
                found = self._attribute_refs(self._self_class, rest, depth)
                if found:
                    return found
        values = list(self._assigned.get(key, ()))
        info = self.flow.models.get(key)
        if info is not None and info.built_at is not None and info.built_at not in values:
            values.append(info.built_at)
        refs = [r for v in values for r in self._value_refs(v, key, depth)]
        # ``def fit(model: Detector, ...)``: the annotation names the class, or
        # a base of it (``model: PyTorchModel``, an abstract module its users
        # subclass): what the object holds is its subclass's, never known
        # stateless from the base alone.
        refs += [
            replace(r, stateful=True)
            for a in self._annotated.get(key, ())
            if (r := self.table.ref(a)).module
        ]
        if refs or "." not in key:
            return refs
        owner, attr = key.rsplit(".", 1)
        out: list[ClassRef] = []
        for ref in self._refs(owner, depth + 1):
            if ref.wrapped and attr == "module":
                out.extend(ref.wrapped)
            elif ref.name in self.table.classes and ref.module:
                out.extend(self._attribute_refs(ref.name, attr, depth))
        return out

    def _attribute_refs(self, cls_name: str, attr: str, depth: int) -> list[ClassRef]:
        cls = self.table.classes[cls_name]
        out: list[ClassRef] = []
        for name, value, _fn in classfacts.self_assignments(cls):
            built = _strip(value)
            if name == attr and isinstance(built, ast.Call):
                out.append(self.table.ref_call(built))
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.table.classes and not out:
                if depth < _MAX_DEPTH and base.id != cls_name:
                    out.extend(self._attribute_refs(base.id, attr, depth + 1))
        return out

    def _value_refs(self, value: ast.expr, key: str, depth: int) -> list[ClassRef]:
        value = _strip(value)
        if isinstance(value, ast.Call):
            q = self.table.imports.qualname(value.func)
            first = _strip(value.args[0]) if value.args else None
            if q in _COPIES and first is not None:
                return self._value_refs(first, key, depth + 1)  # a copy has its class
            if q in WRAPPERS and first is not None and not isinstance(first, ast.Call):
                # ``DDP(model)``: the wrapper's ``train()`` reaches ``model``.
                inner = self._value_refs(first, key, depth + 1)
                return [ClassRef(q, True, True, {}, tuple(inner))]
            return [self.table.ref_call(value)]
        text = dotted(value)
        if text is not None and text != key:
            return self._refs(text, depth + 1)
        return []


def _strip(value: ast.expr) -> ast.expr:
    stripped = strip_self_returning(value)
    return stripped if isinstance(stripped, ast.expr) else value


def _pairs(target: ast.expr, value: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    if (
        isinstance(target, ast.Tuple | ast.List)
        and isinstance(value, ast.Tuple | ast.List)
        and len(target.elts) == len(value.elts)
    ):
        return list(zip(target.elts, value.elts, strict=True))
    return [(target, value)]


def _dotted_expr(text: str) -> ast.expr | None:
    """The expression a dotted name as written (``nets.Tagger``) parses to."""
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def _lookup(ctx: ReceiverSource) -> Callable[[ast.expr], ClassSummary | None] | None:
    """A class of another file of the run ``func`` names, or the class a
    factory function of another file builds (``ProjectView.factory_class``)."""
    view = ctx.facts.project
    if view is None:
        return None

    def lookup(func: ast.expr) -> ClassSummary | None:
        return view.lookup_class(func) or view.factory_class(func)

    return lookup
