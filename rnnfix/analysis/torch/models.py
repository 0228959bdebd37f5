"""Which names and attribute paths hold torch modules ("models").

Never guessed from a name: an object is a model when

- it is built from an ``nn.Module`` subclass of this file or a torch module
  (``Net()``, ``nn.LSTM(...)``, ``nn.DataParallel(Net()).to(dev)``), or by a
  factory of the library table (``rnnfix.analysis.torch.library``:
  torchvision's builders, ``timm.create_model``, ``torch.jit.load``), or
- it is bound to a loader's result (``torch.load``, ``torch.hub.load``,
  ``X.from_pretrained``: the table's ``needs_use`` rows) and called, switched
  or asked for its ``.parameters()`` (a checkpoint dict is none of these), or
- ``.eval()`` / ``.train()`` / ``.train(False)`` is called on it *and* it is called
  (``model(x)``, ``model.forward(x)``) or its ``.parameters()`` are used, or
- it is called and its ``.parameters()`` are used (e.g. fed to an optimizer), or
- it is a parameter that receives a model at a call in this file, or an
  attribute assigned a model (``self.model = model``).

Receivers of ``.train(data)``-like calls (xgboost/lightgbm boosters, other
libraries' trainers), instances of this file's non-module classes, and names
bound to imported non-torch modules are never models.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted, is_below, strip_self_returning
from rnnfix.analysis.syntax.scopes import FileIndex, FuncNode
from rnnfix.analysis.syntax.walks import nodes_of, walk_subtree
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.api import MODULE_METHODS, WRAPPERS, mode_switch
from rnnfix.analysis.torch.passthrough import unwrapped
from rnnfix.analysis.torch.rnns import RNN_CLASSES

if TYPE_CHECKING:
    from rnnfix.analysis.project.summaries import ClassSummary
    from rnnfix.analysis.project.view import ProjectView

_CONTAINERS = {"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"}
_NOT_MODULES = {"Parameter", "ParameterList", "ParameterDict", "Buffer"}


def unsubscripted(base: ast.expr) -> ast.expr:
    """A generic base names its class: ``flair.nn.Model[TextPair]`` is a
    ``flair.nn.Model``, ``Base[T]`` a ``Base``."""
    return base.value if isinstance(base, ast.Subscript) else base


@dataclass(frozen=True)
class ModelInfo:
    key: str  # dotted text as written: "model", "self.critic"
    built_at: ast.Call | None  # the constructor call, when built in this file
    class_name: str | None  # local class name or qualified torch name ("torch.nn.LSTM")
    has_rnn: bool | None  # contains an LSTM/GRU/RNN (None: not known)
    # "built" | "mode+call" | "call+parameters" | "loaded+use" | "argument" | "submodule",
    # "container" (``model_containers``),
    # or "external": only a function of another file it is passed to uses it as one
    evidence: str
    # Methods that run its forward, from the library table (a transformers
    # model's ``generate``); an in-repo class's are ``forwards.forward_methods``.
    forwards: frozenset[str] = frozenset()
    # "dict" | "list": a container of modules filled at run time
    # (``model_containers``, evidence "container"); None for a module.
    container: str | None = None


class _Classes(Protocol):
    """What ``ModuleClasses`` reads of an index: the file's module-level
    classes (``FileIndex``, ``ClassIndex``)."""

    classes: dict[str, ast.ClassDef]


class ModuleClasses:
    """Local classes that are ``nn.Module`` subclasses, Lightning modules, and
    which of them contain an RNN. With a project index, module classes of
    other files of the run count too (``from models import Seq2Seq``)."""

    def __init__(
        self, index: _Classes, imports: ImportMap, project: ProjectView | None = None
    ) -> None:
        self.project = project
        self.modules: set[str] = set()
        self.lightning: set[str] = set()
        self._index = index
        self._imports = imports
        changed = True
        while changed:
            changed = False
            for name, cls in index.classes.items():
                if name in self.modules:
                    continue
                for base in map(unsubscripted, cls.bases):
                    q = imports.qualname(base) or ""
                    local = isinstance(base, ast.Name) and base.id in self.modules
                    if (
                        local
                        or q.startswith(("torch.nn.", "pytorch_lightning.", "lightning."))
                        or self.imported(base) is not None
                    ):
                        self.modules.add(name)
                        changed = True
                        break
        for name, cls in index.classes.items():
            for base in map(unsubscripted, cls.bases):
                q = imports.qualname(base) or ""
                if "Lightning" in q or (isinstance(base, ast.Name) and base.id in self.lightning):
                    self.lightning.add(name)
            if any(
                isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "training_step"
                for s in cls.body
            ):
                self.lightning.add(name)

    @functools.cached_property
    def with_rnn(self) -> set[str]:
        """The classes holding an RNN: computed at the first question (only a
        construction of a local module class asks), since it reads every call
        of every class and looks names up in the other files of the run."""
        index, imports = self._index, self._imports
        with_rnn: set[str] = set()
        # Each class's calls in ``ast.walk`` order, found once for every round.
        calls: dict[str, list[ast.Call]] = {}
        changed = True
        while changed:
            changed = False
            for name, cls in index.classes.items():
                if name in with_rnn:
                    continue
                if name not in calls:
                    calls[name] = [n for n in walk_subtree(cls) if isinstance(n, ast.Call)]
                for node in calls[name]:
                    q = imports.qualname(node.func) or ""
                    local = isinstance(node.func, ast.Name) and node.func.id in with_rnn
                    imported = self.imported(node.func)
                    if q in RNN_CLASSES or local or (imported is not None and imported.rnns):
                        with_rnn.add(name)
                        changed = True
                        break
        return with_rnn

    def imported(self, expr: ast.expr) -> ClassSummary | None:
        """The ``nn.Module`` class of another file of the run ``expr`` names."""
        if self.project is None:
            return None
        found = self.project.lookup_class(expr)
        return found if found is not None and found.is_module else None


def mode_receiver(call: ast.Call, imports: ImportMap) -> str | None:
    """The model ``x.eval()`` / ``x.to(device).train()`` switches, as dotted text."""
    if not isinstance(call.func, ast.Attribute):
        return None
    return dotted(unwrap_built(call.func.value, imports))


def unwrap_built(value: ast.AST, imports: ImportMap) -> ast.AST:
    """``nn.DataParallel(Net()).to(dev)`` -> ``Net()``; ``model.to(dev)`` -> ``model``;
    ``accelerator.unwrap_model(model)`` -> ``model`` (so ``unwrap_model(model).eval()``
    is a mode call on ``model``: it switches every layer ``model``'s forward runs)."""
    while True:
        stripped = strip_self_returning(value)
        inner = unwrapped(value)
        if stripped is not value:
            value = stripped
        elif (
            isinstance(value, ast.Call) and value.args and imports.qualname(value.func) in WRAPPERS
        ):
            value = value.args[0]
        elif inner is not None:
            value = inner
        else:
            return value


def built_class(
    value: ast.AST, imports: ImportMap, classes: ModuleClasses
) -> tuple[ast.Call, str, bool | None] | None:
    """(constructor call, class name, has_rnn) when ``value`` builds a module."""
    value = unwrap_built(value, imports)
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Name) and func.id in classes.modules:
        return value, func.id, func.id in classes.with_rnn
    q = imports.qualname(func)
    if q is None:
        return _imported_module(value, classes)
    last = q.rsplit(".", 1)[-1]
    # Loss modules have no train/eval behaviour worth tracking.
    if q in _CONTAINERS:
        inner = [n for a in value.args for n in ast.walk(a) if isinstance(n, ast.Call)]
        rnn = any(_rnn_of(n, imports, classes) for n in inner)
        return value, q, rnn
    if (
        q.startswith("torch.nn.")
        and last[:1].isupper()
        and last not in _NOT_MODULES
        and not last.endswith("Loss")
    ):
        return value, q, q in RNN_CLASSES
    found = library.row(q)
    if found is not None and found.kind == "module":
        return value, q, False  # a library's module class (pytorch-fid's ``InceptionV3``)
    if found is not None and found.kind in ("factory", "loader") and not found.needs_use:
        return value, q, False  # ``torchvision.models.resnet18()``, ``torch.jit.load(f)``
    return _imported_module(value, classes)


def _loader_row(value: ast.Call, imports: ImportMap) -> library.Row | None:
    found = library.row(imports.qualname(value.func))
    if found is None and isinstance(value.func, ast.Attribute):
        owner = value.func.value
        found = library.method_row(value.func.attr, dotted(owner), imports.qualname(owner))
    return found


def library_forwards(call: ast.Call, imports: ImportMap) -> frozenset[str]:
    """The forward methods the library table gives the model ``call`` loads."""
    found = _loader_row(call, imports)
    return found.forward_methods if found is not None else frozenset()


def loaded(value: ast.AST, imports: ImportMap) -> ast.Call | None:
    """The call of a loader whose result is a model only when the code uses it
    as one (the library table's ``needs_use`` rows): ``torch.load(f)``,
    ``torch.hub.load(repo, name)``, ``X.from_pretrained(path)``; through
    ``.to(device)`` and wrappers."""
    value = unwrap_built(value, imports)
    if not isinstance(value, ast.Call):
        return None
    found = _loader_row(value, imports)
    if found is not None and found.kind in ("factory", "loader") and found.needs_use:
        return value
    return None


def _imported_module(value: ast.Call, classes: ModuleClasses) -> tuple[ast.Call, str, bool] | None:
    """A module class of another file of the run (after torch's own API)."""
    found = classes.imported(value.func)
    return (value, found.name, bool(found.rnns)) if found is not None else None


def _rnn_of(call: ast.Call, imports: ImportMap, classes: ModuleClasses) -> bool:
    found = built_class(call, imports, classes)
    return bool(found and found[2])


def assignment_pairs(node: ast.Assign | ast.AnnAssign) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs, ``a, b = A(), B()`` element-wise."""
    assert node.value is not None
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    out: list[tuple[ast.expr, ast.expr]] = []
    for t in targets:
        if (
            isinstance(t, (ast.Tuple, ast.List))
            and isinstance(node.value, (ast.Tuple, ast.List))
            and len(t.elts) == len(node.value.elts)
        ):
            out.extend(zip(t.elts, node.value.elts, strict=True))
        else:
            out.append((t, node.value))
    return out


_MODEL_KINDS = frozenset({ast.Assign, ast.AnnAssign, ast.Call})


def find_models(
    tree: ast.Module, index: FileIndex, imports: ImportMap, classes: ModuleClasses
) -> dict[str, ModelInfo]:
    built: dict[str, ModelInfo] = {}
    loads: dict[str, ast.Call] = {}  # path -> the loader call it was bound to
    mode_receivers: set[str] = set()
    not_models: set[str] = set()
    called: set[str] = set()
    parameters: set[str] = set()
    for node in nodes_of(tree, *_MODEL_KINDS):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for t, value in assignment_pairs(node):
                found = built_class(value, imports, classes)
                text = dotted(t)
                if found and text:
                    call, name, rnn = found
                    built[text] = ModelInfo(text, call, name, rnn, "built")
                elif text and (load := loaded(value, imports)) is not None:
                    loads.setdefault(text, load)
        elif isinstance(node, ast.Call):
            func = node.func
            text = dotted(func)
            if text:
                called.add(text)
            if isinstance(func, ast.Attribute):
                recv = dotted(func.value)
                switch = mode_switch(node)
                if recv is None:
                    # ``model.to(device).train()``
                    if switch is not None and switch.is_module_switch:
                        recv = mode_receiver(node, imports)
                        if recv is not None:
                            mode_receivers.add(recv)
                    continue
                if func.attr == "forward":
                    called.add(recv)
                elif func.attr in ("parameters", "named_parameters"):
                    parameters.add(recv)
                if switch is not None and switch.is_module_switch:
                    mode_receivers.add(mode_receiver(node, imports) or recv)
                elif func.attr in ("train", "eval"):
                    not_models.add(recv)  # ``booster.train(params)``: another library
    # Instances of local non-module classes, imported modules (``xgb``, ``pd``),
    # local functions and classes are never models.
    for text, cls in index.instance_types.items():
        if cls not in classes.modules:
            not_models.add(text)
    models: dict[str, ModelInfo] = dict(built)
    for key, (kind, rnn) in model_containers(tree, imports, classes).items():
        models.setdefault(key, ModelInfo(key, None, None, rnn, "container", container=kind))
    rebound = _rebound_imports(tree, imports)
    used = called | parameters | mode_receivers
    for key in sorted(mode_receivers | (called & parameters) | (loads.keys() & used)):
        if key in models or key in not_models:
            continue
        root = key.split(".")[0]
        if (
            (root in imports.names and root not in rebound)
            or root in index.module_functions
            or root in index.classes
        ):
            continue
        if key in mode_receivers and (key in called or key in parameters):
            models[key] = ModelInfo(key, None, None, None, "mode+call")
        elif key in loads:
            # ``decoder = torch.load(f)`` then ``decoder(x)``: a state dict
            # or a checkpoint is never called, switched or asked for parameters.
            forwards = library_forwards(loads[key], imports)
            models[key] = ModelInfo(key, None, None, None, "loaded+use", forwards)
        elif key in called and key in parameters:
            models[key] = ModelInfo(key, None, None, None, "call+parameters")
    for key, load in loads.items():
        info = models.get(key)
        if info is not None and not info.forwards and (forwards := library_forwards(load, imports)):
            models[key] = dataclasses.replace(info, forwards=forwards)  # whatever proved it
    pending = mode_receivers - models.keys() - not_models
    if pending:
        _forwarded_receivers(index, pending, imports, rebound, models)
    # A submodule path of a model built here (``self.model.lstm.eval()``) is a model too.
    for key in sorted(mode_receivers - models.keys() - not_models):
        if any(key != m and is_below(key, m) for m in models):
            models[key] = ModelInfo(key, None, None, None, "submodule")
    _propagate(tree, index, models)
    return models


_EMPTY = frozenset({"dict", "list"})
# The nodes ``model_containers`` reads (the rest of the tree binds or fills nothing).
_CONTAINER_NODES = (
    ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension,
    ast.withitem, ast.Delete, ast.Call,
)  # fmt: skip
_FILLS = frozenset({"append", "insert"})


def model_containers(
    tree: ast.Module, imports: ImportMap, classes: ModuleClasses
) -> dict[str, tuple[str, bool]]:
    """Containers whose every element is built from a module class (issue
    36.1): ``self.nets = {}`` then ``self.nets[name] = Net(name)`` in a loop,
    ``models = [Net() for _ in range(k)]``, ``models.append(Net())``, a
    literal ``nets = {"G": G(), "D": D()}`` or ``[Encoder(), Decoder()]``.
    Path -> whether an element holds an RNN.

    The path is bound exactly once (to an empty ``{}``/``[]``/``dict()``/
    ``list()`` or to a comprehension whose element builds a module), and
    changed only by putting a built module in (``C[key] = Net()``,
    ``C.append(Net())``, ``C.insert(i, Net())``, at any key, under any
    condition: every element is a module whichever run). Anything else put
    in or done to it (another value, ``update``, ``extend``, ``+=``, a second
    binding) rules it out. A path read this way stands for all its
    elements: a mode call on every element switches it, ``C[k](x)`` runs it;
    no fix calls a method on it (a dict has no ``train()``). Path -> ("dict"
    or "list", whether an element holds an RNN)."""
    bound: dict[str, list[ast.expr | None]] = {}
    fills: dict[str, list[ast.expr]] = {}
    spoiled: set[str] = set()
    for node in nodes_of(tree, *_CONTAINER_NODES):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript):
                    container = dotted(t.value)
                    if container is not None:
                        if isinstance(node, ast.Assign) and node.value is not None:
                            fills.setdefault(container, []).append(node.value)
                        else:
                            spoiled.add(container)
                    continue
                for sub in ast.walk(t):
                    text = dotted(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else None
                    if text is not None:
                        value = node.value if isinstance(node, ast.Assign) and sub is t else None
                        bound.setdefault(text, []).append(value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.withitem)):
            target = node.optional_vars if isinstance(node, ast.withitem) else node.target
            for sub in ast.walk(target) if target is not None else ():
                text = dotted(sub) if isinstance(sub, (ast.Name, ast.Attribute)) else None
                if text is not None:
                    bound.setdefault(text, []).append(None)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and (c := dotted(t.value)) is not None:
                    spoiled.add(c)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            container = dotted(node.func.value)
            if container is None:
                continue
            if node.func.attr in _FILLS and node.args and not node.keywords:
                fills.setdefault(container, []).append(node.args[-1])
            elif node.func.attr in _MUTATOR_METHODS:
                spoiled.add(container)
    out: dict[str, tuple[str, bool]] = {}
    for text, values in bound.items():
        if len(values) != 1 or values[0] is None or text in spoiled:
            continue
        value = values[0]
        start: list[ast.expr] = []
        if isinstance(value, (ast.ListComp, ast.DictComp)):
            start = [value.elt if isinstance(value, ast.ListComp) else value.value]
        elif isinstance(value, ast.Dict) and value.keys and None not in value.keys:
            start = list(value.values)  # ``nets = {"G": G(), "D": D()}``
        elif isinstance(value, ast.List) and value.elts:
            start = list(value.elts)  # ``models = [Encoder(), Decoder()]``
        elif not _empty_container(value):
            continue
        put = start + fills.get(text, [])
        found = [built_class(v, imports, classes) for v in put]
        if not put or any(f is None for f in found):
            continue
        kind = "dict" if isinstance(value, (ast.Dict, ast.DictComp)) else "list"
        if isinstance(value, ast.Call):
            kind = value.func.id  # type: ignore[attr-defined]  # ``dict()``, ``list()``
        out[text] = (kind, any(bool(f[2]) for f in found if f is not None))
    return out


_MUTATOR_METHODS = frozenset(
    {"extend", "update", "setdefault", "pop", "popitem", "remove", "clear", "__setitem__"}
)


def _empty_container(value: ast.expr) -> bool:
    if isinstance(value, (ast.List, ast.Dict)):
        return not (value.elts if isinstance(value, ast.List) else value.keys)
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in _EMPTY
        and not value.args
        and not value.keywords
    )


def _forwarded_receivers(
    index: FileIndex,
    receivers: set[str],
    imports: ImportMap,
    rebound: set[str],
    models: dict[str, ModelInfo],
) -> None:
    """Mode receivers run through a function of this file: ``self.model.train()``
    then ``self.concatenated_forward(self.model, ids)``, whose body calls that
    parameter (``model(ids)``). A mode call and a forward, as ``mode+call``."""
    for scope in [None, *index.functions]:
        for node in index.scope_nodes(scope):
            if not isinstance(node, ast.Call):
                continue
            res = index.resolve(node, scope)
            if res is None:
                continue
            for param, arg in res.args.items():
                if arg not in receivers or arg in models:
                    continue
                root = arg.split(".")[0]
                if (root in imports.names and root not in rebound) or root in index.classes:
                    continue
                if _calls_name(index, res.callee.node, param):
                    models[arg] = ModelInfo(arg, None, None, None, "mode+call")


def _calls_name(index: FileIndex, fn: FuncNode, name: str) -> bool:
    """``fn``'s own code calls ``name(...)`` or ``name.forward(...)``."""
    for node in index.scope_nodes(fn):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "forward":
                func = func.value
            if isinstance(func, ast.Name) and func.id == name:
                return True
    return False


def _rebound_imports(tree: ast.Module, imports: ImportMap) -> set[str]:
    """Imported names the module's own code rebinds to a call's result
    (``import model`` then ``model = model.Net(...)``): after that the name is
    an instance, which may be a model like any other."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id in imports.names:
                    out.add(t.id)
    return out


def module_attributes(
    cls: ast.ClassDef,
    index: FileIndex,
    imports: ImportMap,
    classes: ModuleClasses,
    models: dict[str, ModelInfo],
    _seen: frozenset[str] = frozenset(),
) -> frozenset[str]:
    """Attributes a local class assigns a module to (``self.fc = nn.Linear(...)``,
    ``self.decoder = decoder`` where ``decoder`` is a model), bases included."""
    found: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target, value in assignment_pairs(node):
                if not (isinstance(target, ast.Attribute) and dotted(target.value) == "self"):
                    continue
                inner = dotted(unwrap_built(value, imports))
                if built_class(value, imports, classes) is not None or (
                    inner is not None and inner in models
                ):
                    found.add(target.attr)
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in index.classes and base.id not in _seen:
            found |= module_attributes(
                index.classes[base.id], index, imports, classes, models, _seen | {cls.name}
            )
    return frozenset(found)


def forward_path(
    call: ast.Call,
    is_model: Callable[[str], bool],
    submodule: Callable[[str, str], bool],
) -> str | None:
    """The path whose forward ``call`` runs, or None: ``M(...)`` and
    ``M.forward(...)`` run ``M``; ``M.sub(...)`` runs ``M.sub`` when that is a
    model path itself or ``submodule(M, "sub")`` (M's class in this file
    assigns a module to ``self.sub``). Any other method is not a forward: a
    plain method (``model.make_trg_mask(x)``) of a known class, or an unknown
    method of an unknown class (``model.generate(x)``) -- precision first."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        owner = dotted(func.value)
        return owner if owner is not None and is_model(owner) else None
    text = dotted(func)
    if text is None:
        return None
    if is_model(text):
        return text
    owner, _, attr = text.rpartition(".")
    if owner and attr not in MODULE_METHODS and is_model(owner) and submodule(owner, attr):
        return text
    if owner and attr in library.HELD_AS and is_model(owner):
        # ``generator.module(x)``: the module a wrapper holds (or a submodule
        # named so): part of ``generator``, whose mode is the one that matters.
        return text
    return None


def _propagate(tree: ast.Module, index: FileIndex, models: dict[str, ModelInfo]) -> None:
    """Parameters that receive a model, and attributes assigned one, are models."""
    scopes: list[tuple[list[ast.AST], FuncNode | None]] = [(index.scope_nodes(None), None)]
    scopes += [(index.scope_nodes(fn), fn) for fn in index.functions]
    # What each pass reads, in node order, computed once: ``target = value``
    # (both dotted) and the (parameter, dotted argument) pairs of each call
    # of a function of this file.
    moves: list[tuple[str, str] | list[tuple[str, str]]] = []
    for nodes, scope in scopes:
        for node in nodes:
            if isinstance(node, ast.Assign):
                if len(node.targets) == 1:
                    # ``model = self.train()``: a module's self-returning
                    # method gives back the module itself
                    target = dotted(node.targets[0])
                    value = dotted(strip_self_returning(node.value))
                    if target and value:
                        moves.append((target, value))
            elif isinstance(node, ast.Call):
                res = index.resolve(node, scope)
                if res is not None:
                    pairs = [(param, arg) for param, arg in res.args.items() if arg is not None]
                    if pairs:
                        moves.append(pairs)
    for _ in range(4):
        added = False
        for move in moves:
            if isinstance(move, tuple):
                target, value = move
                if value in models and target not in models:
                    added = True
                    models[target] = _derived(target, models[value])
                continue
            for param, arg in move:
                if arg in models and (param not in models or _weak(models[param])):
                    added = True
                    models[param] = _derived(param, models[arg])
        if not added:
            return


def _weak(info: ModelInfo) -> bool:
    return info.evidence in ("mode+call", "call+parameters", "loaded+use")


def _derived(key: str, src: ModelInfo) -> ModelInfo:
    # A loader's result stays one (what proves it a module is read from its uses).
    evidence = "loaded+use" if src.evidence == "loaded+use" else "argument"
    return ModelInfo(
        key, src.built_at, src.class_name, src.has_rnn, evidence, src.forwards, src.container
    )
