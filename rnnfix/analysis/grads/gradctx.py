"""Grad mode, read from the source: ``no_grad`` / ``inference_mode`` /
``set_grad_enabled`` contexts and decorators, and the code that needs
gradients (training steps, ``autograd.grad``, ``requires_grad_``).

Everything here errs towards "grad may be handled": a context we cannot read
(``set_grad_enabled(is_train)``) counts as handled, so RNF003 stays quiet.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Literal, Protocol

from rnnfix.analysis.grads.falseparams import false_parameters
from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted, method_call
from rnnfix.analysis.syntax.walks import (
    FUNCTIONS,
    local_nodes,
    nodes_of,
    walk_local,
    walk_subtree,
    words,
)

Grad = Literal["off", "on", "unknown"]


class _StepKinds(Protocol):
    def step_kind(self, call: ast.Call) -> str | None: ...

    def model_info(self, key: str) -> object | None: ...


class _Handlers(Protocol):
    def handler(self, expr: ast.AST) -> frozenset[str] | None: ...

    def definition_of(self, expr: ast.AST) -> tuple[str, tuple[str, ...]] | None | bool: ...


class GradFacts(Protocol):
    """What this module reads of a file's facts (``FileFacts``): the parsed
    file, the mode flow's training steps, the project's grad handlers."""

    @property
    def imports(self) -> ImportMap: ...

    @property
    def parents(self) -> dict[ast.AST, ast.AST]: ...

    @property
    def modes(self) -> _StepKinds: ...

    @property
    def project(self) -> _Handlers | None: ...

    def ancestors(self, node: ast.AST) -> list[ast.AST]: ...


class GradSource(Protocol):
    """The file read (``FileContext``: a protocol, since the context's facts
    build analyses that import this module)."""

    @property
    def tree(self) -> ast.Module: ...

    @property
    def facts(self) -> GradFacts: ...


_NO_GRAD = frozenset(
    {"torch.no_grad", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"}
)
_INFERENCE = frozenset({"torch.inference_mode", "torch.autograd.grad_mode.inference_mode"})
_SET_GRAD = frozenset(
    {
        "torch.set_grad_enabled",
        "torch.autograd.set_grad_enabled",
        "torch.autograd.grad_mode.set_grad_enabled",
    }
)
_ENABLE = frozenset({"torch.enable_grad", "torch.autograd.enable_grad"})
_GRAD_FUNCTIONS = frozenset(
    {
        "torch.autograd.grad",
        "torch.autograd.backward",
        "torch.autograd.functional.jacobian",
        "torch.autograd.functional.hessian",
        "torch.autograd.functional.vjp",
        "torch.autograd.functional.jvp",
        "torch.func.grad",
        "torch.func.grad_and_value",
        "torch.func.vjp",
        "torch.func.jacrev",
        "functorch.grad",
    }
)


def classify_context(ctx: GradSource, expr: ast.AST) -> Grad | None:
    return grad_context(ctx.facts.imports, expr)


def grad_context(imports: ImportMap, expr: ast.AST) -> Grad | None:
    """Grad mode inside ``with <expr>:`` or under ``@<expr>``; None when
    ``expr`` is not a grad-mode context, or one that keeps the surrounding
    mode (``inference_mode(False)``)."""
    call = expr if isinstance(expr, ast.Call) else None
    qual = imports.qualname(call.func if call else expr)
    if qual in _NO_GRAD:
        return "off"
    if qual in _ENABLE:
        return "on"
    if qual in _INFERENCE or qual in _SET_GRAD:
        args = [*call.args, *(k.value for k in call.keywords)] if call else []
        if not args:
            return "off" if qual in _INFERENCE else "unknown"
        flag = args[0]
        if isinstance(flag, ast.Constant) and isinstance(flag.value, bool):
            if qual in _INFERENCE:
                return "off" if flag.value else None
            return "on" if flag.value else "off"
        return "unknown"
    return None


class GradContexts:
    """Grad mode from the source around a node; one per file (caches per scope)."""

    def __init__(self, ctx: GradSource) -> None:
        self.ctx = ctx
        self._bare_set_grad: dict[ast.AST, bool] = {}

    def in_function(self, node: ast.AST) -> Grad | None:
        """Grad mode at ``node`` from the contexts and decorators up to and
        including its function; None when nothing there sets it (the caller's
        mode applies). A bare ``set_grad_enabled(...)`` statement anywhere in
        the function counts as unknown: we do not follow its flow."""
        ctx = self.ctx
        parents = ctx.facts.parents
        child = node
        cur = parents.get(node)
        while cur is not None:
            if isinstance(cur, (ast.With, ast.AsyncWith)) and any(child is s for s in cur.body):
                for item in reversed(cur.items):
                    mode = classify_context(ctx, item.context_expr)
                    if mode is not None:
                        return mode
            if isinstance(cur, (*FUNCTIONS, ast.Module)):
                if isinstance(cur, FUNCTIONS):
                    for dec in reversed(cur.decorator_list):
                        mode = classify_context(ctx, dec)
                        if mode is not None:
                            return mode
                if cur not in self._bare_set_grad:
                    self._bare_set_grad[cur] = _has_bare_set_grad(ctx, cur)
                return "unknown" if self._bare_set_grad[cur] else None
            child = cur
            cur = parents.get(cur)
        return None


def _has_bare_set_grad(ctx: GradSource, scope: ast.AST) -> bool:
    """A statement that switches grad for the rest of the scope:
    ``torch.set_grad_enabled(False)``, or a grad context entered by hand,
    ``torch.no_grad().__enter__()`` (asteroid's evaluation recipes)."""
    for n in walk_local(scope):
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
            func = n.value.func
            if ctx.facts.imports.qualname(func) in _SET_GRAD:
                return True
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "__enter__"
                and classify_context(ctx, func.value) is not None
            ):
                return True
    return False


def training_steps(ctx: GradSource, root: ast.AST) -> Iterator[ast.Call]:
    """``loss.backward()``, ``torch.autograd.backward``, ``optimizer.step()``,
    ``scaler.step(optimizer)`` under ``root`` (not in nested functions)."""
    for n in local_nodes(root):
        if n.__class__ is ast.Call and _is_training_step(ctx, n):
            yield n


def _is_training_step(ctx: GradSource, call: ast.Call) -> bool:
    return ctx.facts.modes.step_kind(call) is not None


def gradient_uses(
    ctx: GradSource, root: ast.AST, false_names: frozenset[str] = frozenset()
) -> Iterator[ast.AST]:
    """Code under ``root`` that needs grad enabled: training steps,
    ``autograd.grad`` and friends, ``requires_grad_()``, ``requires_grad=True``,
    ``x.requires_grad = True``, ``enable_grad`` / ``set_grad_enabled(True)``.
    ``false_names`` are names known to hold ``False`` (parameters of a helper
    at one call of it, see ``falseparams``)."""

    def is_false(expr: ast.AST) -> bool:
        return _is_false(expr) or (isinstance(expr, ast.Name) and expr.id in false_names)

    for n in walk_local(root):
        if isinstance(n, ast.Call):
            if _is_training_step(ctx, n) or ctx.facts.imports.qualname(n.func) in _GRAD_FUNCTIONS:
                yield n
                continue
            mc = method_call(n)
            if mc is not None and mc[1] == "requires_grad_" and not _false_arg(n, is_false):
                yield n
                continue
            if any(k.arg == "requires_grad" and not is_false(k.value) for k in n.keywords):
                yield n
                continue
            if classify_context(ctx, n) == "on":
                yield n
        elif isinstance(n, ast.Assign):
            if any(
                isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in n.targets
            ) and not is_false(n.value):
                yield n


def _false_arg(call: ast.Call, is_false: Callable[[ast.AST], bool]) -> bool:
    args = [*call.args, *(k.value for k in call.keywords)]
    return bool(args) and is_false(args[0])


def _is_false(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is False


class LocalFunctions:
    """Functions defined in this file, found by how they are called:
    ``helper(...)`` (module-level or nested functions) and ``self.method(...)``
    (methods of the calling class)."""

    def __init__(self, ctx: GradSource) -> None:
        self.ctx = ctx
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.methods: dict[tuple[ast.ClassDef, str], ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self._memo: dict[tuple[ast.AST, frozenset[str]], bool] = {}
        self._sites: dict[ast.AST, list[ast.Call]] | None = None
        parents = ctx.facts.parents
        for n in nodes_of(ctx.tree, *FUNCTIONS):
            if isinstance(n, FUNCTIONS):
                parent = parents.get(n)
                if isinstance(parent, ast.ClassDef):
                    self.methods[(parent, n.name)] = n
                else:
                    self.functions.setdefault(n.name, []).append(n)

    def targets(self, call: ast.Call) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        func = call.func
        if isinstance(func, ast.Name):
            return self.functions.get(func.id, [])
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id in ("self", "cls"):
                cls = self._class_of(call)
                method = self.methods.get((cls, func.attr)) if cls else None
                return [method] if method else []
        return []

    def call_sites(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
        if self._sites is None:
            self._sites = {}
            for n in nodes_of(self.ctx.tree, ast.Call):
                if isinstance(n, ast.Call):
                    for t in self.targets(n):
                        self._sites.setdefault(t, []).append(n)
        return self._sites.get(func, [])

    def _class_of(self, node: ast.AST) -> ast.ClassDef | None:
        for anc in self.ctx.facts.ancestors(node):
            if isinstance(anc, ast.ClassDef):
                return anc
        return None

    def gradient_helper(self, root: ast.AST) -> str | None:
        """The name of a local function called under ``root`` that needs
        gradients, directly or through further local calls."""
        for n in walk_local(root):
            if isinstance(n, ast.Call):
                for f in self.targets(n):
                    if self._needs_grad(f, false_parameters(f, n)):
                        return f.name
        return None

    def _needs_grad(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, false_names: frozenset[str]
    ) -> bool:
        """Whether ``func`` needs gradients when called with ``false_names``
        (its parameters that are ``False`` at the call)."""
        key = (func, false_names)
        if key not in self._memo:
            self._memo[key] = self._needs_grad_walk(func, false_names, frozenset())
        return self._memo[key]

    def _needs_grad_walk(
        self,
        func: ast.FunctionDef | ast.AsyncFunctionDef,
        false_names: frozenset[str],
        seen: frozenset[ast.AST],
    ) -> bool:
        if any(True for _ in gradient_uses(self.ctx, func, false_names)):
            return True
        for n in walk_local(func):
            if isinstance(n, ast.Call):
                for f in self.targets(n):
                    if f not in seen and self._needs_grad_walk(
                        f, false_parameters(f, n, false_names), seen | {func}
                    ):
                        return True
        return False


# --- decorators and context managers of the project --------------------------
# What a project's own wrapper does to grad mode and the module mode, read from
# its definition: ``{"grad"}`` for yolov5's ``@smart_inference_mode()``,
# ``{"eval"}`` for detectron2's ``inference_context(model)``. Anything that
# cannot be read is unknown, and RNF003 does not add to code around it.
Handling = frozenset[str]

# Wrappers that touch neither grad nor the module mode.
_NEUTRAL = frozenset(
    {"staticmethod", "classmethod", "property", "open", "io.open", "abc.abstractmethod",
     "typing.overload", "typing.final", "typing.override", "typing_extensions.override",
     "torch.compile", "torch.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
     "torch.amp.autocast", "torch.cuda.device", "torch.cuda.stream", "torch.device",
     "torch.random.fork_rng", "torch.backends.cudnn.flags", "torch.cuda.nvtx.range",
     "contextlib.suppress", "contextlib.nullcontext", "contextlib.ExitStack",
     "contextlib.redirect_stdout", "contextlib.redirect_stderr", "warnings.catch_warnings",
     "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "tqdm.std.tqdm", "hydra.main",
     "torch.distributed.elastic.multiprocessing.errors.record", "numpy.errstate"}
)  # fmt: skip
_NEUTRAL_PREFIXES = (
    "functools.", "torch.jit.", "torch.profiler.", "torch.autograd.profiler.", "click.",
    "torch.compiler.", "tempfile.", "unittest.mock.",
)  # fmt: skip
# Words of a context manager's name that may say it switches grad or a mode
# (``inference_context``, ``eval_mode``, ``no_sync``, ``fix_bn``, ``mc_dropout``).
_SWITCH_WORDS = frozenset(
    {"grad", "grads", "gradient", "gradients", "autograd", "no", "enable", "enabled", "disable",
     "disabled", "eval", "evaluating", "evaluation", "evaluate", "infer", "inference", "predict",
     "prediction", "test", "testing", "train", "training", "mode", "modes", "freeze", "frozen",
     "fix", "fixed", "dropout", "bn", "norm", "batchnorm", "stats", "ema", "swap", "average",
     "averaged", "scope", "model", "module", "net", "network", "state", "detach", "requires",
     "mc", "stochastic", "deterministic"}
)  # fmt: skip
_GRAD_NAMES = _NO_GRAD | _INFERENCE | _SET_GRAD
GRAD_NAMES = _GRAD_NAMES  # what ``definition_handling`` reads as a grad switch


def definition_handling(node: ast.AST, imports: ImportMap) -> Handling:
    """What a function or class definition (a decorator, a context manager)
    does: ``"grad"`` when it uses ``no_grad``/``inference_mode``/
    ``set_grad_enabled`` anywhere (``(inference_mode if new else no_grad)()(fn)``
    counts), ``"eval"`` when it puts a module in eval mode."""
    from rnnfix.analysis.torch.api import module_mode_switch

    found: set[str] = set()
    for n in walk_subtree(node):  # ``ast.walk``'s nodes; the answer is a set
        if isinstance(n, (ast.Name, ast.Attribute)) and imports.qualname(n) in _GRAD_NAMES:
            found.add("grad")
        elif isinstance(n, ast.Call):
            switch = module_mode_switch(n, lenient=True)
            if switch is not None and switch.mode.value != "train":
                found.add("eval")
        else:
            continue
        if len(found) == 2:
            break  # both found: nothing can be added
    return frozenset(found)


class Handlers:
    """Decorators and context managers around evaluation code, one per file."""

    def __init__(self, ctx: GradSource) -> None:
        self.ctx = ctx
        self.defs: dict[str, ast.AST] = {
            s.name: s for s in ctx.tree.body if isinstance(s, (*FUNCTIONS, ast.ClassDef))
        }
        self._memo: dict[str, Handling | None] = {}

    def handling(self, expr: ast.expr) -> Handling | None:
        """What ``@expr`` / ``with expr:`` does; None when it cannot be read."""
        mode = classify_context(self.ctx, expr)
        if mode is not None:
            return frozenset() if mode == "on" else frozenset({"grad"})
        func = expr.func if isinstance(expr, ast.Call) else expr
        imports = self.ctx.facts.imports
        qual = imports.qualname(func)
        if qual is not None and (qual in _NEUTRAL or qual.startswith(_NEUTRAL_PREFIXES)):
            return frozenset()
        if isinstance(func, ast.Name):
            if func.id in self.defs:
                if func.id not in self._memo:
                    self._memo[func.id] = definition_handling(self.defs[func.id], imports)
                return self._memo[func.id]
            if qual is None and func.id in _NEUTRAL:
                return frozenset()  # a builtin: ``open``, ``property``
            if expr is func and qual is None:
                bound = self._bound_handling(func.id)
                if bound is not None:
                    return bound
        project = self.ctx.facts.project
        found = project.handler(func) if project is not None else None
        if found is None and self._resource(expr, func, qual):
            return frozenset()
        return found

    def _resource(self, expr: ast.expr, func: ast.expr, qual: str | None) -> bool:
        """A ``with`` item rnnfix cannot read that is a resource, not a grad or
        mode switch: a call of another library or of a method of an object
        (``with lmdb_env.begin(write=True) as txn:``, ``with h5py.File(p) as
        f:``, ``with writer.as_default():``), whose names say nothing of grad
        or modes. A context manager that turns grad off or switches a mode is
        named for it (``torch.no_grad``, ``evaluating(model)``,
        ``model.ema_scope()``, ``freeze_bn(net)``), and one of torch or of
        the run stays unknown, and so does a call of a local name. Decorators
        are never read this way: one rnnfix cannot read may wrap the function
        in anything."""
        if not isinstance(expr, ast.Call) or not isinstance(
            self.ctx.facts.parents.get(expr), ast.withitem
        ):
            return False
        text = dotted(func)
        if text is None or (qual or text).split(".")[0] in ("torch", "self", "cls"):
            return False
        if any(w in _SWITCH_WORDS for part in text.split(".") for w in words(part)):
            return False
        if "." in text and self.ctx.facts.modes.model_info(text.rsplit(".", 1)[0]) is not None:
            return False  # a method of a model (``with encoder.cached():``)
        project = self.ctx.facts.project
        if project is not None and project.definition_of(func) is not False:
            return False  # a function of the run that the index did not read
        # A bare name is a resource only when imported: a local one may be bound
        # to anything (``ctx = torch.no_grad if evaluating else nullcontext``).
        return not isinstance(func, ast.Name) or qual is not None

    def _bound_handling(self, name: str) -> Handling | None:
        """``with ctx:`` where the module binds ``ctx`` once, to context
        managers it can read (nanoGPT's ``ctx = nullcontext() if device_type ==
        'cpu' else torch.amp.autocast(...)``), and nothing else in the file
        binds that name: what they do. None otherwise."""
        key = "=" + name
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # a binding that reads itself stays unknown
        values = [
            s.value
            for s in self.ctx.tree.body
            if isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and s.targets[0].id == name
        ]
        found: Handling | None = None
        if len(values) == 1 and _bindings_of(self.ctx.tree, name) == 1:
            found = self._value_handling(values[0])
        self._memo[key] = found
        return found

    def _value_handling(self, value: ast.expr) -> Handling | None:
        if isinstance(value, ast.IfExp):
            a, b = self._value_handling(value.body), self._value_handling(value.orelse)
            return a | b if a is not None and b is not None else None
        return self.handling(value) if isinstance(value, ast.Call) else None


def _bindings_of(tree: ast.Module, name: str) -> int:
    """How many places of the file bind ``name`` (assignments, parameters,
    loop and ``with`` targets, imports, definitions)."""
    count = 0
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)):
            count += 1
        elif isinstance(n, ast.arg) and n.arg == name:
            count += 1
        elif isinstance(n, (*FUNCTIONS, ast.ClassDef)) and n.name == name:
            count += 1
        elif isinstance(n, ast.alias) and (n.asname or n.name.split(".")[0]) == name:
            count += 1
        elif isinstance(n, ast.Global | ast.Nonlocal) and name in n.names:
            count += 2
    return count
