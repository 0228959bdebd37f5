"""RNF003's view of the models: which paths it evaluates and where they run
a forward. Their modes are the mode flow's (``ctx.facts.modes``), which
tracks every receiver of a mode call too.

``ModelIndex`` is a query on the mode flow's models (``rnnfix.analysis.torch.models``):
they are models here too, and so is any path with a mode call
(``.eval()``, ``.train()``, ``.train(False)``) in the file or a parameter
annotated as an ``nn.Module``. ``is_known_module`` is the stricter question
asked before inserting ``eval()``. Forwards are ``models.forward_path``'s.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rnnfix.analysis.grads.gradctx import Handlers, LocalFunctions, gradient_uses
from rnnfix.analysis.modes.state import is_prefix
from rnnfix.analysis.syntax.names import BUILTINS, dotted, parent_path, strip_self_returning
from rnnfix.analysis.syntax.scopes import Resolved, names_bound
from rnnfix.analysis.syntax.walks import (
    FUNCTIONS,
    nodes_of,
    parameters,
    scope_of,
    walk_local,
    walk_tree,
)
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.analysis.torch.classfacts import module_functions, returned_class
from rnnfix.analysis.torch.forwards import grad_off_forwards
from rnnfix.analysis.torch.models import ModelInfo, built_class, unwrap_built

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext

# Methods only a module has: what a forward returns (tensors) never has them.
_MODULE_ONLY_METHODS = frozenset(
    {"load_state_dict", "state_dict", "parameters", "named_parameters", "modules", "children"}
)


def _grad_context(node: ast.AST) -> bool:
    """A ``with`` whose context names a grad switch (``torch.no_grad()``,
    ``inference_mode``, ``set_grad_enabled``, ``enable_grad``), read by name."""
    if not isinstance(node, (ast.With, ast.AsyncWith)):
        return False
    for item in node.items:
        expr = item.context_expr
        func = expr.func if isinstance(expr, ast.Call) else expr
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _GRAD_SWITCHES:
            return True
    return False


_GRAD_SWITCHES = frozenset({"no_grad", "inference_mode", "set_grad_enabled", "enable_grad"})

# Calls that make a method more than a forward wrapper.
_TRAINING_CALLS = frozenset({"backward", "step", "zero_grad"})


def _module_like(cls: ast.ClassDef, modules: Iterable[str]) -> bool:
    """A module class of this file, or a class that reads as one though its
    base is imported (flair's ``flair.nn.Model`` subclasses): it defines
    ``forward``/``forward_loss``, or calls a module's own method on ``self``
    (``self.eval()``, ``self.parameters()``, ``self.to(device)``)."""
    if cls.name in modules:
        return True
    for n in walk_tree(cls):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in _MODULE_DEFS:
            return True
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in _SELF_MODULE_CALLS
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "self"
        ):
            return True
    return False


_MODULE_DEFS = frozenset({"forward", "forward_loss"})
_SELF_MODULE_CALLS = frozenset(
    {"eval", "train", "parameters", "named_parameters", "modules", "children", "state_dict",
     "load_state_dict", "to", "cuda", "zero_grad", "register_buffer", "add_module"}
)  # fmt: skip


class ModelIndex:
    """``extra``: models another analysis found (the mode flow's, which follows
    models passed as arguments) are models here too."""

    def __init__(self, ctx: FileContext, extra: Iterable[str] = ()) -> None:
        self.ctx = ctx
        self.extra = frozenset(extra)

    @functools.cached_property
    def models(self) -> frozenset[str]:
        found = self._own | self.extra
        # A Python builtin the file never binds (``int``, ``len``) is not a
        # model, whatever a lookup through the project index made of it
        # (fairseq's ``_infer_slurm_init`` was judged to "run ``int``").
        odd = {m for m in found if m in BUILTINS}
        return found - (odd - self._bound_names) if odd else found

    @functools.cached_property
    def _bound_names(self) -> frozenset[str]:
        """Names the file binds itself (assignments, definitions, imports,
        parameters): a builtin shadowed there may be anything."""
        return names_bound(self.ctx.tree)

    def is_known_module(self, key: str) -> bool:
        """Whether the file shows ``key`` is a torch module whose mode matters:
        a mode call on it (or on an object holding it), built from an
        ``nn.Module`` class (directly, or passed on from such an object), or
        annotated as one. An object of an imported, unknown class that is only
        called and has parameters (a loss with weights of its own) is not:
        inserting ``eval()`` on it would rest on a guess."""
        if any(is_prefix(p, key) for p in self._own):
            return True
        info = self.ctx.facts.modes.model_info(key)
        if info is not None and info.evidence == "loaded+use":
            # ``net = torch.hub.load(...)`` (or ``torch.load``): a module once a
            # method only a module has is called on it (``net.parameters()``);
            # being called alone proves no class (a pickled callable).
            return key in self._module_method_receivers
        if info is None or info.built_at is None:
            return False
        # A class of another file of the run (through the project index) is an
        # nn.Module, but that alone does not show its mode matters (a weighted
        # loss): only its Dropout/BatchNorm layers do (issue 24.4).
        return self.builds_module(info.built_at) or self._project_mode_layers(info.built_at)

    @functools.cached_property
    def _module_method_receivers(self) -> frozenset[str]:
        """Paths a method only an ``nn.Module`` has is called on."""
        return frozenset(
            text
            for n in walk_tree(self.ctx.tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in _MODULE_ONLY_METHODS
            and (text := dotted(n.func.value)) is not None
        )

    def _project_mode_layers(self, built: ast.expr) -> bool:
        view = self.ctx.facts.project
        call = unwrap_built(built, self.ctx.facts.imports)
        if view is None or not isinstance(call, ast.Call):
            return False
        found = view.lookup_class(call.func)
        return found is not None and found.is_module and found.mode_layers

    @functools.cached_property
    def _own(self) -> frozenset[str]:
        found: set[str] = set()
        annotated: set[str] = set()
        for n in walk_tree(self.ctx.tree):
            switch = module_mode_switch(n) if n.__class__ is ast.Call else None
            if switch is not None and switch.target is not None:
                found.add(switch.target)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                if self.builds_module(n.value):
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    found.update(t for t in map(dotted, targets) if t)
            elif isinstance(n, ast.arg) and n.annotation is not None:
                if self._is_module_class(n.annotation):
                    annotated.add(n.arg)
        return frozenset(found | (annotated - self._builds_models(found)))

    def _builds_models(self, models: set[str]) -> set[str]:
        """Names whose call builds a model: ``agent = Model(envs).to(device)``
        followed by ``agent.eval()`` or ``agent.load_state_dict(...)``. A
        forward returns tensors, not modules, so such a name is a class even
        when it is annotated ``Model: torch.nn.Module`` (cleanrl's evaluators
        take the class that way); an ``eval()`` on it would raise TypeError."""
        used_as_module = set(models)
        for n in nodes_of(self.ctx.tree, ast.Call):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in _MODULE_ONLY_METHODS
                and (receiver := dotted(n.func.value))
            ):
                used_as_module.add(receiver)
        out: set[str] = set()
        for n in nodes_of(self.ctx.tree, ast.Assign):
            if not isinstance(n, ast.Assign):
                continue
            value = strip_self_returning(n.value)
            if not isinstance(value, ast.Call) or not (name := dotted(value.func)):
                continue
            if any(dotted(t) in used_as_module for t in n.targets):
                out.add(name)
        return out

    def builds_module(self, value: ast.AST) -> bool:
        """``value`` builds a torch module: ``Net()``, ``nn.LSTM(...).to(dev)``."""
        flow = self.ctx.facts.modes
        found = built_class(value, flow.imports, flow.classes)
        # A module class of another file of the run (through the project index)
        # does not count here: nothing in this file shows its mode matters (a
        # weighted loss), so RNF003 decides as a single-file run would.
        return found is not None and (found[1] in flow.classes.modules or "." in found[1])

    def _is_module_class(self, annotation: ast.expr) -> bool:
        return self.builds_module(ast.Call(func=annotation, args=[], keywords=[]))

    def called_model(self, call: ast.Call) -> str | None:
        """The model a forward call runs: ``model(x)``, ``model.forward(x)``,
        ``model.decoder(x)`` (a known submodule) -> "model" (the longest model
        prefix); None for a plain method (``model.make_mask(x)``)."""
        flow = self.ctx.facts.modes
        alias = self._bound_alias(call)
        if alias is not None:
            return alias
        text = flow.forward_path(call, self.models.__contains__)
        if text is None:
            return None
        if text in self.models:
            return text
        parts = text.split(".")
        for i in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:i])
            if prefix in self.models:
                return prefix
        return None

    def _bound_alias(self, call: ast.Call) -> str | None:
        """``forward = self.net.forward`` (or ``net = self.net``), then
        ``forward(x)``: a plain name its function binds once, to a model or
        its ``forward``, and binds no other way (SR-LSTM's ``val_epoch``)."""
        func = call.func
        if not isinstance(func, ast.Name):
            return None
        scope = scope_of(self.ctx.facts.parents, call)
        if not isinstance(scope, FUNCTIONS) or func.id in parameters(scope):
            return None
        values: list[ast.expr] = []
        for n in walk_local(scope):
            if isinstance(n, ast.Name) and n.id == func.id and not isinstance(n.ctx, ast.Load):
                parent = self.ctx.facts.parents.get(n)
                if not (isinstance(parent, ast.Assign) and parent.targets == [n]):
                    return None  # bound by a ``for``, a tuple, an augmented assignment
                values.append(parent.value)
        if len(values) != 1:
            return None
        text = dotted(values[0])
        if text is None:
            return None
        if text.endswith(".forward"):
            text = text[: -len(".forward")]
        return text if text in self.models and text != func.id else None

    def model_calls(self, roots: list[ast.stmt]) -> dict[str, list[ast.Call]]:
        out: dict[str, list[ast.Call]] = {}
        for root in roots:
            for n in walk_local(root):
                if isinstance(n, ast.Call):
                    m = self.called_model(n)
                    found = (m,) if m is not None else self.wrapped_models(n)
                    found = found or self.helper_models(n) or self.external_models(n)
                    for model in found:
                        out.setdefault(model, []).append(n)
        return out

    def helper_models(self, call: ast.Call) -> tuple[str, ...]:
        """The models a call of a helper of this file runs (issue 36.2): a
        function the model is passed to (``greedy_decode(model, src)``), or a
        method of the calling class that runs ``self.model``
        (``self._process_one_batch(x, y)``), as the mode flow's summary of it
        records its forwards (``Summary.forwards``, through further helpers
        and other files), mapped to this file's names. Only a helper that
        just runs the model: one that switches its mode, trains, takes a
        gradient or decides grad itself (a decorator, a ``with``) manages what
        its callers would be judged on."""
        flow = self.ctx.facts.modes
        scope = scope_of(self.ctx.facts.parents, call)
        res = flow.index.resolve(call, scope if isinstance(scope, FUNCTIONS) else None)
        if res is None:
            return ()
        callee = res.callee
        if callee.cls is not None:
            cls = self.ctx.facts.parents.get(scope)
            if (
                res.receiver != "self"
                or not callee.is_method
                or not isinstance(cls, ast.ClassDef)
                or not self._wraps_for(call, cls)
            ):
                return ()
        reads = self._helper_reads(callee.node)
        if reads is None or not self._may_reach_model(res, reads):
            return ()
        summary = flow.summary(callee)
        if summary.optimizer_step:
            return ()
        out: list[str] = []
        for key in summary.forwards:
            effect = summary.effects.get(key)
            if effect is not None and effect.sets:
                continue  # ``def predict(model, x): model.eval(); ...``: its own mode
            mine = res.caller_key(key)
            model = self._own_model_prefix(mine) if mine is not None else None
            if model is not None and model not in out:
                out.append(model)
        for param, method in self._parameter_methods(callee.node):
            # ``greedy_decode(model, src)`` running ``model.encode(src)``: a
            # forward method of the class of the model this caller passes.
            mine = res.caller_key(param)
            if mine is None or mine in out or mine not in self.models:
                continue
            effect = summary.effects.get(param)
            if (effect is None or not effect.sets) and self._forward_method(
                mine, method, call, grad_off=False
            ):
                out.append(mine)
        return tuple(out)

    def _helper_reads(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str] | None:
        """The names and ``self.<attr>`` paths ``fn`` and the helpers of this
        file it calls, at any depth, read; None when one of them is not a
        plain forward helper (``_plain_body``)."""
        if fn in self._closures:
            return self._closures[fn]
        todo, seen = [fn], {fn}
        found: set[str] | None = set()
        while todo and found is not None:
            body = self._plain_body(todo.pop())
            if body is None:
                found = None
                break
            callees, reads = body
            found |= reads
            for t in callees:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        result = self._closures[fn] = frozenset(found) if found is not None else None
        return result

    def _plain_body(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> tuple[list[ast.FunctionDef | ast.AsyncFunctionDef], set[str]] | None:
        """The helpers of this file ``fn``'s own body calls, and the names and
        ``self.<attr>`` paths it reads; None when ``fn`` is not a plain
        forward helper: a decorator other than a neutral one
        (``@staticmethod``), a mode switch, a grad context, a backward, an
        optimizer step or a gradient use in it."""
        if not isinstance(fn, ast.FunctionDef) or any(
            self._handlers.handling(d) != frozenset() for d in fn.decorator_list
        ):
            return None
        if any(True for _ in gradient_uses(self.ctx, fn)):
            return None
        callees: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        reads: set[str] = set()
        for n in walk_local(fn):
            if module_mode_switch(n) is not None or _grad_context(n):
                return None
            if isinstance(n, ast.Name):
                reads.add(n.id)
            elif isinstance(n, ast.Attribute) and dotted(n.value) == "self":
                reads.add(f"self.{n.attr}")
            elif isinstance(n, ast.Call):
                func = n.func
                if isinstance(func, ast.Attribute) and func.attr in _TRAINING_CALLS:
                    return None
                callees.extend(self._local.targets(n))
        return callees, reads

    def _may_reach_model(self, res: Resolved, reads: frozenset[str]) -> bool:
        """A necessary condition for a key of the helper's summary to map to
        a model of this file (``_own_model_prefix``), read without the
        summary (which needs the mode flow's whole-file pass): a model is
        related by prefix to an argument, is ``self.<attr>`` the helper reads
        (for a method: the receiver is the caller's ``self``), or is rooted in
        a name it reads (a global)."""
        args = [a for a in res.args.values() if a is not None]
        for model in self._known_models:
            root, _, rest = model.partition(".")
            if root == "self" and (f"self.{rest.split('.')[0]}" if rest else "self") in reads:
                return True  # ``self.model``, ``self(x)`` in a method: the receiver's
            if root != "self" and root in reads:
                return True
            if any(is_prefix(a, model) or is_prefix(model, a) for a in args):
                return True
        return False

    @functools.cached_property
    def _known_models(self) -> frozenset[str]:
        """The paths ``_own_model_prefix`` may answer."""
        models = self.ctx.facts.modes.models
        return frozenset(k for k, i in models.items() if i.evidence != "external") | self._own

    @functools.cached_property
    def _closures(self) -> dict[ast.AST, frozenset[str] | None]:
        return {}

    @functools.cached_property
    def _handlers(self) -> Handlers:
        return Handlers(self.ctx)

    def external_models(self, call: ast.Call) -> tuple[str, ...]:
        """The models a call into another file of the run runs (issue 36.2):
        ``model_predict(model, ids)`` whose body (or a helper of its file)
        calls ``model(ids)``, ``trainer.predict(x)`` whose class's method runs
        ``self(x)``, as the callee's summary records its forwards
        (``Summary.forwards``), mapped to this file's names. A callee that
        switches the mode of the model itself manages it: not counted."""
        flow = self.ctx.facts.modes
        if flow.project is None:
            return ()
        scope = scope_of(self.ctx.facts.parents, call)
        ext = flow.external(call, scope if isinstance(scope, FUNCTIONS) else None)
        if ext is None or not ext.summary.forwards:
            return ()
        out: list[str] = []
        for key in ext.summary.forwards:
            effect = ext.summary.effects.get(key)
            if effect is not None and effect.sets:
                continue  # ``def predict(model, x): model.eval(); ...``: its own mode
            mine = ext.caller_key(key)
            if mine is None:
                continue
            model = self._own_model_prefix(mine)
            if model is not None and model not in out:
                out.append(model)
        return tuple(out)

    def _own_model_prefix(self, text: str) -> str | None:
        """``text`` or its longest prefix that this file itself shows is a
        model, not only the summary of the callee it is passed to
        (``self.metric.append(...)`` whose method calls ``self.metric(x)``: a
        metric's function; ``model.set_forward(x)`` whose method calls
        ``self.parse_feature(x)``, a method of a base class in a third file:
        the model is ``model``, not ``model.parse_feature``)."""
        models = self.ctx.facts.modes.models
        probe: str | None = text
        while probe is not None:
            info = models.get(probe)
            if (info is not None and info.evidence != "external") or probe in self._own:
                return probe
            probe = parent_path(probe)
        return None

    def _model_prefix(self, text: str) -> str | None:
        """``text`` or its longest prefix that is a model (``model.encoder`` -> ``model``)."""
        parts = text.split(".")
        for i in range(len(parts), 0, -1):
            prefix = ".".join(parts[:i])
            if prefix in self.models:
                return prefix
        return None

    def wrapped_models(self, call: ast.Call) -> tuple[str, ...]:
        """The models a call of a forward wrapper of this file runs (issue
        24.2): ``self.infer(x)``, a method of the calling class whose body runs
        ``self.model(x)`` (skorch's ``self.infer`` -> ``self.module_(x)``), runs
        ``self.model``; ``model.infer(x)``, a method of ``model``'s class in
        this file whose body runs ``self(x)``/``self.forward(x)``, runs
        ``model``. A wrapper is a method that only runs the model: one that
        switches a mode or trains (``backward``, ``step``) is not."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return ()
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            method = next(iter(self._local.targets(call)), None)
            cls = self.ctx.facts.parents.get(method) if method is not None else None
            if method is None or not isinstance(cls, ast.ClassDef):
                return ()
            if not self._wraps_for(call, cls):
                return ()
            return tuple(m for m in self._runs(method) if m.startswith("self."))
        owner = dotted(func.value)
        if owner is None or owner not in self.models:
            return ()
        return (owner,) if self._forward_method(owner, func.attr, call) else ()

    def _forward_method(
        self, owner: str, method: str, call: ast.Call, grad_off: bool = True
    ) -> bool:
        """``<owner>.<method>(...)``, at ``call``, runs ``owner``'s forward: a
        forward method of its class, known from where it is built. With
        ``grad_off``, one decorated to run with grad off counts too (a forward
        of the region that calls it; not of a helper's, whose graph it is not)."""
        info = self.ctx.facts.modes.model_info(owner)
        cls = self._classes.get(info.class_name) if info is not None and info.class_name else None
        if info is not None and method in info.forwards:
            return True  # ``model.generate(ids)``: the library table's forward method
        if cls is None and info is None:
            cls = self._factory_class(call, owner)
        if cls is not None and method in self._forward_methods(cls):
            return True  # ``model.predict(x)`` -> ``self.scores(x)`` -> ``self(x)``
        if grad_off and cls is not None and method in self._grad_off_forwards(cls):
            return True  # ``@torch.no_grad() def generate``: a forward, grad settled
        found = self._local.methods.get((cls, method)) if cls is not None else None
        if found is not None and "self" in self._runs(found):
            return True
        return cls is None and info is not None and self._imported_forward(info, method, grad_off)

    def grad_off_method(self, call: ast.AST) -> bool:
        """``<model>.<method>(...)`` calls a forward method its class (of this
        file, or of another file of the run) decorates to run with grad off
        (``@torch.no_grad() def generate``)."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return False
        owner, method = dotted(call.func.value), call.func.attr
        if owner is None or owner not in self.models:
            return False
        info = self.ctx.facts.modes.model_info(owner)
        cls = self._classes.get(info.class_name) if info is not None and info.class_name else None
        if cls is not None:
            return method in self._grad_off_forwards(cls)
        view = self.ctx.facts.project
        built = (
            unwrap_built(info.built_at, self.ctx.facts.imports) if info and info.built_at else None
        )
        if view is None or not isinstance(built, ast.Call):
            return False
        found = view.lookup_class(built.func)
        return found is not None and method in found.no_grad_methods

    def _parameter_methods(self, fn: ast.AST) -> tuple[tuple[str, str], ...]:
        """``(parameter, method)`` for each ``<parameter>.<method>(...)`` the
        helper ``fn``'s own body calls (``model.encode(src)`` in
        ``greedy_decode(model, src)``), once per helper: the caller, which
        knows the class of what it passes, decides whether it is a forward."""
        found = self._helper_methods.get(fn)
        if found is None:
            params = set()
            if isinstance(fn, FUNCTIONS):
                a = fn.args
                params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
            params -= {"self", "cls"}
            pairs: dict[tuple[str, str], None] = {}
            for n in walk_local(fn) if params else ():
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                    value = n.func.value
                    if isinstance(value, ast.Name) and value.id in params:
                        pairs[(value.id, n.func.attr)] = None
            found = self._helper_methods[fn] = tuple(pairs)
        return found

    @functools.cached_property
    def _helper_methods(self) -> dict[ast.AST, tuple[tuple[str, str], ...]]:
        return {}

    def _forward_methods(self, cls: ast.ClassDef) -> frozenset[str]:
        """``forwards.forward_methods`` of a class of this file (the mode flow's, cached)."""
        return self.ctx.facts.modes.class_forward_methods(cls)

    def _grad_off_forwards(self, cls: ast.ClassDef) -> frozenset[str]:
        """``forwards.grad_off_forwards`` of a class of this file."""
        return grad_off_forwards(cls, self.ctx.facts.modes.submodules(cls))

    def _factory_class(self, call: ast.Call, name: str) -> ast.ClassDef | None:
        """The module class of this file that ``name`` (a local of the
        function ``call`` is in, or a global) holds when every binding of it
        there is a call of a factory of this file returning that class
        (``test_model = make_model(11, 11)``: ``classfacts.returned_class``).
        A model the mode flow tracks has its class already (``ModelInfo``)."""
        if "." in name:
            return None
        scope = scope_of(self.ctx.facts.parents, call)
        key = scope if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        table = self._factory_bindings.get(key)
        if table is None:
            table = self._factory_bindings[key] = self._bind_factories(key)
        return table.get(name)

    @functools.cached_property
    def _factory_bindings(self) -> dict[ast.AST | None, dict[str, ast.ClassDef]]:
        return {}

    def _bind_factories(
        self, scope: ast.FunctionDef | ast.AsyncFunctionDef | None
    ) -> dict[str, ast.ClassDef]:
        """The names of ``scope`` (None: the module) bound only to calls of
        one factory class (``_factory_class``)."""
        flow = self.ctx.facts.modes
        found: dict[str, ast.ClassDef | None] = {}
        for n in flow.index.scope_nodes(scope):
            if not isinstance(n, (ast.Name, ast.arg)):
                continue
            if isinstance(n, ast.arg) or not isinstance(n.ctx, ast.Load):
                name = n.arg if isinstance(n, ast.arg) else n.id
                parent = self.ctx.facts.parents.get(n)
                made = None
                if isinstance(parent, ast.Assign) and parent.targets == [n]:
                    made = self._made_by_factory(strip_self_returning(parent.value))
                if name in found and found[name] is not made:
                    made = None
                found[name] = made
        return {k: v for k, v in found.items() if v is not None}

    @functools.cached_property
    def _module_functions(self) -> dict[str, ast.AST]:
        return dict(module_functions(self.ctx.tree.body))

    def _made_by_factory(self, value: ast.AST) -> ast.ClassDef | None:
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
            return None
        fn = self._module_functions.get(value.func.id)
        made = returned_class(fn) if fn is not None else None
        cls = self._classes.get(made) if made is not None else None
        modules = self.ctx.facts.modes.classes.modules
        return cls if cls is not None and cls.name in modules else None

    def _imported_forward(self, info: ModelInfo, method: str, grad_off: bool = True) -> bool:
        """``method`` runs the forward of the class of another file of the run
        that ``info``'s model was built from (``ClassSummary.forward_methods``)."""
        view = self.ctx.facts.project
        call = unwrap_built(info.built_at, self.ctx.facts.imports) if info.built_at else None
        if view is None or not isinstance(call, ast.Call):
            return False
        found = view.lookup_class(call.func)
        return (
            found is not None
            and found.is_module
            and (method in found.forward_methods or (grad_off and method in found.no_grad_methods))
        )

    def _wraps_for(self, call: ast.Call, cls: ast.ClassDef) -> bool:
        """Whether ``self.<method>(...)`` in a method of ``cls`` runs what the
        method runs for the calling method (a forward wrapper of its own
        code), not parts of a module or a framework's step."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            return False
        if _module_like(cls, self.ctx.facts.modes.classes.modules):
            # A module's own method runs parts of ``self``, whose mode is
            # its caller's (the judge leaves ``self`` alone, as inline).
            return False
        caller = next(
            (
                a
                for a in self.ctx.facts.ancestors(call)
                if isinstance(a, FUNCTIONS) and self.ctx.facts.parents.get(a) is cls
            ),
            None,
        )
        # A subclass of a framework class (speechbrain's ``sb.Brain``,
        # skorch's ``NeuralNet``): the framework calls its steps, under
        # guards this file does not show (``Brain._fit_valid`` runs
        # ``evaluate_batch`` under ``torch.no_grad()``).
        return caller is not None and all(self._inert_base(b, caller.name) for b in cls.bases)

    def _inert_base(self, base: ast.expr, method: str, seen: frozenset[str] = frozenset()) -> bool:
        """``base`` never calls ``method`` on an instance: ``object``, a class of
        this file whose own bases are inert too, or a class of another file of
        the run whose code (and its bases') never reads ``self.<method>``
        (Informer's ``Exp_Basic``); not a library's class, which may."""
        if isinstance(base, ast.Name) and base.id == "object":
            return True
        if isinstance(base, ast.Name) and base.id in self._classes:
            if base.id in seen:
                return False
            cls = self._classes[base.id]
            return all(self._inert_base(b, method, seen | {base.id}) for b in cls.bases)
        view = self.ctx.facts.project
        uses = view.self_uses(base) if view is not None else None
        return uses is not None and method not in uses

    @functools.cached_property
    def _local(self) -> LocalFunctions:
        return LocalFunctions(self.ctx)

    @functools.cached_property
    def _classes(self) -> dict[str, ast.ClassDef]:
        return {n.name: n for n in self.ctx.tree.body if isinstance(n, ast.ClassDef)}

    def _runs(self, method: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
        """What ``method``'s own body runs directly: model paths, and "self"
        for ``self(x)``/``self.forward(x)``; empty when it is not a forward
        wrapper (a mode switch, a backward or an optimizer step in it)."""
        found = self._wrappers.get(method)
        if found is not None:
            return found
        runs: set[str] = set()
        if method.decorator_list:
            # ``@torch.no_grad()``, ``@staticmethod``...: not a plain forward
            # whose grad and mode are its caller's
            self._wrappers[method] = frozenset()
            return frozenset()
        for n in walk_local(method):
            if module_mode_switch(n) is not None or _grad_context(n):
                # ``with torch.no_grad(): self.model(x)`` (IBM seq2seq's
                # ``Predictor.get_decoder_features``): the wrapper decides
                # grad itself; its callers do not run the model with grad
                runs = set()
                break
            if not isinstance(n, ast.Call):
                continue
            func = n.func
            if isinstance(func, ast.Attribute) and func.attr in _TRAINING_CALLS:
                runs = set()
                break
            if dotted(func) == "self" or (
                isinstance(func, ast.Attribute)
                and func.attr == "forward"
                and dotted(func.value) == "self"
            ):
                runs.add("self")
                continue
            model = self.called_model(n)
            if model is not None:
                runs.add(model)
        found = self._wrappers[method] = frozenset(runs)
        return found

    @functools.cached_property
    def _wrappers(self) -> dict[ast.AST, frozenset[str]]:
        return {}
