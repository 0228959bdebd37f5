"""Where trained weights are loaded into a model, read from the source.

A *load* puts weights into an object that is then used as a model:

- ``model.load_state_dict(state)`` (not ``target.load_state_dict(net.state_dict())``,
  which copies another model's weights: an RL target network);
- ``model = torch.load(path)`` of a whole module, also out of a checkpoint
  dict (``ckpt = torch.load(path); model = ckpt["model"].float()``);
- ``model = Net.load_from_checkpoint(path)`` (Lightning returns the module in
  train mode; its docs call ``eval()`` after it);
- ``model = load_model(path)``: a function that returns a model it loaded
  without switching its mode (``returns_loaded_model``), of this file or of
  another file of the run (``ModuleSummary.loaders``).

Left out on purpose: ``torch.jit.load`` / ``torch.export.load`` (TorchScript
and exported programs carry their own mode), ``from_pretrained`` (transformers
returns models in eval mode). Whether the result is a module at all is
decided by its use: a value that is never called is a state dict.

``LoadFinder`` lists the loads of one file (``Load``: the model, the
statement, its scope); RNF006 (``rnnfix.analysis.modes.inference``) follows them.
The project index records the loader functions of every file
(``returns_loaded_model``).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.flow import chained_mode
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.scopes import FileIndex, FuncNode
from rnnfix.analysis.syntax.walks import FUNCTIONS, nodes_of, walk_local, walk_tree
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.classfacts import weight_loaders
from rnnfix.analysis.torch.library import torchvision_builder
from rnnfix.analysis.torch.models import ModuleClasses, built_class, unwrap_built

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext

Qualname = Callable[[ast.expr], "str | None"]

_TORCH_LOADS = frozenset({"torch.load", "torch.serialization.load"})


def unwrap_value(value: ast.AST) -> tuple[ast.AST, bool]:
    """``torch.load(p)["model"].float().to(dev)`` -> (``torch.load(p)``, True):
    the value under self-returning methods, subscripts and ``.get(...)``;
    the flag says whether something was taken out of it (a checkpoint dict)."""
    picked = False
    while True:
        stripped = strip_self_returning(value)
        if stripped is not value:
            value = stripped
        elif isinstance(value, ast.Subscript):
            value, picked = value.value, True
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr == "get"
            and value.args
        ):
            value, picked = value.func.value, True
        else:
            return value, picked


def is_torch_load(value: ast.AST, qualname: Qualname) -> bool:
    if not isinstance(value, ast.Call):
        return False
    qual = qualname(value.func)
    # ``torch`` from a star import (``from model import *``) has no qualname.
    return qual in _TORCH_LOADS or (qual is None and dotted(value.func) == "torch.load")


def is_checkpoint_load(value: ast.AST) -> bool:
    """``Net.load_from_checkpoint(path)`` (Lightning)."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "load_from_checkpoint"
    )


def state_dict_receiver(call: ast.Call) -> str | None:
    """``model.load_state_dict(state)`` -> ``model`` (``model.module`` -> ``model``:
    a data-parallel wrapper's only child); None for any other call and for a
    copy of another object's weights (``target.load_state_dict(net.state_dict())``)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "load_state_dict" and call.args):
        return None
    arg = call.args[0]
    if (
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.attr == "state_dict"
    ):
        return None
    receiver = dotted(func.value)
    if receiver is not None and receiver.endswith(".module"):
        receiver = receiver[: -len(".module")]
    return receiver


NOT_A_LOADER = 0
LOADER = 1  # returns a loaded object of a class it does not show
MODULE_LOADER = 2  # ... built from an ``nn.Module`` class (``is_module`` says so)


def returns_loaded_model(
    func: ast.AST, qualname: Qualname, is_module: Callable[[ast.expr], bool] = lambda _: False
) -> int:
    """Whether ``func`` returns an object it loaded weights into (or loaded
    whole) and never switched the mode of: ``def load_model(p): m = Net();
    m.load_state_dict(torch.load(p)); return m`` (``MODULE_LOADER`` when
    ``is_module`` says what it built ``m`` from is a module class). A helper
    that calls ``m.eval()`` (or ``train()``) anywhere manages the mode itself."""
    if not isinstance(func, FUNCTIONS):
        return NOT_A_LOADER
    built: set[str] = set()
    bindings: dict[str, int] = {}
    loaded: set[str] = set()
    switched: set[str] = set()
    checkpoints: set[str] = set()
    returned: list[ast.expr] = []
    for n in walk_local(func):
        if isinstance(n, ast.Call):
            receiver = state_dict_receiver(n)
            if receiver is not None:
                loaded.add(receiver)
            elif (
                isinstance(n.func, ast.Attribute)
                and n.func.attr in ("eval", "train")
                and (text := dotted(strip_self_returning(n.func.value))) is not None
            ):
                switched.add(text)
        elif isinstance(n, ast.Assign) and len(n.targets) == 1:
            target = dotted(n.targets[0])
            if target is None:
                continue
            if dotted(unwrap_value(n.value)[0]) != target:  # ``m = m.to(dev)`` keeps it
                bindings[target] = bindings.get(target, 0) + 1
            if chained_mode(n.value) is not None:
                switched.add(target)
                continue
            if is_module(n.value):
                built.add(target)
            inner, picked = unwrap_value(n.value)
            if is_torch_load(inner, qualname) and not picked:
                checkpoints.add(target)
                loaded.add(target)  # a whole module, if it is used as one
            elif is_checkpoint_load(inner) or (
                picked and isinstance(inner, ast.Name) and inner.id in checkpoints
            ):
                loaded.add(target)
            elif picked and is_torch_load(inner, qualname):
                loaded.add(target)
        elif isinstance(n, ast.Return) and n.value is not None:
            returned.append(n.value)
    if not returned or not loaded:
        return NOT_A_LOADER
    texts: set[str] = set()
    for value in returned:
        if chained_mode(value) is not None:
            return NOT_A_LOADER  # ``return model.eval()``
        text = dotted(strip_self_returning(value))
        if text is None or text not in loaded or text in switched:
            return NOT_A_LOADER
        if bindings.get(text, 0) > 1:
            # Bound on several paths (``model = attempt_load(p)`` on one, a
            # loaded ``DetectionModel`` on another): what it returns may come
            # from code that sets the mode itself.
            return NOT_A_LOADER
        texts.add(text)
    return MODULE_LOADER if texts <= built else LOADER


def pretrained_build(value: ast.AST, qualname: Qualname) -> str | None:
    """A library builder called for trained weights, which returns the model
    in train mode: ``torchvision.models.resnet50(weights=...)`` (or
    ``pretrained=True``), ``timm.create_model(name, pretrained=True)``. The
    message's name for it; None for any other call, and for one that asks for
    no weights. Not ``torch.hub.load``: what an entry point returns is its
    own (YOLOv5's comes in eval mode, behind its own ``no_grad``)."""
    if not isinstance(value, ast.Call):
        return None
    qual = qualname(value.func) or ""
    keywords = {k.arg: k.value for k in value.keywords if k.arg is not None}
    pretrained = keywords.get("pretrained")
    if qual == "timm.create_model":
        if pretrained is None and len(value.args) > 1:
            pretrained = value.args[1]
        on = isinstance(pretrained, ast.Constant) and pretrained.value is True
        return "`timm.create_model(pretrained=True)`" if on else None
    if torchvision_builder(qual):
        weights = keywords.get("weights")
        if weights is not None and not (
            isinstance(weights, ast.Constant) and weights.value is None
        ):
            return f"`{qual.rsplit('.', 1)[-1]}(weights=...)`"
        if isinstance(pretrained, ast.Constant) and pretrained.value is True:
            return f"`{qual.rsplit('.', 1)[-1]}(pretrained=True)`"
    return None


def loads_into_param(func: ast.AST) -> tuple[int, str] | None:
    """``def load_checkpoint(model, path): model.load_state_dict(torch.load(path)
    ["model"])``: a checkpoint helper that loads weights into one of its
    parameters (also ``param.module``) -> (its position, its name). None when
    it switches a mode (it manages the mode itself), runs a training step,
    or loads into none or several of its parameters."""
    if not isinstance(func, FUNCTIONS):
        return None
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    loaded: set[str] = set()
    for n in walk_local(func):
        if not isinstance(n, ast.Call):
            continue
        if module_mode_switch(n) is not None:
            return None
        if isinstance(n.func, ast.Attribute) and n.func.attr in ("backward", "step", "zero_grad"):
            return None  # it trains: a fine-tuning helper, not a loader
        receiver = state_dict_receiver(n)
        if receiver is not None and receiver in params:
            loaded.add(receiver)
    if len(loaded) != 1:
        return None
    name = loaded.pop()
    return params.index(name), name


@dataclass(frozen=True)
class Load:
    model: str  # dotted text as written: "model", "args.model"
    stmt: ast.stmt  # the statement that loads (``eval()`` goes right after it)
    scope: FuncNode | None  # None: module level
    how: str  # for messages: "`load_state_dict`", "`torch.load`", "`load_model()`"
    cls: ast.expr | None = None  # ``Net`` of ``Net.load_from_checkpoint(...)``
    built_module: bool = False  # a loader function built it from an ``nn.Module`` class


class LoadFinder:
    """The loads of one file: ``may_load()`` is the cheap syntactic test,
    ``loads()`` reads the file's functions and classes (``FileIndex``,
    ``ModuleClasses``) but not the mode flow, which most files that pass
    ``may_load`` never need: they load nothing that is then run."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx

    @functools.cached_property
    def index(self) -> FileIndex:
        return self.ctx.facts.index

    @functools.cached_property
    def classes(self) -> ModuleClasses:
        return ModuleClasses(self.index, self.ctx.facts.imports, self.ctx.facts.project)

    def may_load(self) -> bool:
        """A cheap syntactic test before the mode flow is built: something is
        loaded into (or as) a name that the file then calls or passes on.
        Most files that mention a load (a library's ``load_state_dict``
        override, ``json.load``) fail it."""
        view = self.ctx.facts.project
        run_names = frozenset(view.bindings) if view is not None else frozenset()
        nodes = walk_tree(self.ctx.tree)
        # Functions a model may be handed to and run by: the file's own, the
        # run's, and the methods of objects built from the file's or the run's
        # classes (``predictor = WordPredictor(); predictor.output_batch(model)``).
        classes = {n.name for n in nodes if isinstance(n, ast.ClassDef)}
        helpers = {n.name for n in nodes if isinstance(n, FUNCTIONS)} | run_names
        helpers |= {
            t.id
            for n in nodes
            if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and isinstance(n.value.func, ast.Name)
            and (n.value.func.id in run_names or n.value.func.id in classes)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        loaded: set[str] = set()
        picks: list[tuple[str, str]] = []  # ``model = ckpt["model"]``: (model, ckpt)
        used: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.Call):
                receiver = state_dict_receiver(node)
                if receiver is not None:
                    loaded.add(receiver)
                text = dotted(node.func)
                if text is None:
                    continue
                used.add(text[: -len(".forward")] if text.endswith(".forward") else text)
                if text.split(".")[0] in helpers or text.rsplit(".", 1)[-1] in helpers:
                    for a in (*node.args, *(k.value for k in node.keywords)):
                        if (t := dotted(unwrap_value(a)[0])) is not None:
                            used.add(t)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                text = dotted(node.value.func) or ""
                # ``load_checkpoint(model, path)``, ``resume_from_ckpt(p, model)``
                if "load" in text.lower() or text.split(".")[0] in run_names:
                    loaded.update(t for a in node.value.args if (t := dotted(a)) is not None)
                # ``model.load_weights(path)``: a weight-loading method of its class
                func = node.value.func
                if isinstance(func, ast.Attribute) and "load" in func.attr.lower():
                    _add(loaded, dotted(func.value))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = dotted(node.targets[0])
                if target is None:
                    continue
                inner, picked = unwrap_value(node.value)
                if isinstance(inner, ast.Call):
                    text = dotted(inner.func) or ""
                    if (
                        "load" in text.lower()
                        or text.split(".")[0] in run_names
                        or any(k.arg in ("pretrained", "weights") for k in inner.keywords)
                    ):
                        loaded.add(target)  # ``models.resnet50(weights=...)`` too
                    elif inner.args and (t := dotted(unwrap_value(inner.args[0])[0])):
                        picks.append((target, t))  # ``model = nn.DataParallel(net)``
                    elif (t := cut_from(inner, self.ctx.facts.imports.qualname)) is not None:
                        picks.append((target, t))  # ``nn.Sequential(*list(net.children())[:-1])``
                elif isinstance(inner, ast.Name):
                    # ``model = ckpt["model"]``; ``model = net.to(device)``
                    picks.append((target, inner.id))
        loaded.update(target for target, source in picks if source in loaded)
        return bool(loaded & used)

    def loads(self) -> list[Load]:
        if not self.may_find():
            return []
        out: list[Load] = []
        index = self.index
        scopes: list[FuncNode | None] = [None, *index.functions]
        for scope in scopes:
            if scope is not None and (
                _is_test(self.ctx, scope) or _module_method(self.classes, self.ctx, scope)
            ):
                continue  # a test, or a module's own method: its user sets the mode
            checkpoints: set[str] = set()
            for node in index.scope_nodes(scope):
                if not isinstance(node, ast.stmt):
                    continue
                load = self._load_of(node, scope, checkpoints)
                if load is not None and not self._pretrained(load.model):
                    out.append(load)
        return out

    def may_find(self) -> bool:
        """A necessary condition for ``loads()`` to find anything, read from
        the whole tree without the file index or the module classes
        (``loads()`` builds both, and asks the project summaries about the
        file's base classes, for every file that passes ``may_load``; almost
        none of them has a load). ``_load_of`` finds

        - a ``load_state_dict``, ``torch.load`` or ``load_from_checkpoint``
          call of this file (``state_dict_receiver``, ``is_torch_load``,
          ``is_checkpoint_load``; a pick of a checkpoint dict needs a
          ``torch.load``), also the one inside a function of this file that
          ``_loads_into`` or ``returns_loaded_model`` reads;
        - a statement ``X.<name with "load">(...)`` (``_own_loader``);
        - or a loader of another file of the run: an ``Assign`` to one dotted
          target, not a chained mode call, of a call, not picked, whose
          function ``ProjectView.may_be_loader`` lets through."""
        ctx = self.ctx
        nodes = walk_tree(ctx.tree)
        qualname = ctx.facts.imports.qualname
        for node in nodes:
            if isinstance(node, ast.Call) and (
                state_dict_receiver(node) is not None
                or is_torch_load(node, qualname)
                or is_checkpoint_load(node)
                or pretrained_build(node, qualname) is not None
            ):
                return True
            if isinstance(node, ast.Expr) and _method_load_text(node.value) is not None:
                return True  # ``model.load_weights(path)``: ``_own_loader``
        view = ctx.facts.project
        if view is None or not view.bindings:
            return False
        for stmt in nodes:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                if view.may_be_loader(stmt.value.func):  # ``load_checkpoint(model, p)``
                    return True
                continue
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            if dotted(stmt.targets[0]) is None or chained_mode(stmt.value) is not None:
                continue
            inner, picked = unwrap_value(stmt.value)
            if isinstance(inner, ast.Call) and not picked and view.may_be_loader(inner.func):
                return True
        return False

    def _load_of(
        self, stmt: ast.stmt, scope: FuncNode | None, checkpoints: set[str]
    ) -> Load | None:
        if isinstance(stmt, (ast.Expr, ast.Assign)):
            value = stmt.value
            if isinstance(value, ast.Call):
                receiver = state_dict_receiver(value)
                if receiver is not None:
                    return Load(receiver, stmt, scope, "`load_state_dict`")
                into = self._loads_into(value, scope)
                # ``load_checkpoint(model, p)``; ``epoch = load_checkpoint(model, p)``
                if into is not None and (isinstance(stmt, ast.Expr) or _binds_other(stmt, into)):
                    return Load(into, stmt, scope, f"`{_text(value.func)}()`")
                own = self._own_loader(value) if isinstance(stmt, ast.Expr) else None
                if own is not None:
                    return Load(own, stmt, scope, f"`{_text(value.func)}()`", None, True)
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return None
        target = dotted(stmt.targets[0])
        if target is None or chained_mode(stmt.value) is not None:
            return None  # ``torch.load(p).eval()``: the author set the mode
        inner, picked = unwrap_value(stmt.value)
        if is_torch_load(inner, self.ctx.facts.imports.qualname):
            if not picked:
                checkpoints.add(target)
            return Load(target, stmt, scope, "`torch.load`")
        if picked and isinstance(inner, ast.Name) and inner.id in checkpoints:
            return Load(target, stmt, scope, "`torch.load`")
        built = pretrained_build(inner, self.ctx.facts.imports.qualname) if not picked else None
        if built is not None:
            return Load(target, stmt, scope, built)
        if is_checkpoint_load(inner):
            assert isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
            return Load(target, stmt, scope, "`load_from_checkpoint`", inner.func.value)
        if isinstance(inner, ast.Call) and not picked:
            found = self._loader(inner, scope)
            if found is not None:
                return Load(target, stmt, scope, f"`{_text(inner.func)}()`", None, found)
        return None

    def _loads_into(self, call: ast.Call, scope: FuncNode | None) -> str | None:
        """``load_checkpoint(model, path)``: a function of this file that calls
        ``load_state_dict`` on the parameter ``model`` is passed as, and
        switches its mode nowhere -> ``model``."""
        res = self.index.resolve(call, scope)
        if res is None:
            return self._loads_into_elsewhere(call)
        if res.callee.cls is not None:
            return None
        loaded: set[str] = set()
        for n in walk_local(res.callee.node):
            if not isinstance(n, ast.Call):
                continue
            if module_mode_switch(n) is not None:
                return None  # the helper sets the mode itself
            receiver = state_dict_receiver(n)
            if receiver is not None:
                loaded.add(receiver)
        found = [arg for param, arg in res.args.items() if param in loaded and arg is not None]
        return found[0] if len(found) == 1 else None

    def _own_loader(self, call: ast.Call) -> str | None:
        """``model.load_weights(path)``: ``model`` is built (every assignment
        of it in the file) from a module class, of this file or of another
        file of the run, whose method of that name loads trained weights into
        the instance (``classfacts.weight_loaders``) -> ``model``."""
        receiver = _method_load_text(call)
        if receiver is None:
            return None
        assert isinstance(call.func, ast.Attribute)
        method = call.func.attr
        values = [
            n.value
            for n in walk_tree(self.ctx.tree)
            if isinstance(n, ast.Assign) and any(dotted(t) == receiver for t in n.targets)
        ]
        view = self.ctx.facts.project
        for value in values:
            built = unwrap_built(value, self.ctx.facts.imports)
            if not isinstance(built, ast.Call):
                return None
            func = built.func
            if isinstance(func, ast.Name) and func.id in self.index.classes:
                cls = self.index.classes[func.id]
                if func.id not in self.classes.modules or method not in weight_loaders(cls):
                    return None
                continue
            found = view.lookup_class(func) if view is not None else None
            if found is None or not found.is_module or method not in found.weight_loaders:
                return None
        return receiver if values else None

    def _loads_into_elsewhere(self, call: ast.Call) -> str | None:
        """``load_checkpoint(model, path)`` of another file of the run
        (``ModuleSummary.loads_into``) -> the argument it loads into."""
        project = self.ctx.facts.project
        found = project.loads_into(call.func) if project is not None else None
        if found is None:
            return None
        index, name = found
        args = [k.value for k in call.keywords if k.arg == name]
        if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args):
            args.append(call.args[index])
        return dotted(args[0]) if len(args) == 1 else None

    def _loader(self, call: ast.Call, scope: FuncNode | None) -> bool | None:
        """``call`` runs a function that returns a loaded model: True when it
        built it from an ``nn.Module`` class; None when it is no loader."""
        res = self.index.resolve(call, scope)
        if res is not None:
            if res.callee.cls is not None:
                return None
            found = returns_loaded_model(
                res.callee.node, self.ctx.facts.imports.qualname, self._builds_module
            )
            return None if found == NOT_A_LOADER else found == MODULE_LOADER
        project = self.ctx.facts.project
        return project.loader(call.func) if project is not None else None

    def _builds_module(self, value: ast.expr) -> bool:
        return built_class(value, self.ctx.facts.imports, self.classes) is not None

    def _pretrained(self, model: str) -> bool:
        """Bound to ``from_pretrained(...)`` (transformers returns eval models)."""
        for node in nodes_of(self.ctx.tree, ast.Assign):
            if isinstance(node, ast.Assign) and any(dotted(t) == model for t in node.targets):
                for n in ast.walk(node.value):
                    if isinstance(n, ast.Attribute) and n.attr == "from_pretrained":
                        return True
        return False


def _method_load_text(value: ast.expr) -> str | None:
    """``model.load_weights(path)`` -> ``model``: a method named for loading
    called on a dotted receiver (what ``_own_loader`` reads further)."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return None
    if "load" not in value.func.attr.lower() or value.func.attr == "load_state_dict":
        return None
    return dotted(value.func.value)


def _add(found: set[str], text: str | None) -> None:
    if text is not None:
        found.add(text)


def _binds_other(stmt: ast.stmt, model: str) -> bool:
    """``epoch = load_checkpoint(model, p)``: what the helper returns (a step,
    the checkpoint) is bound to names other than the model's."""
    if not isinstance(stmt, ast.Assign):
        return False
    root = model.split(".")[0]
    names = {dotted(t) for t in stmt.targets for t in _flat(t)}
    return all(n is not None and n.split(".")[0] != root for n in names)


def _flat(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [x for e in target.elts for x in _flat(e)]
    return [target]


def _is_test(ctx: FileContext, fn: FuncNode) -> bool:
    """A test pytest or unittest collects: ``test_*`` (a bare ``test(...)`` of a
    script is evaluation code), or any function of a ``Test*`` class."""
    owner = ctx.facts.parents.get(fn)
    in_test_class = isinstance(owner, ast.ClassDef) and owner.name.startswith("Test")
    return fn.name.startswith("test_") or in_test_class


def _module_method(classes: ModuleClasses, ctx: FileContext, fn: FuncNode) -> bool:
    owner = ctx.facts.parents.get(fn)
    if not isinstance(owner, ast.ClassDef):
        return False
    return (
        owner.name in classes.modules
        or owner.name in classes.lightning
        or any(isinstance(s, FUNCTIONS) and s.name == "forward" for s in owner.body)
    )


def _text(expr: ast.AST) -> str:
    return dotted(expr) or "..."


def cut_from(value: ast.AST, qualname: Callable[[ast.expr], str | None]) -> str | None:
    """The model ``nn.Sequential(*list(model.children())[:-1])`` is cut from:
    a feature extractor made of the model's own layer objects (the mode
    ``eval()`` gives the model is theirs), so its forwards are the model's."""
    if not (
        isinstance(value, ast.Call)
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], ast.Starred)
        and qualname(value.func) == "torch.nn.Sequential"
    ):
        return None
    listed = value.args[0].value
    if isinstance(listed, ast.Subscript):
        listed = listed.value
    if not (
        isinstance(listed, ast.Call)
        and isinstance(listed.func, ast.Name)
        and listed.func.id == "list"
        and len(listed.args) == 1
    ):
        return None
    children = listed.args[0]
    if (
        isinstance(children, ast.Call)
        and isinstance(children.func, ast.Attribute)
        and children.func.attr == "children"
        and not children.args
    ):
        return dotted(children.func.value)
    return None
