"""Whether an evaluation region may call a model at all, read from the
syntax alone, before RNF003 builds its judge.

``RegionJudge.run`` leaves a region that calls no model
(``ModelIndex.model_calls``) at once, but to know the models it builds the
mode flow (``ctx.facts.modes``: the file's classes, call resolution, calls
into other files of the run through their summaries), which costs far more
than the question. Most regions of a large library (torch's own package:
``test_*`` helpers, ``eval_*`` functions, loops over test inputs) call no
model, so this asks the question on the syntax first: a necessary condition,
never a guess. A region it rules out calls no model (the judge would return
``NOT_A_REGION``, or ``LEFT_ALONE`` for a phase loop: nothing reported,
nothing claimed).

Why it holds: a call runs a model only through ``forward_path``: ``K(...)``
or ``K.forward(...)`` with ``K`` a model, or ``O.a(...)`` with ``O`` a model
whose class assigns a module to ``self.a``. And a dotted path is a model
(``ModelIndex.models``: the mode flow's models, see
``rnnfix.analysis.torch.models``, and ``ModelIndex._own``) only when the file
shows one of:

- a mode call on it (``K.eval()``, ``K.to(d).train(False)``, a wrapper's
  ``DataParallel(K).train()``), or ``K.parameters()``; or its mode read as
  an ``if``'s test (``if K.training:``, the flag of ``flagparams.mode_flag``);
- an assignment to it (built from a module class, or propagated from a
  model: ``K = Net()``, ``self.K = model``);
- a parameter of that name, annotated, or of a function called in the file
  (a model passed in) or of an ``__init__`` (a constructor call);
- with a project index, an argument (or a receiver) at a call that may run
  a function of another file, extended by any attribute path
  (``evaluate(model)`` where ``evaluate`` calls ``model.encoder``).

Keep it in step with ``rnnfix.analysis.torch.models`` and ``ModeFlow``'s model
sources: ``tests/rules/test_rnf003_gate.py`` checks it against the judge
on every fixture.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from rnnfix.analysis.project.summaries import ClassSummary, ExternalCall, FunctionSummary
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.scopes import bind_arguments
from rnnfix.analysis.syntax.walks import FUNCTIONS, nodes_of, walk_local
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.api import MODULE_METHODS

if TYPE_CHECKING:
    from rnnfix.analysis.project.view import ProjectView

_NOT_MODELS = ("self", "cls")  # the judge drops these (a module's own forward)
# The node classes ``ModelEvidence`` reads (parsed trees hold no subclasses).
_KINDS = frozenset(
    {
        ast.Call,
        ast.Assign,
        ast.AnnAssign,
        ast.FunctionDef,
        ast.AsyncFunctionDef,
        ast.arg,
        ast.ClassDef,
        ast.Import,
        ast.ImportFrom,
        ast.If,
    }
)


class ModelEvidence:
    """Dotted paths a file may hold a model in (a superset of the judge's
    ``ModelIndex.models``), from one walk of its tree. ``view``: the project
    index as this file sees it (``ctx.facts.project``), asked only about the
    calls a region's forward may owe its model to."""

    def __init__(self, tree: ast.Module, view: ProjectView | None) -> None:
        self.view = view
        self.seeds: set[str] = set()  # ``find_models``' own evidence, loosely
        self.own: set[str] = set()  # ``ModelIndex._own``: annotated parameters
        # Paths assigned a call of an imported name that may be a module class
        # of another file of the run: asked of the project index on demand.
        self.pending: dict[str, list[ast.expr]] = {}
        self.sources: dict[str, set[str]] = {}  # path -> paths a model may flow from
        self._instances: dict[str, list[ast.Call]] = {}  # path -> calls it was assigned
        # Methods of the file's classes by name: ``self.infer(x)`` and
        # ``model.infer(x)`` may run a model through one (forward wrappers).
        self._methods: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        # Every function of the file by name (methods too): ``helper(model)``
        # may run a model through one (``ModelIndex.helper_models``).
        self._defs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self._closures: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self_attrs: set[str] = set()
        imports: dict[str, set[str]] = {}  # local name -> absolute qualified names
        classes: set[str] = set()
        assigned: set[str] = set()
        values: list[tuple[list[str], ast.expr]] = []
        functions: list[tuple[str, list[ast.arg]]] = []
        annotated: list[ast.arg] = []
        calls: list[ast.Call] = []
        kinds = _KINDS
        for node in nodes_of(tree, *kinds):  # names, constants, operators: read by none below
            if isinstance(node, ast.Call):
                calls.append(node)
                func = node.func
                if isinstance(func, ast.Attribute):
                    if func.attr in ("eval", "train"):
                        _receivers(func.value, self.seeds)
                    elif func.attr in ("parameters", "named_parameters"):
                        _add(self.seeds, dotted(func.value))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                built = strip_self_returning(node.value) if node.value is not None else None
                if isinstance(built, ast.Call) and dotted(built.func) is not None:
                    for target in targets:  # ``ProjectView.instances``' candidates
                        if (text := dotted(target)) is not None:
                            self._instances.setdefault(text, []).append(built)
                found: list[str] = []
                for target in targets:
                    _targets(target, found, self_attrs)
                assigned.update(found)
                if node.value is not None:
                    values.append((found, node.value))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                functions.append((node.name, [*a.posonlyargs, *a.args, *a.kwonlyargs]))
                self._defs.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.arg):
                annotated.append(node)  # ``ModelIndex._own`` reads every one
            elif isinstance(node, ast.ClassDef):
                classes.add(node.name)
                for stmt in node.body:
                    if isinstance(stmt, FUNCTIONS):
                        self._methods.setdefault(stmt.name, []).append(stmt)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                _bind_imports(node, imports)
            elif isinstance(node, ast.If):
                test = node.test
                operands = test.values if isinstance(test, ast.BoolOp) else [test]
                for operand in operands:  # ``if model.training:``: ``flagparams.mode_flag``
                    if isinstance(operand, ast.Attribute) and operand.attr == "training":
                        _add(self.seeds, dotted(operand.value))
        self.self_attrs = frozenset(self_attrs)
        for found, value in values:
            # ``a, b = Net(), net``: element-wise, loosely (any target, any value).
            # ``nets = {"G": G(), "D": D()}``: a container of models
            # (``models.model_containers``), as loosely.
            elts = (
                value.elts
                if isinstance(value, (ast.Tuple, ast.List))
                else [v for v in value.values if v is not None]
                if isinstance(value, ast.Dict)
                else [value]
            )
            for v in elts:
                # ``self.net = net.cuda()`` holds what ``net`` holds, and
                # ``forward = self.net.forward`` runs what ``self.net`` runs
                # (``ModelIndex._bound_alias``).
                text = dotted(strip_self_returning(v))
                if text is not None and text.endswith(".forward"):
                    text = text[: -len(".forward")]
                if text is not None:
                    for t in found:  # ``self.net = net``
                        self.sources.setdefault(t, set()).add(text)
                    continue
                certain, maybe = _builds(v, imports, classes)
                if certain:
                    self.seeds.update(found)  # ``net = Net().to(device)``
                elif maybe and view is not None:
                    for t in found:
                        self.pending.setdefault(t, []).extend(maybe)
        builders = imports.keys() | classes
        arguments: dict[str, set[str]] = {}  # callee name -> argument texts
        for call in calls:
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else dotted(func)
            if name is None:
                continue
            texts = {
                t
                for t in map(dotted, [*call.args, *(k.value for k in call.keywords)])
                if t is not None
            }
            if texts:
                arguments.setdefault(name, set()).update(texts)
                if name in classes:  # a constructor call runs an ``__init__``
                    arguments.setdefault("__init__", set()).update(texts)
        for name, args in functions:
            for p in args:
                # ``models._propagate``: a parameter of a function of the file
                # called with a model (matched by name, any argument).
                self.sources.setdefault(p.arg, set()).update(arguments.get(name, ()))
        for p in annotated:
            if p.annotation is not None and _root(p.annotation) in builders:
                self.own.add(p.arg)  # ``model: nn.Module``, ``*nets: nn.Module``
        # Calls that may run a function of another file: their arguments (and
        # receiver) may be models there (``tracked.add_argument_models``).
        self._external: dict[str, list[ast.Call]] = {}
        if view is not None:
            for call in calls:
                for text in _external_texts(call, imports.keys(), assigned):
                    self._external.setdefault(text, []).append(call)
        # ``add_argument_models`` never makes a model of a path rooted in
        # a name an absolute import binds, or in a function or class the
        # module defines at its top level.
        self._taken = {name for name, quals in imports.items() if any(quals)}
        self._taken.update(n.name for n in tree.body if isinstance(n, (*FUNCTIONS, ast.ClassDef)))
        self._external_keys: dict[ast.Call, frozenset[str]] = {}
        self._verdicts: dict[str, bool] = {}
        self._classes: dict[str, bool] = {}

    def may_be_model(self, key: str) -> bool:
        found = self._verdicts.get(key)
        if found is None:
            found = self._verdicts[key] = self._may_be_model(key)
        return found

    def _may_be_model(self, key: str) -> bool:
        if key in self.own:
            return True
        # ``find_models``: a model is a seed or flows from one (assignments,
        # arguments of the file's functions).
        reach = {key}
        todo = [key]
        while todo:
            for src in self.sources.get(todo.pop(), ()):
                if src not in reach:
                    reach.add(src)
                    todo.append(src)
        if not reach.isdisjoint(self.seeds):
            return True
        if any(self._module_class(f) for t in reach for f in self.pending.get(t, ())):
            return True
        parts = key.split(".")
        if parts[0] in self._taken:
            return False
        for i in range(1, len(parts) + 1):
            for call in self._external.get(".".join(parts[:i]), ()):
                if key in self._keys_of(call):
                    return True
        return False

    def _module_class(self, func: ast.expr) -> bool:
        """``ModuleClasses.imported``: ``func`` names an ``nn.Module`` class of
        another file of the run."""
        text = dotted(func)
        if text is None or self.view is None:
            return False
        found = self._classes.get(text)
        if found is None:
            summary = self.view.lookup(func)
            found = isinstance(summary, ClassSummary) and summary.is_module
            self._classes[text] = found
        return found

    def _keys_of(self, call: ast.Call) -> frozenset[str]:
        """The caller's texts for the paths the function of another file
        ``call`` may run switches, calls or trains (its summary's keys)."""
        found = self._external_keys.get(call)
        if found is None:
            keys: set[str] = set()
            for ext in self._external_calls(call):
                s = ext.summary
                for key in (*s.effects, *s.forwards, *s.entry_trains):
                    _add(keys, ext.caller_key(key))
            found = self._external_keys[call] = frozenset(keys)
        return found

    def _external_calls(self, call: ast.Call) -> list[ExternalCall]:
        """``ProjectView.call``, with no parameter shadowing an import and
        every class an object was ever built from (a superset of its
        answers): it looks up only the names this call needs, where
        ``ProjectView.instances`` looks up every assignment of the file."""
        view = self.view
        assert view is not None
        func = call.func
        root: ast.expr = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in view.bindings:
            found = view.lookup(func)
            if isinstance(found, FunctionSummary):
                return [] if found.is_method else [ExternalCall(found, None, _bind(found, call))]
        if not isinstance(func, ast.Attribute):
            return []
        owner = dotted(func.value)
        if owner is not None:
            built = self._instances.get(owner, [])
        else:
            value = strip_self_returning(func.value)
            built = [value] if isinstance(value, ast.Call) else []
        out: list[ExternalCall] = []
        for value in built:
            cls = view.lookup(value.func)
            method = cls.methods.get(func.attr) if isinstance(cls, ClassSummary) else None
            if method is not None and method.is_method:
                out.append(ExternalCall(method, owner, _bind(method, call)))
        return out

    def may_call_model(self, roots: Iterable[ast.AST]) -> bool:
        """Whether a call in ``roots`` (walked as ``ModelIndex.model_calls``
        walks them) may run a model other than ``self``/``cls``, or ``self``
        in a file that switches ``self``'s mode (a module's method that
        trains itself, ``modes.trains_itself``, evaluates ``self``)."""
        own = "self" in self.seeds
        for root in roots:
            for n in walk_local(root):
                if isinstance(n, ast.Call) and any(
                    (key not in _NOT_MODELS or (own and key == "self")) and self.may_be_model(key)
                    for key in self._forward_keys(n)
                ):
                    return True
        return False

    def _forward_keys(self, call: ast.Call) -> list[str]:
        """The paths ``called_model`` (or ``ModelIndex.wrapped_models``) may
        answer for ``call``."""
        return self._own_keys(call) + self._helper_keys(call) + self._shown_keys(call)

    def _shown_keys(self, call: ast.Call) -> list[str]:
        """The arguments ``call`` gives a function of another file of the run
        that shows what they compute (``ProjectView.shows``:
        ``save_reconstructions(ae, images, path)``)."""
        found = self.view.shows(call.func) if self.view is not None else None
        if found is None:
            return []
        pairs = [
            *zip(found.params, call.args, strict=False),
            *((k.arg, k.value) for k in call.keywords),
        ]
        return [t for p, a in pairs if p in found.shown and (t := dotted(a)) is not None]

    def _own_keys(self, call: ast.Call) -> list[str]:
        """``_forward_keys`` but for what a helper of this file runs."""
        keys = self._direct_keys(call)
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr != "forward"):
            return keys
        methods = self._methods.get(func.attr, [])
        owner = dotted(func.value)
        if methods and owner == "self":
            pass  # ``self.infer(x)``: ``_helper_keys``
        elif methods and owner is not None and owner not in keys:
            keys.append(owner)  # ``model.infer(x)``: a method of a class of this file
        elif owner is not None and func.attr in _LIBRARY_FORWARDS:
            keys.append(owner)  # ``model.generate(ids)``: ``ModelInfo.forwards``
        return keys + self._external_forwards(call)

    def _helper_keys(self, call: ast.Call) -> list[str]:
        """``ModelIndex.helper_models`` and ``wrapped_models``' ``self.infer(x)``:
        what a function of this file called by name (``greedy_decode(model,
        src)``), or a method called on ``self``, may run, through the helpers
        it calls in turn: their keys, and the call's arguments extended by
        any tail of a path those helpers use (a parameter stands for its
        argument, at any depth), with every prefix."""
        func = call.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute) and dotted(func.value) in ("self", "cls"):
            name = func.attr
        else:
            return []
        keys, tails = self._closure(name)
        if not keys:
            return []
        out = list(keys)
        for arg in (*call.args, *(k.value for k in call.keywords)):
            text = dotted(arg.value if isinstance(arg, ast.Starred) else arg)
            if text is None:
                continue
            for tail in tails:
                parts = (text + tail).split(".")
                out.extend(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        return out

    def _closure(self, name: str) -> tuple[frozenset[str], frozenset[str]]:
        """The keys the functions named ``name`` and the helpers they call by
        name run (``_own_keys``), and the tails (``""``, ``".encoder"``) of
        every path those functions use as a key or pass to a call."""
        found = self._closures.get(name)
        if found is not None:
            return found
        self._closures[name] = (frozenset(), frozenset())  # a recursive helper
        keys: set[str] = set()
        tails: set[str] = {""}
        for fn in self._defs.get(name, ()):
            for n in walk_local(fn):
                if not isinstance(n, ast.Call):
                    continue
                texts = self._own_keys(n) + self._external_forwards(n)
                keys.update(texts)
                func = n.func
                callee = (
                    func.id
                    if isinstance(func, ast.Name)
                    else func.attr
                    if isinstance(func, ast.Attribute) and dotted(func.value) in ("self", "cls")
                    else None
                )
                if callee is not None and callee in self._defs:
                    inner_keys, inner_tails = self._closure(callee)
                    keys.update(inner_keys)
                    tails.update(inner_tails)
                    texts = texts + _argument_texts(n)
                for text in texts:
                    parts = text.split(".")
                    tails.update("." + ".".join(parts[i:]) for i in range(1, len(parts)))
        found = self._closures[name] = (frozenset(keys), frozenset(tails))
        return found

    def _external_forwards(self, call: ast.Call) -> list[str]:
        """``ModelIndex.external_models``: the caller's paths (and each of
        their prefixes) for what a function of another file the call may run
        calls forward (``Summary.forwards``)."""
        if self.view is None or not self.view.bindings and not self._instances:
            return []
        out: list[str] = []
        for ext in self._external_calls(call):
            for key in ext.summary.forwards:
                mine = ext.caller_key(key)
                parts = mine.split(".") if mine is not None else []
                out.extend(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        func = call.func
        owner = dotted(func.value) if isinstance(func, ast.Attribute) else None
        if owner is not None and owner not in out:
            # ``model.predict(x)``: a forward method of the class of another
            # file ``model`` was built from (``ModelIndex._imported_forward``);
            # ``model.decoder(z)``: a submodule it assigns (``ModeFlow.is_submodule``).
            assert isinstance(func, ast.Attribute)
            for value in self._instances.get(owner, []):
                cls = self.view.lookup(value.func)
                if isinstance(cls, ClassSummary) and (
                    func.attr in cls.forward_methods
                    or func.attr in cls.no_grad_methods
                    or func.attr in cls.submodules
                ):
                    out.append(owner)
                    break
        return out

    def _direct_keys(self, call: ast.Call) -> list[str]:
        """The paths ``called_model`` may answer for ``call``."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            owner = dotted(func.value)
            return [owner] if owner is not None else []
        text = dotted(func)
        if text is None:
            if isinstance(func, ast.Subscript) and (held := dotted(func.value)) is not None:
                return [held]  # ``MODELS[name](x)``: an element of a container
            return []
        owner, _, attr = text.rpartition(".")
        if attr in library.RUNNER_NAMES and call.args:
            # ``nn.parallel.data_parallel(netG, x, gpus)``: what ``netG(x)`` runs
            return self._direct_keys(ast.Call(call.args[0], [], []))
        if owner and attr not in MODULE_METHODS and attr in self.self_attrs:
            return [text, owner]  # ``model.decoder(x)``: a submodule's forward
        if owner and attr in library.HELD_AS:
            return [text, owner]  # ``generator.module(x)``: the wrapped module
        return [text]


def _argument_texts(call: ast.Call) -> list[str]:
    out: list[str] = []
    for arg in (*call.args, *(k.value for k in call.keywords)):
        _add_to(out, dotted(arg.value if isinstance(arg, ast.Starred) else arg))
    return out


def _bind(fn: FunctionSummary, call: ast.Call) -> dict[str, str | None]:
    return bind_arguments(fn.params, fn.kwonly, fn.is_method, call)


def _add(found: set[str], text: str | None) -> None:
    if text is not None:
        found.add(text)


def _receivers(expr: ast.expr, found: set[str]) -> None:
    """Every path a mode call on ``expr`` may switch, through self-returning
    calls and wrappers (``DataParallel(net).to(d)``) read loosely."""
    stack: list[ast.expr] = [expr]
    while stack:
        cur = stack.pop()
        _add(found, dotted(cur))
        if isinstance(cur, ast.Call):
            if isinstance(cur.func, ast.Attribute):
                stack.append(cur.func.value)
            if cur.args:
                stack.append(cur.args[0])


def _targets(target: ast.expr, found: list[str], self_attrs: set[str]) -> None:
    stack = [target]
    while stack:
        cur = stack.pop()
        if isinstance(cur, (ast.Tuple, ast.List)):
            stack.extend(cur.elts)  # ``a, b = Net(), Net()``
        elif isinstance(cur, ast.Starred):
            stack.append(cur.value)
        else:
            text = dotted(cur)
            if text is not None:
                found.append(text)
            if isinstance(cur, ast.Attribute) and dotted(cur.value) == "self":
                self_attrs.add(cur.attr)


def _root(expr: ast.expr) -> str | None:
    """The name a chain of attributes and calls starts from: ``U.evaluate``
    -> U, ``Trainer(m).to(d).fit`` -> Trainer."""
    while isinstance(expr, (ast.Attribute, ast.Call)):
        expr = expr.value if isinstance(expr, ast.Attribute) else expr.func
    return expr.id if isinstance(expr, ast.Name) else None


# Qualified names ``built_class`` (and ``loaded``) know as modules without the
# project index: torch.nn and the library table's factories and loaders.
_TORCH_MODULES = (
    "torch.nn.",
    *(
        r.name
        for r in library.TABLE
        if r.kind in ("factory", "loader", "module") and r.match != "method"
    ),
)
# Methods of library classes that run the forward (``ModelInfo.forwards``).
_LIBRARY_FORWARDS = frozenset(m for r in library.TABLE for m in r.forward_methods)
# Methods the table knows as loaders (``X.from_pretrained(...)``), any receiver.
_LOAD_METHODS = frozenset(
    r.name for r in library.TABLE if r.kind in ("factory", "loader") and r.match == "method"
)


def _bind_imports(node: ast.Import | ast.ImportFrom, imports: dict[str, set[str]]) -> None:
    """Every name an import binds, with what ``ImportMap`` would resolve it to
    (relative imports: nothing; the project index resolves those)."""
    for alias in node.names:
        if isinstance(node, ast.Import):
            local = alias.asname or alias.name.split(".")[0]
            qual = alias.name if alias.asname else local
        else:
            local = alias.asname or alias.name
            qual = f"{node.module}.{alias.name}" if node.module and node.level == 0 else ""
        imports.setdefault(local, set()).add(qual)


def _builds(
    value: ast.expr, imports: dict[str, set[str]], classes: set[str]
) -> tuple[bool, list[ast.expr]]:
    """``built_class``, loosely: whether ``value`` may construct a module
    for sure (a class of the file, a torch module: ``Net().to(d)``,
    ``nn.DataParallel(nn.LSTM(...))``), and the callees that may be a module
    class of another file of the run. Every call a self-returning method or
    a wrapper may unwrap to counts."""
    maybe: list[ast.expr] = []
    stack = [value]
    while stack:
        cur = stack.pop()
        if not isinstance(cur, ast.Call):
            continue
        func = cur.func
        if isinstance(func, ast.Attribute):
            if func.attr in _LOAD_METHODS:
                return True, []  # ``X.from_pretrained(path)``: ``models.loaded``
            stack.append(func.value)
        if cur.args:
            stack.append(cur.args[0])
        root = _root(func)
        if root in classes:
            return True, []
        if root is not None and root in imports:
            text = dotted(func) or ""
            rest = text[len(root) :]
            if any((q + rest).startswith(_TORCH_MODULES) for q in imports[root] if q):
                return True, []
            maybe.append(func)
    return False, maybe


def _external_texts(call: ast.Call, imported: Collection[str], assigned: set[str]) -> list[str]:
    """What a call that may run a function of another file passes it (and the
    receiver of a method of an object of an imported class, maybe): as
    ``ProjectView.call`` binds them."""
    func = call.func
    owner = dotted(func.value) if isinstance(func, ast.Attribute) else None
    out: list[str] = []
    if owner is not None and owner in assigned:
        out.append(owner)  # ``trainer.fit()``
    elif _root(func) not in imported:
        return out
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            break
        _add_to(out, dotted(arg))
    for kw in call.keywords:
        if kw.arg is not None:
            _add_to(out, dotted(kw.value))
    return out


def _add_to(out: list[str], text: str | None) -> None:
    if text is not None:
        out.append(text)
