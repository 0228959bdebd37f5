"""What one class definition says about calling ``train()``/``eval()`` on an
instance, read from its own body (no other class, no other file):

- whether it overrides ``train``/``eval`` in a way a mode call cannot go
  through (``mode_overrides``): ``nn.Module.eval()`` is ``self.train(False)``,
  and ``Module.train(mode)`` calls ``child.train(mode)`` on every child (a
  ``DataParallel`` wrapper's ``train()`` does the same to the module it
  wraps). An override ``def train(self):`` therefore makes ``eval()`` and any
  enclosing module's or wrapper's ``train()`` fail with ``TypeError``; a
  ``train(self, data, epochs)`` that is a training loop, or an
  ``eval(self, expr)``, is another method that only shares the name;
- whether its instances hold state whose mode matters (``holds_state``):
  parameters, submodules, or code that reads ``self.training``. A module
  without any (an activation, a loss, a metric) has a forward, but a mode call
  on it changes nothing: it is never the model a fix is about.

Kept free of the mode flow so the project index can store these facts for the
classes of every file of a run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.walks import walk_local
from rnnfix.analysis.torch import library

FuncDef = ast.FunctionDef | ast.AsyncFunctionDef
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_MODE_METHODS = ("train", "eval")
# Calls that give a module a parameter or a child without an attribute assignment.
_REGISTERS = frozenset({"register_parameter", "add_module", "register_module"})


def methods(cls: ast.ClassDef) -> dict[str, FuncDef]:
    """The methods a class body defines (the last definition of a name wins)."""
    return {s.name: s for s in cls.body if isinstance(s, _FUNCS)}


def mode_overrides(cls: ast.ClassDef, file: str | None = None) -> dict[str, str]:
    """``{"train": why, "eval": why}`` for each of ``train``/``eval`` that the
    class itself overrides with a signature or a body a mode call cannot go
    through. Overrides that accept the mode and switch it
    (``def train(self, mode=True): super().train(mode); freeze_bn()``) are fine."""
    out: dict[str, str] = {}
    own = methods(cls)
    for name in _MODE_METHODS:
        fn = own.get(name)
        if fn is not None:
            why = _override_problem(cls.name, fn, file)
            if why is not None:
                out[name] = why
    for attr, _value, fn in self_assignments(cls):
        if attr in _MODE_METHODS:
            # ``self.train = train`` (a flag): the instance attribute hides the
            # method, and ``m.train()``/``m.eval()`` (``self.train(False)``),
            # or a parent module's ``train(mode)``, call a non-callable.
            line = f"{file} line {fn.lineno}" if file else f"line {fn.lineno}"
            out.setdefault(
                attr,
                f"`{cls.name}.{fn.name}` ({line}) assigns `self.{attr}`, an instance "
                f"attribute that hides the `{attr}` method",
            )
    return out


def _override_problem(cls_name: str, fn: FuncDef, file: str | None) -> str | None:
    line = f"{file} line {fn.lineno}" if file else f"line {fn.lineno}"
    where = f"`{cls_name}.{fn.name}` ({line})"
    if isinstance(fn, ast.AsyncFunctionDef):
        return f"{where} is a coroutine, not a mode switch"
    if any(
        _decorator_name(d) in ("staticmethod", "classmethod", "property") for d in fn.decorator_list
    ):
        return f"{where} is not an instance method"
    params = _positional(fn)
    if not params:
        return f"{where} takes no `self`"
    rest = params[1:]
    a = fn.args
    n_defaults = len(a.defaults)
    required = rest[: max(0, len(rest) - n_defaults)]
    kw_required = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    if required or kw_required:
        names = ", ".join(f"`{p}`" for p in (*required, *kw_required))
        return (
            f"{where} requires {names}: it is another method named `{fn.name}`, not a mode switch"
        )
    if fn.name == "train" and not rest and a.vararg is None:
        return (
            f"{where} does not accept `mode`: `eval()`, and the `train()` of any module or "
            "data-parallel wrapper that holds it, call `train(mode)` and fail with TypeError"
        )
    if not _switches_mode(fn):
        return (
            f"{where} is not a mode switch (it never calls `super().{fn.name}(...)` "
            "nor sets `self.training`)"
        )
    # ``def train(self, mode=False): self.training = False`` (a frozen BatchNorm)
    # ignores the mode on purpose: a call goes through, and the author wants it so.
    return None


def _decorator_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    text = dotted(node)
    return text.rsplit(".", 1)[-1] if text else None


def _positional(fn: FuncDef) -> list[str]:
    return [p.arg for p in (*fn.args.posonlyargs, *fn.args.args)]


def _switches_mode(fn: FuncDef) -> bool:
    """The body delegates to a base class's mode switch (``super().train(mode)``,
    ``nn.Module.train(self, mode)``, ``self.train(False)`` from ``eval``) or
    sets ``self.training`` itself."""
    this = _positional(fn)[0]
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, owner = node.func.attr, node.func.value
            if attr not in _MODE_METHODS:
                continue
            if isinstance(owner, ast.Call) and dotted(owner.func) == "super":
                return True
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Name) and first.id == this and dotted(owner) is not None:
                return True  # ``nn.Module.train(self, mode)``
            if fn.name == "eval" and attr == "train" and dotted(owner) == this:
                return True  # ``def eval(self): return self.train(False)``
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(dotted(t) == f"{this}.training" for t in targets):
                return True
    return False


_SELF_ASSIGNMENTS_KEY = "_rnnfix_self_assignments"


def self_assignments(cls: ast.ClassDef) -> Iterator[tuple[str, ast.expr, FuncDef]]:
    """(attribute, value, method) for each ``self.<attr> = value`` in a method.
    Listed once per class and kept on it (asked per model, per region); the
    list holds nodes below the class only, so the tree stays free of cycles."""
    kept: list[tuple[str, ast.expr, FuncDef]] | None = cls.__dict__.get(_SELF_ASSIGNMENTS_KEY)
    if kept is None:
        kept = list(_self_assignments(cls))
        setattr(cls, _SELF_ASSIGNMENTS_KEY, kept)
    return iter(kept)


def _self_assignments(cls: ast.ClassDef) -> Iterator[tuple[str, ast.expr, FuncDef]]:
    for fn in methods(cls).values():
        params = _positional(fn)
        if not params:
            continue
        this = params[0]
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                pairs = [(node.target, node.value)]
            else:
                continue
            for target, value in pairs:
                if isinstance(target, ast.Attribute) and dotted(target.value) == this:
                    yield target.attr, value, fn


def holds_state(cls: ast.ClassDef, is_stateless_value: Callable[[ast.expr, FuncDef], bool]) -> bool:
    """Whether an instance may hold parameters, submodules or mode-dependent
    code, from the class body alone (its bases are the caller's to add).

    ``is_stateless_value(value, method)`` says whether a value assigned to
    ``self.<attr>`` provably holds no parameter and no module (a constant, a
    stateless torch module, a parameter with a constant default). Anything it
    cannot vouch for counts as state: proving a module stateless is what lets
    a fix skip it, so the proof must be positive."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and node.attr == "training":
            return True  # ``if self.training:``, ``F.dropout(x, training=self.training)``
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _REGISTERS
        ):
            return True
    for _attr, value, fn in self_assignments(cls):
        if not is_stateless_value(value, fn):
            return True
    return False


def weight_loaders(cls: ast.ClassDef) -> frozenset[str]:
    """The class's own methods that load trained weights into the instance:
    named for loading (``load_weights``, ``load_pretrained``), they read a
    file (``torch.load``, ``np.fromfile``, ``pickle.load``, ``open``) and write
    parameters (``load_state_dict``, ``.copy_(...)``), and switch no mode
    (``init_weights`` and ``reset_parameters`` write random values, not
    trained ones; a method that calls ``eval()`` sets the mode itself)."""
    out: set[str] = set()
    for name, fn in methods(cls).items():
        if "load" not in name.lower():
            continue
        reads = writes = False
        for node in walk_local(fn):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if isinstance(func, ast.Attribute) and last in _MODE_METHODS:
                break  # it sets a mode itself
            if last in ("load_state_dict", "copy_"):
                writes = True
            if last in ("load", "fromfile", "open", "load_state_dict"):
                reads = True
        else:
            if reads and writes:
                out.add(name)
    return frozenset(out)


def module_functions(body: Iterable[ast.stmt]) -> dict[str, ast.AST]:
    """The functions a module's statements define, by name."""
    return {s.name: s for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}


def returned_class(func: ast.AST) -> str | None:
    """A factory: the name of the class (as written: ``GeoTransformer``,
    ``models.Net``) every ``return`` of ``func`` builds an instance of, directly
    (``return Net(cfg)``) or through a local bound only to such calls
    (``model = Net(cfg); model.head = ...; return model``), moved at most
    (``.to(device)``); None when a path returns anything else, a local is
    bound any other way, or ``func`` switches a mode itself (the instance
    would not come back in the mode it was built in)."""
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    returned: list[ast.expr] = []
    assigned: dict[str, list[ast.expr]] = {}
    plain_targets: set[int] = set()  # ``name = value``: one name, one value
    stored: list[ast.Name] = []
    for node in walk_local(func):
        if isinstance(node, ast.Return):
            if node.value is None:
                return None
            returned.append(node.value)
        elif isinstance(node, (ast.Yield, ast.YieldFrom)):
            return None
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("train", "eval", "requires_grad_"):
                return None
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                plain_targets.add(id(target))
                assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stored.append(node)
    # Bound by a ``for``, a ``with``, a tuple, an augmented assignment: unknown.
    other = {n.id for n in stored if id(n) not in plain_targets}
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    names: set[str] = set()
    for value in returned:
        value = _built_value(value)
        found: list[ast.expr] = [value]
        if isinstance(value, ast.Name):
            if value.id in params or value.id in other:
                return None
            # ``model = model.to(device)`` keeps what the name holds.
            found = [
                v
                for v in map(_built_value, assigned.get(value.id, []))
                if not (isinstance(v, ast.Name) and v.id == value.id)
            ]
            if not found:
                return None
        for call in found:
            text = dotted(call.func) if isinstance(call, ast.Call) else None
            if text is None:
                return None
            names.add(text)
    return names.pop() if len(names) == 1 else None


def _built_value(value: ast.expr) -> ast.expr:
    stripped = strip_self_returning(value)
    return stripped if isinstance(stripped, ast.expr) else value


def function_builds_mode_layers(
    func: ast.AST, qualname: Callable[[ast.AST], str | None], local: Callable[[str], bool]
) -> bool:
    """Whether a function of the file builds a layer whose forward depends on
    the mode, in its own body (nested definitions run elsewhere), or a class
    or function of its file for which ``local(name)`` says so."""
    for node in walk_local(func):
        if isinstance(node, ast.Call):
            if library.mode_layer(qualname(node.func)):
                return True
            if isinstance(node.func, ast.Name) and local(node.func.id):
                return True
    return False


def builds_mode_layers(
    cls: ast.ClassDef, qualname: Callable[[ast.AST], str | None], local: Callable[[str], bool]
) -> bool:
    """Whether the class body builds a layer whose forward depends on the mode
    (``nn.Dropout``, ``nn.BatchNorm2d``), reads ``self.training``, or builds a
    class of its file for which ``local(name)`` says so: positive evidence
    that ``eval()`` changes what an instance computes."""
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and node.attr == "training":
            return True
        if isinstance(node, ast.Call):
            q = qualname(node.func)
            if library.mode_layer(q):
                return True
            if isinstance(node.func, ast.Name) and node.func.id != cls.name and local(node.func.id):
                return True
    return False


def _keeps_batch_statistics(call: ast.Call) -> bool:
    """``nn.BatchNorm2d(c, momentum=1)`` (its running statistics are the last
    batch's) or ``track_running_stats=False`` (it keeps none): a layer built
    to normalise with each batch's own statistics."""
    for k in call.keywords:
        value = k.value
        if not isinstance(value, ast.Constant):
            continue
        if k.arg == "momentum" and value.value in (1, 1.0) and value.value is not True:
            return True
        if k.arg == "track_running_stats" and value.value is False:
            return True
    return False


def transductive_norm(
    cls: ast.ClassDef,
    qualname: Callable[[ast.AST], str | None],
    local: Callable[[str], bool | None],
) -> bool | None:
    """Whether the class's only mode-dependent layers are BatchNorm layers
    that keep no statistics of their own to evaluate with (``momentum=1``,
    ``track_running_stats=False``): True when it builds at least one, None
    when it builds no mode-dependent layer at all, False otherwise (a
    Dropout, a BatchNorm with running statistics, ``self.training`` read).
    ``local(name)`` answers the same for a class of the file it builds.
    Few-shot learners (Relation Networks, MAML ports) are written this way to
    evaluate in train mode, with each episode's own statistics, on purpose."""
    found: bool | None = None
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and node.attr == "training":
            return False
        if not isinstance(node, ast.Call):
            continue
        q = qualname(node.func)
        if library.mode_layer(q):
            if "BatchNorm" not in (q or "") or not _keeps_batch_statistics(node):
                return False
            found = True
        elif isinstance(node.func, ast.Name) and node.func.id != cls.name:
            inner = local(node.func.id)
            if inner is False:
                return False
            found = found or inner
    return found
