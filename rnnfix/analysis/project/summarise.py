"""Computing a file's ``ModuleSummary``: the mode flow, the class facts and the
loads of one file, run in summary mode. The index (``rnnfix.analysis.project.index``)
calls ``summarise`` at a file's first lookup; it imports every analysis, which is
why it is a module of its own that nothing below the project index imports.
"""

from __future__ import annotations

import ast
import copy
import os
import re
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.outputs import SINK_CALL
from rnnfix.analysis.project.bindings import Binding, import_bindings, statements
from rnnfix.analysis.project.summaries import (
    HANDLER_TOKENS,
    LOAD_TOKENS,
    MODE_TOKENS,
    OVERRIDE_TOKENS,
    RNN_TOKENS,
    ClassSummary,
    FunctionSummary,
    ModuleSummary,
    Shown,
)
from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.walks import walk_subtree
from rnnfix.analysis.torch import library
from rnnfix.source.lines import line_texts

if TYPE_CHECKING:
    from rnnfix.analysis.modes.modeflow import ModeFlow
    from rnnfix.analysis.syntax.imports import ImportMap
    from rnnfix.analysis.syntax.scopes import FuncNode, FunctionInfo

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


# --- summaries ---------------------------------------------------------------
def summarise(source: str, path: str) -> ModuleSummary | None:
    """The summary of one file of the run; None when it has nothing the mode
    flow could use. Never raises: a file that cannot be read this way is one
    the index knows nothing about."""
    # A loss helper (``def dsm_loss(scorenet, x): ... scorenet(x)``) has no
    # mode token, but a training step behind it trains what it is given.
    mode_code = any(t in source for t in MODE_TOKENS) or _may_call_parameter(source)
    rnn_code = any(t in source for t in RNN_TOKENS)
    # A file without mode code still tells callers which classes cannot take a mode call.
    rnn_code = rnn_code or any(t in source for t in OVERRIDE_TOKENS)
    package = os.path.basename(path) == "__init__.py" and "import" in source
    handler_code = any(t in source for t in HANDLER_TOKENS)
    tests = "TestCase" in source  # a base of other files' test classes
    load_code = any(t in source for t in LOAD_TOKENS)
    # A file of model classes and nothing else (``models.py``): a file that
    # builds one of them and runs it needs its class facts (a module, no
    # override in the way of ``eval()``) to fix it safely (RNF006).
    class_code = "Module" in source and "class " in source
    # A file of factories returning torchvision models (``def resnet50(classes):
    # net = models.resnet50(pretrained=True); ...; return net``): the same.
    class_code = class_code or ("torchvision" in source and "return" in source)
    # A function that prints, saves or plots what a model it is given computes.
    show_code = SINK_CALL.search(source) is not None and _may_run_parameter(source)
    # A function that may give back a value without a graph (``.item()``,
    # ``math.log``, a numpy call): ``ModuleSummary.detached``.
    detach_code = "return" in source and _DETACH_TEXT.search(source) is not None
    if not (
        mode_code
        or rnn_code
        or package
        or tests
        or handler_code
        or load_code
        or class_code
        or show_code
        or detach_code
    ):
        return None
    try:
        return _summarise(
            source,
            path,
            mode_code,
            rnn_code,
            handler_code,
            load_code,
            class_code,
            show_code,
            detach_code,
        )
    except Exception:  # noqa: BLE001 - a file the index cannot read is unknown, not fatal
        return None


def _summarise(
    source: str,
    path: str,
    mode_code: bool,
    rnn_code: bool,
    handler_code: bool = False,
    load_code: bool = False,
    class_code: bool = False,
    show_code: bool = False,
    detach_code: bool = False,
) -> ModuleSummary | None:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.grads.gradctx import definition_handling
    from rnnfix.analysis.modes.modeflow import ModeFlow
    from rnnfix.analysis.modes.receivers import ClassTable
    from rnnfix.analysis.project.ctorgrads import constructor, ctor_gradients
    from rnnfix.analysis.project.testcode import test_case_classes
    from rnnfix.analysis.syntax.imports import ImportMap
    from rnnfix.analysis.syntax.scopes import FileIndex
    from rnnfix.analysis.torch.classfacts import module_functions, weight_loaders
    from rnnfix.analysis.torch.models import ModuleClasses, module_attributes
    from rnnfix.analysis.torch.rnns import RnnIndex

    tree = ast.parse(source)
    imports = import_bindings(tree)
    functions: dict[str, FunctionSummary] = {}
    classes: dict[str, ClassSummary] = {}
    if mode_code or rnn_code or class_code:
        pruned, kept = _pruned(tree, line_texts(source))
        ctx = FileContext(source=source, tree=pruned, path=path)
        flow = ModeFlow(ctx, summaries_only=True) if mode_code else None
        index = flow.index if flow is not None else FileIndex(pruned, ctx.facts.imports)
        module_classes = (
            flow.classes if flow is not None else ModuleClasses(index, ctx.facts.imports)
        )
        # RNNs are assigned in methods that do not switch modes: the whole tree.
        rnns = RnnIndex(tree, ImportMap.build(tree)) if rnn_code else None
        # Class facts read every method (``__init__`` too): the whole tree.
        defs = {c.name: c for c in statements(tree.body) if isinstance(c, ast.ClassDef)}
        table = ClassTable(
            defs,
            ctx.facts.imports,
            module_classes.modules,
            None,
            os.path.basename(path),
            functions=module_functions(statements(tree.body)),
        )
        if flow is not None:
            for name, info in index.module_functions.items():
                fs = _function(flow, info) if info.node in kept else None
                if fs is not None:
                    functions[name] = fs
        known_forwards: dict[str, frozenset[str]] = {}

        def submodules_of(name: str) -> frozenset[str]:
            if flow is not None:
                return flow.submodules(defs[name])
            return module_attributes(defs[name], index, ctx.facts.imports, module_classes, {})

        for name in index.classes:
            methods: dict[str, FunctionSummary] = {}
            if flow is not None:
                for method_name in _method_names(index.classes, name):
                    method = index.method(name, method_name)
                    fs = (
                        _function(flow, method)
                        if method and method.is_method and method.node in kept
                        else None
                    )
                    if fs is not None:
                        methods[method_name] = fs
            specs = (rnns.of_class(name) if rnns is not None else None) or ()
            is_module = name in module_classes.modules
            ctor = constructor(name, defs) if methods else None
            grads = ctor_gradients(ctor, methods) if ctor is not None else {}
            if methods or specs or is_module:
                forwards = (
                    _forwards_with_bases(
                        name, defs, module_classes.modules, submodules_of, known_forwards
                    )
                    if is_module and name in defs
                    else frozenset()
                )
                overrides = table.overrides(name) if is_module else {}
                submodules = submodules_of(name) if is_module and name in defs else frozenset()
                state = table.holds_state(name) if is_module else True
                classes[name] = ClassSummary(
                    name,
                    is_module,
                    specs,
                    methods,
                    mode_overrides=overrides,
                    holds_state=state,
                    mode_layers=table.mode_layers(name) if is_module else False,
                    mode_free_needs=_sorted(table.mode_free(name)) if is_module else None,
                    weight_loaders=(
                        weight_loaders(defs[name]) if is_module and name in defs else frozenset()
                    ),
                    ctor_grads=grads,
                    forward_methods=forwards,
                    no_grad_methods=(
                        _grad_off_forwards(defs[name], submodules)
                        if is_module and name in defs
                        else frozenset()
                    ),
                    submodules=submodules,
                    init_params=ctor.params if ctor is not None else (),
                    init_kwonly=ctor.kwonly if ctor is not None else (),
                    stored=dict(ctor.stored) if ctor is not None else {},
                )
        # Cycles that hold the pruned tree, broken for reference counting
        # (``FileFacts.release``): the summaries are plain data.
        if flow is not None:
            flow.release()
        facts = ctx.__dict__.pop("facts", None)
        if facts is not None:
            facts.release()
    for cls in test_case_classes(tree, ImportMap.build(tree)) if "TestCase" in source else ():
        known = classes.get(cls.name)
        classes[cls.name] = (
            replace(known, is_test=True)
            if known is not None
            else ClassSummary(cls.name, False, (), is_test=True)
        )
    # Every module-level definition is recorded, the ones that do nothing to
    # grad or the mode too (an empty set): a decorator that only sets
    # ``__doc__`` (torchensemble's ``torchensemble_model_doc``) is then known
    # to handle nothing, as a definition of the caller's own file is, rather
    # than unknown (which leaves every region under it alone).
    handlers: dict[str, frozenset[str]] = {}
    import_map = ImportMap.build(tree) if handler_code or mode_code else None
    may_handle = _handler_text(source, import_map) if import_map is not None else None
    rebound = _rebound_defs(tree.body)
    for stmt in tree.body:
        if isinstance(stmt, (*_FUNCS, ast.ClassDef)) and stmt.name not in rebound:
            handlers[stmt.name] = (
                definition_handling(stmt, import_map)
                if may_handle is not None and import_map is not None and may_handle(stmt)
                else frozenset()
            )
    factories = _factories(tree, classes, rebound)
    factory_refs = _factory_refs(tree, classes, imports, rebound, factories)
    loaders = _loaders(tree) if load_code else {}
    loads_into = _loads_into(tree) if load_code else {}
    shows = _shows(tree, rebound) if show_code else {}
    detached = _detached(tree, rebound) if detach_code else {}
    handles = any(handlers.values())
    if not (
        functions
        or classes
        or factories
        or factory_refs
        or handles
        or loaders
        or loads_into
        or shows
        or detached
        or os.path.basename(path) == "__init__.py"
    ):
        return None
    # A file's calls of its own functions are not calls of another file's
    # (definitions are statements: no need to walk expressions).
    defined = {n.name for n in statements(tree.body) if isinstance(n, _FUNCS)}
    called = frozenset(_CALLED_NAME.findall(source)) - defined
    return ModuleSummary(
        functions,
        classes,
        imports,
        handlers,
        called,
        loaders,
        loads_into,
        factories,
        factory_refs=factory_refs,
        shows=shows,
        detached=detached,
    )


_DETACH_TEXT = re.compile(r"\.(?:item|detach|numpy|tolist)\(|\bmath\.|\bnp\.|\bnumpy\.|\bfloat\(")
# Functions longer than this are not read for ``ModuleSummary.detached``: a
# scorer is short, and the taint of a long function costs for nothing.
_DETACHED_MAX_NODES = 400


def _detached(tree: ast.Module, rebound: frozenset[str]) -> dict[str, bool]:
    """``ModuleSummary.detached``: the module-level functions whose every
    ``return`` drops the graph of whatever they are given
    (``escape.returns_detached``)."""
    from rnnfix.analysis.grads.escape import returns_detached
    from rnnfix.analysis.syntax.imports import ImportMap

    helpers = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    qualname = ImportMap.build(tree).qualname
    out: dict[str, bool] = {}
    for name, fn in helpers.items():
        if name in rebound or not fn.args.args:
            continue
        if sum(1 for _ in ast.walk(fn)) > _DETACHED_MAX_NODES:
            continue
        if returns_detached(fn, qualname, helpers):
            out[name] = True
    return out


def _shows(tree: ast.Module, rebound: frozenset[str]) -> dict[str, Shown]:
    """``ModuleSummary.shows``: the module-level functions that show what
    some of their parameters compute (``modes.shows``), but those named
    for evaluation (an evaluation region of their own file, judged there)."""
    from rnnfix.analysis.modes.regions import is_eval_function_name
    from rnnfix.analysis.modes.shows import positional_parameters, shown_parameters

    local = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    out: dict[str, Shown] = {}
    for name, func in local.items():
        if name in rebound or is_eval_function_name(name):
            continue
        params = positional_parameters(func)
        kwonly = tuple(a.arg for a in func.args.kwonlyargs)
        shown = shown_parameters(func, local, (*params, *kwonly))
        if shown:
            out[name] = Shown(params, kwonly, shown)
    return out


def _factories(
    tree: ast.Module, classes: dict[str, ClassSummary], rebound: frozenset[str]
) -> dict[str, ClassSummary]:
    """``ModuleSummary.factories``: ``def create_model(cfg): return Net(cfg)``
    where ``Net`` is a module class of the file (never rebound), or a
    torchvision builder (``model = models.resnet50(pretrained=True); model.fc
    = ...; return model``: a module of a class that overrides neither
    ``train`` nor ``eval``)."""
    from rnnfix.analysis.torch.classfacts import returned_class

    out: dict[str, ClassSummary] = {}
    for stmt in tree.body:
        if isinstance(stmt, _FUNCS) and stmt.name not in rebound:
            name = returned_class(stmt)
            found = classes.get(name) if name is not None and name not in rebound else None
            if found is None and name is not None and name not in rebound:
                found = _torchvision_built(tree, name)
            if found is not None and found.is_module:
                out[stmt.name] = found
    return out


def _factory_refs(
    tree: ast.Module,
    classes: dict[str, ClassSummary],
    imports: dict[str, Binding],
    rebound: frozenset[str],
    factories: dict[str, ClassSummary],
) -> dict[str, tuple[str, ...]]:
    """``ModuleSummary.factory_refs``: factories (``returned_class``) of a
    class the file imports rather than defines; whether it is a module class
    is read where it is asked, from the file that defines it."""
    from rnnfix.analysis.torch.classfacts import returned_class

    out: dict[str, tuple[str, ...]] = {}
    for stmt in tree.body:
        if not isinstance(stmt, _FUNCS) or stmt.name in rebound or stmt.name in factories:
            continue
        name = returned_class(stmt)
        if name is None or name in classes or name in rebound:
            continue
        parts = tuple(name.split("."))
        if parts[0] in imports and parts[0] not in rebound:
            out[stmt.name] = parts
    return out


def _torchvision_built(tree: ast.Module, name: str) -> ClassSummary | None:
    try:
        expr = ast.parse(name, mode="eval").body
    except SyntaxError:
        return None
    q = ImportMap.build(tree).qualname(expr)
    if q is None or not library.torchvision_builder(q):
        return None
    return ClassSummary(q, True, (), mode_layers=library.torchvision_mode_layers(q))


def _rebound_defs(body: list[ast.stmt]) -> frozenset[str]:
    """Module-level names defined more than once, or defined and assigned
    (``fn = wrap(fn)``): what the name ends up bound to is not read."""
    seen: set[str] = set()
    out: set[str] = set()
    for stmt in body:
        names: list[str] = []
        if isinstance(stmt, (*_FUNCS, ast.ClassDef)):
            names = [stmt.name]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        for name in names:
            (out if name in seen else seen).add(name)
            if not isinstance(stmt, (*_FUNCS, ast.ClassDef)):
                out.add(name)
    return frozenset(out)


def _handler_text(source: str, imports: ImportMap) -> Callable[[ast.stmt], bool]:
    """A necessary condition for ``gradctx.definition_handling(stmt)`` to find
    anything, read from the definition's text (decorators included): a mode
    call names ``eval``/``train``; a grad switch is an attribute named as a
    grad function's last part or a name imported as one. Identifiers are
    compared as written, so a file with non-ASCII text (identifiers are
    NFKC-normalised) is never ruled out this way."""
    from rnnfix.analysis.grads.gradctx import GRAD_NAMES

    if not source.isascii():
        return lambda stmt: True
    words = {"eval", "train", *(q.rsplit(".", 1)[-1] for q in GRAD_NAMES)}
    words.update(local for local, q in imports.names.items() if q in GRAD_NAMES)
    # Whole identifiers: ``self.training`` is not a ``train`` attribute.
    pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words))) + r")\b")
    # Lines as ``ast`` counts them (``ast.get_source_segment`` splits the same way).
    lines = _LINE_END.split(source)

    def may_handle(stmt: ast.stmt) -> bool:
        decorators = getattr(stmt, "decorator_list", [])
        first = min([stmt.lineno, *(d.lineno for d in decorators)])
        text = "\n".join(lines[first - 1 : stmt.end_lineno])
        return pattern.search(text) is not None

    return may_handle


_LINE_END = re.compile(r"\r\n|\r|\n")


def _loaders(tree: ast.Module) -> dict[str, bool]:
    from rnnfix.analysis.modes.loads import MODULE_LOADER, NOT_A_LOADER, returns_loaded_model
    from rnnfix.analysis.syntax.imports import ImportMap
    from rnnfix.analysis.syntax.scopes import ClassIndex
    from rnnfix.analysis.torch.models import ModuleClasses, built_class

    imports = ImportMap.build(tree)
    # Module classes need only the file's classes, not a whole ``FileIndex``.
    classes = ModuleClasses(ClassIndex(tree), imports)
    out: dict[str, bool] = {}
    for stmt in tree.body:
        if isinstance(stmt, _FUNCS):
            found = returns_loaded_model(
                stmt, imports.qualname, lambda v: built_class(v, imports, classes) is not None
            )
            if found != NOT_A_LOADER:
                out[stmt.name] = found == MODULE_LOADER
    return out


def _loads_into(tree: ast.Module) -> dict[str, tuple[int, str]]:
    from rnnfix.analysis.modes.loads import loads_into_param

    out: dict[str, tuple[int, str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, _FUNCS) and (found := loads_into_param(stmt)) is not None:
            out[stmt.name] = found
    return out


_CALLED_NAME = re.compile(r"\b(\w+)\s*\(")  # \b: fails fast inside a word, same matches
# ``def name(params`` up to the first ``)`` or ``:`` (annotations, defaults
# with calls: the parameters before them are enough for a pre-filter).
_DEF_PARAMS = re.compile(r"\bdef\s+\w+\s*\(([^):]*)")
_PARAM_NAME = re.compile(r"(?:^|,)\s*\**\s*([A-Za-z_]\w*)")


def _parameter_names(source: str) -> str | None:
    """The parameter names of the file's ``def``s (not ``self``/``cls``) as a
    regex alternation; None when there are none."""
    names = {
        name
        for params in _DEF_PARAMS.findall(source)
        for name in _PARAM_NAME.findall(params)
        if name not in ("self", "cls")
    }
    return "|".join(sorted(names)) if names else None


def _may_call_parameter(source: str) -> bool:
    """A necessary condition, read from text, for a function of the file to
    call one of its parameters (``scorenet(x)``): in torch code only, where
    such a function is a forward helper whose callers' training steps train
    the model they pass (``_calls_parameter`` decides on the tree)."""
    if "torch" not in source or "def " not in source:
        return False
    alternatives = _parameter_names(source)
    if alternatives is None:
        return False
    called = re.compile(r"\b(?:" + alternatives + r")\s*\(")
    if called.search(source) is not None:
        return True
    # ``model.val_start()`` as a statement: a method called for its effect on
    # an object a caller may know the class of (``Summary.object_calls``).
    effect = re.compile(r"^[ \t]*(?:" + alternatives + r")\s*\.[\w. \t]*\(", re.MULTILINE)
    return effect.search(source) is not None


def _may_run_parameter(source: str) -> bool:
    """A necessary condition, read from text, for a function of the file to
    run one of its parameters or a method of it anywhere (``net(x)``,
    ``out = model.encode(x)``): what ``shows`` needs of a file."""
    alternatives = _parameter_names(source)
    if alternatives is None:
        return False
    return re.search(r"\b(?:" + alternatives + r")\s*(?:\.\s*\w+\s*)*\(", source) is not None


def _calls_parameter(fn: FuncNode) -> bool:
    """``fn`` calls one of its own parameters (not ``self``): a forward helper
    (``dsm_score_estimation(scorenet, samples)`` runs ``scorenet``); or a
    method of one as a statement (``model.val_start()``: ``object_calls``)."""
    args = fn.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    params -= {"self", "cls"}
    if not params:
        return False
    call = ast.Call
    return any(  # ``walk_subtree``: ``ast.walk``'s nodes in one loop, without its generators
        (
            n.__class__ is call
            and isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in params
        )
        or (n.__class__ is ast.Expr and _parameter_method(n, params))
        for stmt in fn.body
        for n in walk_subtree(stmt)
    )


def _parameter_method(stmt: ast.AST, params: set[str]) -> bool:
    """``stmt`` is ``param.method(...)`` (or ``param.a.method(...)``)."""
    value = stmt.value if isinstance(stmt, ast.Expr) else None
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    root = value.func.value
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and root.id in params


def _pruned(tree: ast.Module, lines: list[str]) -> tuple[ast.Module, set[FuncNode]]:
    """The part of a module its summaries depend on: the top-level imports,
    and the functions and methods that switch modes or train (their text has
    a ``MODE_TOKENS`` token) or call one of their parameters (forward
    helpers), with the functions of the file they call and that call them,
    found by name; every other function is kept as a stub (its name still
    resolves, its body is ``pass``). Module-level code is
    dropped. Most of a large library file is not mode code: this is what keeps
    the index at about one ``ast.parse`` per file."""
    defs: list[FuncNode] = []
    for stmt in tree.body:
        if isinstance(stmt, _FUNCS):
            defs.append(stmt)
        elif isinstance(stmt, ast.ClassDef):
            defs.extend(s for s in stmt.body if isinstance(s, _FUNCS))
    # The body only: ``def backward(ctx, grad):`` is not a training step.
    text = {fn: "\n".join(lines[fn.body[0].lineno - 1 : fn.end_lineno]) for fn in defs}
    names = {fn.name for fn in defs}
    calls = {fn: set(_CALLED_NAME.findall(text[fn])) & names for fn in defs}
    keep = {fn for fn in defs if any(t in text[fn] for t in MODE_TOKENS) or _calls_parameter(fn)}
    down = {n for fn in keep for n in calls[fn]}  # what the mode code calls (forwards)
    changed = True
    while changed:
        kept = {fn.name for fn in keep}
        grown = {fn for fn in defs if fn.name in down or calls[fn] & kept}
        changed = not grown <= keep
        keep |= grown
        down |= {n for fn in grown for n in calls[fn]}

    def prune(fn: FuncNode) -> FuncNode:
        if fn in keep:
            return fn
        stub = copy.copy(fn)
        stub.body = [ast.copy_location(ast.Pass(), fn.body[0])]
        return stub

    body: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            body.append(stmt)
        elif isinstance(stmt, (ast.If, ast.Try)) and any(
            isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmt.body
        ):
            body.append(stmt)  # ``try: import x`` / ``if TYPE_CHECKING: import x``
        elif isinstance(stmt, _FUNCS):
            body.append(prune(stmt))
        elif isinstance(stmt, ast.ClassDef):
            cls = copy.copy(stmt)
            cls.body = [prune(s) if isinstance(s, _FUNCS) else s for s in stmt.body]
            body.append(cls)
    return ast.Module(body=body, type_ignores=[]), keep


def _function(flow: ModeFlow, info: FunctionInfo) -> FunctionSummary | None:
    summary = flow.summary(info)
    if summary.empty:
        return None
    return FunctionSummary(
        info.name, tuple(info.params), tuple(info.kwonly), info.is_method, summary
    )


def _method_names(classes: dict[str, ast.ClassDef], name: str) -> list[str]:
    """Methods of a class of the file, those of its bases in the same file included."""
    out: dict[str, None] = {}
    todo, seen = [name], set()
    while todo:
        current = todo.pop()
        cls = classes.get(current)
        if cls is None or current in seen:
            continue
        seen.add(current)
        for stmt in cls.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.setdefault(stmt.name, None)
        todo.extend(b.id for b in cls.bases if isinstance(b, ast.Name))
    return list(out)


def _sorted(names: frozenset[str] | None) -> tuple[str, ...] | None:
    return tuple(sorted(names)) if names is not None else None


def _forwards_with_bases(
    name: str,
    defs: dict[str, ast.ClassDef],
    modules: Collection[str],
    submodules_of: Callable[[str], frozenset[str]],
    known: dict[str, frozenset[str]],
) -> frozenset[str]:
    """``forwards.forward_methods`` of the file's class ``name``, its bases of
    the file counted (a base of another file is not read here). A module
    function, not a closure: a closure that calls itself is a reference
    cycle, and would keep the file's tree alive after its summary."""
    from rnnfix.analysis.torch.forwards import forward_methods

    found = known.get(name)
    if found is None:
        known[name] = frozenset()  # bases that cycle
        cls = defs[name]
        inherited = frozenset().union(
            *(
                _forwards_with_bases(b.id, defs, modules, submodules_of, known)
                for b in cls.bases
                if isinstance(b, ast.Name) and b.id in defs and b.id in modules
            )
        )
        found = known[name] = forward_methods(cls, submodules_of(name), inherited)
    return found


def _grad_off_forwards(cls: ast.ClassDef, submodules: frozenset[str]) -> frozenset[str]:
    """``forwards.grad_off_forwards`` (imported where used, as ``forward_methods``)."""
    from rnnfix.analysis.torch.forwards import grad_off_forwards

    return grad_off_forwards(cls, submodules)
