"""Inference classes (RNF006, issue 24.5): a plain class whose constructor
holds a model and whose other methods only run it (``Predictor.predict``,
``FIDEvaluation.calculate_inception_features``, ``encode_sentences``).

The load of such a model is "elsewhere" for the per-scope analysis of
``rnnfix.analysis.modes.inference``: the constructor binds ``self.<attr>`` and
the forwards run in other methods. This module finds, per class of the file,
each ``self.<attr>``

- bound once in the whole class, by a top-level statement of ``__init__``,
  to a parameter of it (``given``: the caller's model), to an object built
  from a class or loaded (``owned``: ``InceptionV3(...).to(device)``,
  ``torch.load(path)``, ``self.model.load_state_dict(...)``), or to
  ``from_pretrained(...)`` (``pretrained``: its mode is the library's);
- run by the other methods (``self.<attr>(x)``, ``self.<attr>.forward(x)``,
  a helper of this file or of the run that runs it) and nothing else: no
  mode call on it anywhere in the file, not aliased (``model = self.model``),
  not handed to code that may train it or that rnnfix cannot read, no method
  named for training run on it.

Precision first: the file trains nothing (``InferenceAnalysis.trains``: no
training step, optimizer, gradient use or ``train()``), the class is not a
module (a module's mode is its user's), not a test, defines no mode setters
of its own (``train``/``eval`` methods: its callers choose), and a ``given``
object must look like a module (a module method called on it, or results
read as tensors). What the rule may do with each is decided in
``rnnfix.rules.rnf006.classes``.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from rnnfix.analysis.grads.gradctx import Handlers
from rnnfix.analysis.modes.inference import InferenceAnalysis, handled_around
from rnnfix.analysis.modes.loads import (
    LoadFinder,
    is_checkpoint_load,
    is_torch_load,
    state_dict_receiver,
    unwrap_value,
)
from rnnfix.analysis.modes.modeluse import ModelUses
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.walks import FUNCTIONS, nodes_of, walk_local, walk_tree, words
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.api import MODULE_METHODS, module_mode_switch
from rnnfix.source.files import is_test_source

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.syntax.scopes import FuncNode

Origin = Literal["given", "owned", "pretrained"]

# ``self.<name> = ...`` and ``self.<name>(``: the text every class inference has.
_BOUND = re.compile(r"self\.(\w+)\s*(?::[^=\n]*)?=[^=]")
# Reads of a forward's result that only a tensor (or a tensor container) has.
_TENSOR_READS = frozenset(
    {"data", "detach", "cpu", "numpy", "item", "argmax", "softmax", "log_softmax", "topk",
     "max", "squeeze", "unsqueeze", "view"}
)  # fmt: skip


_TORCH_ONLY_READS = frozenset({"data", "detach"})


# A class statement with no base but ``object``/``ABC`` (``InferenceClasses._plain``
# asks for one), comments and continued lines allowed inside its parentheses.
_PLAIN_CLASS = re.compile(
    r"\bclass[ \t\f\\\r\n]+\w+[ \t\f\\\r\n]*"
    r"(?:\((?:[\s\\,]|#[^\n]*|object|abc[ \t\f]*\.[ \t\f]*ABC|ABC)*\))?[ \t\f\\\r\n]*:"
)


def class_text(source: str) -> bool:
    """A necessary condition for ``InferenceClasses.find``: a class with no
    base but ``object`` and an ``__init__`` binds ``self.<name>`` and calls
    ``self.<name>(`` or passes ``self.<name>`` on (a helper that runs it)."""
    if "class " not in source or "__init__" not in source:
        return False
    if _PLAIN_CLASS.search(source) is None:
        return False
    for name in set(_BOUND.findall(source)):
        if f"self.{name}(" in source or f"self.{name}," in source or f"self.{name})" in source:
            return True
        if f"self.{name}.forward(" in source:
            return True
    return False


@dataclass
class ClassForward:
    method: FuncNode
    site: ast.Call
    needs_grad: bool


@dataclass
class ClassInference:
    cls: ast.ClassDef
    attr: str  # "self.model"
    bind: ast.stmt  # the statement of ``__init__`` that binds it
    origin: Origin
    after: ast.stmt  # where an ``eval()`` would go (after the bind or its load)
    needs_eval: bool
    forwards: list[ClassForward] = field(default_factory=list)


class InferenceClasses:
    """One per file: ``find()`` lists each model held by an inference class."""

    def __init__(self, ctx: FileContext, analysis: InferenceAnalysis | None = None) -> None:
        self.ctx = ctx
        self.analysis = analysis or InferenceAnalysis(ctx)
        self.uses = ModelUses(ctx)

    @functools.cached_property
    def handlers(self) -> Handlers:
        return Handlers(self.ctx)

    @functools.cached_property
    def finder(self) -> LoadFinder:
        return LoadFinder(self.ctx)

    def find(self) -> list[ClassInference]:
        ctx = self.ctx
        if is_test_source(ctx.path, ctx.source) or not class_text(ctx.source):
            return []
        if _other_framework(ctx.tree):
            return []  # a TensorFlow/JAX wrapper's ``self.model(x)`` is no torch forward
        candidates = [c for c in ctx.tree.body if isinstance(c, ast.ClassDef) and self._plain(c)]
        if not candidates:
            return []
        held = [h for c in candidates for h in self._held(c)]
        if not held or self.analysis.trains():
            return []
        out: list[ClassInference] = []
        for h in held:
            found = self._forwards(h)
            if found is not None and found.forwards:
                out.append(found)
        return out

    # --- which classes and attributes -------------------------------------
    def _plain(self, cls: ast.ClassDef) -> bool:
        """Not a module, a Lightning module or a test class; no mode setters
        of its own; an ``__init__``."""
        # The syntactic tests first: the module tables read other files.
        if cls.name.startswith("Test"):
            return False
        names = {s.name for s in cls.body if isinstance(s, FUNCTIONS)}
        if "__init__" not in names or names & {"forward", "train", "eval"}:
            return False
        # A subclass (``TensorFlowModelWrapper(ModelWrapper)``): its bases'
        # methods, read nowhere here, may set the mode or say what it wraps.
        if any(dotted(b) not in ("object", "ABC", "abc.ABC") for b in cls.bases):
            return False
        # An abstract base (``GoalFunction(ABC)``, ``VerificationBase``): its
        # subclasses, elsewhere, complete what the model is run for.
        if _abstract(cls):
            return False
        classes = self.finder.classes
        return cls.name not in classes.modules and cls.name not in classes.lightning

    def _held(self, cls: ast.ClassDef) -> list[ClassInference]:
        init = next(s for s in cls.body if isinstance(s, FUNCTIONS) and s.name == "__init__")
        binds: dict[str, list[ast.stmt]] = {}
        for node in ast.walk(cls):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        text = dotted(n) if isinstance(n, ast.Attribute) else None
                        if text is not None and text.count(".") == 1 and text.startswith("self."):
                            binds.setdefault(text, []).append(node)
        params = {a.arg for a in (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)}
        out: list[ClassInference] = []
        for attr, stmts in binds.items():
            # ``self.model = self.model.to(device)`` keeps the object.
            stmts = [s for s in stmts if not _rebinds_itself(s, attr)]
            if len(stmts) != 1 or stmts[0] not in init.body:
                continue
            bind = stmts[0]
            if not isinstance(bind, (ast.Assign, ast.AnnAssign)) or bind.value is None:
                continue
            if isinstance(bind, ast.Assign) and len(bind.targets) != 1:
                continue
            if dotted(bind.targets[0] if isinstance(bind, ast.Assign) else bind.target) != attr:
                continue  # a tuple target
            value: ast.expr = bind.value
            local = _built_local(init, bind, params)
            if local is _SWITCHED:
                continue  # ``net.eval()`` in ``__init__``: the author sets its mode
            if local is not None:
                value = local  # ``net = Net(); net.load_state_dict(...); self.net = net``
            origin = self._origin(value, params)
            if origin is None:
                continue
            after = self._load_after(init, bind, attr)
            # A class rnnfix reads with no layer whose forward depends on the
            # mode (``nn.Linear`` and ``ReLU``): ``eval()`` would change nothing.
            needs_eval = origin == "given" or (
                origin == "owned" and self._mode_layers(value) is not False
            )
            out.append(ClassInference(cls, attr, bind, origin, after, needs_eval))
        return out

    def _origin(self, value: ast.expr, params: set[str]) -> Origin | None:
        if any(
            isinstance(n, ast.Attribute) and n.attr == "from_pretrained" for n in ast.walk(value)
        ):
            # ``AutoTokenizer.from_pretrained(...)`` is no model.
            return None if _names_processor(value) else "pretrained"
        inner, picked = unwrap_value(value)
        qualname = self.ctx.facts.imports.qualname
        if isinstance(inner, ast.Name) and inner.id in params and not picked:
            return "given"
        if is_torch_load(inner, qualname) or is_checkpoint_load(inner):
            return "owned"
        if isinstance(inner, ast.Call) and not picked:
            ref = self.ctx.facts.receivers.table.ref_call(inner)
            if ref.module is True and ref.stateful:
                return "owned"
            if ref.module is None and _class_like(inner.func, qualname):
                # ``InceptionV3([idx]).to(device)``: a class of a library the
                # run does not hold; moved to a device, so an object with
                # module methods (``_module_evidence`` is asked later).
                return "owned" if stripped_to_device(value) else None
        return None

    def _mode_layers(self, value: ast.expr) -> bool | None:
        """Whether what ``value`` builds has Dropout/BatchNorm or reads
        ``self.training`` (True), provably none as far as its readable classes
        show (False), or its class is not readable (None)."""
        inner, _ = unwrap_value(value)
        if not isinstance(inner, ast.Call):
            return None
        table = self.ctx.facts.receivers.table
        if table.ref_call(inner).module is not True:
            return None
        qualname = self.ctx.facts.imports.qualname
        view = self.ctx.facts.project
        for node in ast.walk(inner):
            if not isinstance(node, ast.Call):
                continue
            q = qualname(node.func) or ""
            if library.mode_layer(q):
                return True
            if isinstance(node.func, ast.Name) and node.func.id in table.classes:
                if table.mode_layers(node.func.id):
                    return True
                continue
            found = view.lookup_class(node.func) if view is not None else None
            if found is not None and found.is_module and found.mode_layers:
                return True
            if found is None and not q.startswith("torch.nn.") and table.ref(node.func).module:
                return None  # a module class of a library: not readable
        return False

    def _load_after(self, init: ast.AST, bind: ast.stmt, attr: str) -> ast.stmt:
        """The last top-level statement of ``__init__`` after ``bind`` that
        loads weights into ``attr`` (``self.model.load_state_dict(...)``)."""
        assert isinstance(init, FUNCTIONS)
        last = bind
        for stmt in init.body[init.body.index(bind) + 1 :]:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                if state_dict_receiver(stmt.value) == attr:
                    last = stmt
        return last

    # --- what the other methods do with it ---------------------------------
    def _forwards(self, h: ClassInference) -> ClassInference | None:
        attr = h.attr
        if self._switched_anywhere(attr) or self._aliased(h.cls, attr):
            return None
        # A given object must be shown to be a model: a module method called
        # on it, an annotation, or a model's name and results read as
        # tensors (``self.transforms(img, target)``, ``self.score_func(out)``
        # and tokenizers are called too).
        module_evidence = (
            h.origin == "owned"
            or self._module_methods(h.cls, attr)
            or self._annotated_module(h.cls, attr)
        )
        named = _model_name(attr.split(".", 1)[1])
        # In a file that does not import torch, only reads no other framework
        # has (a Keras model's wrapper returns ``preds.numpy()``).
        reads = _TENSOR_READS if self.ctx.facts.torch_name() is not None else _TORCH_ONLY_READS
        if h.origin == "given" and self._caller_sets_mode(h):
            h.needs_eval = False
        for fn in h.cls.body:
            if not isinstance(fn, FUNCTIONS) or fn.name == "__init__":
                continue
            for call in self.analysis.flow.scope_calls(fn):
                kind = self.uses.use(call, attr, fn)
                if kind == "block":
                    return None
                if kind is None:
                    continue
                grad = self._needs_grad(call, fn)
                if grad is None:
                    return None  # a wrapper rnnfix cannot read: it may manage both
                if grad and kind == "helper":
                    grad = self.uses.helper_grad(call, attr, fn)
                if not module_evidence and named and kind == "direct":
                    module_evidence = _read_as_tensor(call, fn, reads)
                h.forwards.append(ClassForward(fn, call, grad))
        return h if module_evidence else None

    def _caller_sets_mode(self, h: ClassInference) -> bool:
        """A constructor call in this file passes an object whose mode the
        file sets (``model.eval(); return QueryHandler(model, ...)``)."""
        init = next(s for s in h.cls.body if isinstance(s, FUNCTIONS) and s.name == "__init__")
        inner, _ = unwrap_value(getattr(h.bind, "value", None) or ast.Constant(None))
        if not isinstance(inner, ast.Name):
            return False
        params = [a.arg for a in (*init.args.posonlyargs, *init.args.args)]
        if inner.id not in params:
            return False
        index = params.index(inner.id) - 1  # ``self`` is not passed
        for node in nodes_of(self.ctx.tree, ast.Call):
            assert isinstance(node, ast.Call)
            if dotted(node.func) not in (h.cls.name, "cls"):
                continue
            arg: ast.expr | None = node.args[index] if 0 <= index < len(node.args) else None
            arg = next((k.value for k in node.keywords if k.arg == inner.id), arg)
            text = dotted(unwrap_value(arg)[0]) if arg is not None else None
            if text is not None and self.analysis._switched(text):
                return True
        return False

    def _switched_anywhere(self, attr: str) -> bool:
        """A mode call on ``self.<name>`` or on ``<instance>.<name>`` anywhere
        in the file (``predictor.model.eval()``): the author sets its mode."""
        suffix = "." + attr.split(".", 1)[1]
        for node in nodes_of(self.ctx.tree, ast.Call):
            switch = module_mode_switch(node)
            if switch is not None:
                text = dotted(strip_self_returning(switch.receiver)) or ""
                if text == attr or text.endswith(suffix):
                    return True
        return self.analysis._switched(attr)

    def _aliased(self, cls: ast.ClassDef, attr: str) -> bool:
        """``model = self.model``, ``return self.model``, ``(self.model, x)``:
        the object is reached under another name, which this analysis does
        not follow (an argument of a call is ``ModelUses``' business)."""
        for node in ast.walk(cls):
            value: ast.expr | None = None
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                if isinstance(node, ast.Assign) and _rebinds_itself(node, attr):
                    continue
                value = node.value
            elif isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)):
                value = node.value
            elif isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                value = node
            if value is None:
                continue
            stripped = strip_self_returning(value)
            value = stripped if isinstance(stripped, ast.expr) else value
            elts: list[ast.expr | None] = [value]
            if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
                elts = list(value.elts)
            elif isinstance(value, ast.Dict):
                elts = list(value.values)
            if any(e is not None and dotted(_unstar(e)) == attr for e in elts):
                return True
        return False

    def _annotated_module(self, cls: ast.ClassDef, attr: str) -> bool:
        """``def __init__(self, model: nn.Module)`` bound to ``attr``."""
        init = next(s for s in cls.body if isinstance(s, FUNCTIONS) and s.name == "__init__")
        bind = next(
            (
                s
                for s in init.body
                if isinstance(s, ast.Assign) and [dotted(t) for t in s.targets] == [attr]
            ),
            None,
        )
        if bind is None:
            return False
        inner, _ = unwrap_value(bind.value)
        if not isinstance(inner, ast.Name):
            return False
        args = (*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs)
        table = self.ctx.facts.receivers.table
        return any(
            a.arg == inner.id
            and a.annotation is not None
            and table.ref(a.annotation).module is True
            for a in args
        )

    def _module_methods(self, cls: ast.ClassDef, attr: str) -> bool:
        for node in ast.walk(cls):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in MODULE_METHODS
                and dotted(node.func.value) == attr
            ):
                return True
        return False

    def _needs_grad(self, call: ast.Call, fn: FuncNode) -> bool | None:
        handled = handled_around(self.handlers, self.ctx.facts.parents, call, fn)
        if handled is None:
            return None
        return (
            "grad" not in handled
            and not self.analysis._grad_switched
            and self.analysis.flow.grad_enabled(call) is not False
        )


# ``_built_local``'s answer for a local whose mode ``__init__`` sets itself.
_SWITCHED = ast.Constant(value=None)


def _built_local(init: FuncNode, bind: ast.stmt, params: set[str]) -> ast.expr | None:
    """``self.net = net.cuda()`` where ``net`` is a local of ``__init__``, not a
    parameter, bound once by a top-level statement before ``bind``
    (``net = Net(**opt)``, then ``net.load_state_dict(...)``): the value it
    was bound to, which says what the class holds. ``_SWITCHED`` when
    ``__init__`` calls ``train()``/``eval()`` on the local; None for any other
    value."""
    value = getattr(bind, "value", None)
    inner, picked = unwrap_value(value) if value is not None else (None, False)
    if not isinstance(inner, ast.Name) or picked or inner.id in params:
        return None
    name = inner.id
    found: list[ast.expr] = []
    for node in walk_local(init):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                    return None
                if dotted(unwrap_value(node.value)[0]) != name:  # ``net = net.cuda()`` keeps it
                    found.append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.arguments)):
            bound = [n for n in ast.walk(node) if isinstance(n, (ast.Name, ast.arg))]
            if any(getattr(n, "id", getattr(n, "arg", None)) == name for n in bound
                   if isinstance(n, ast.arg) or isinstance(n.ctx, ast.Store)):  # fmt: skip
                return None
        elif isinstance(node, ast.Call):
            switch = module_mode_switch(node)
            if switch is not None and dotted(strip_self_returning(switch.receiver)) == name:
                return _SWITCHED
    if len(found) != 1:
        return None
    binding = next(
        (s for s in init.body if isinstance(s, ast.Assign) and s.value is found[0]), None
    )
    if binding is None or init.body.index(binding) > init.body.index(bind):
        return None  # bound in a branch or a loop, or after ``bind``
    return found[0]


def stripped_to_device(value: ast.expr) -> bool:
    """``X(...).to(device)`` / ``.cuda()``: moved to a device where it is built."""
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in ("to", "cuda")
    )


def _class_like(func: ast.expr, qualname: Callable[[ast.expr], str | None]) -> bool:
    """A call of a name that reads as a class (``InceptionV3``), not of a
    torch tensor constructor (``torch.FloatTensor``)."""
    text = dotted(func)
    if text is None:
        return False
    last = text.rsplit(".", 1)[-1]
    q = qualname(func)
    if q is not None and q.startswith("torch.") and not q.startswith("torch.nn."):
        return False
    return last[:1].isupper() and not last.isupper()


# Attribute names that say "a model" (weak evidence, only with results read
# as tensors): ``model``, ``seq2seq_model``, ``net``, ``encoder``.
_MODEL_WORDS = frozenset(
    {"model", "net", "network", "encoder", "decoder", "generator", "discriminator",
     "classifier", "backbone", "seq2seq", "rnn", "lstm", "gru", "transformer"}
)  # fmt: skip


_PROCESSORS = ("Tokenizer", "TokenizerFast", "Config", "Processor", "FeatureExtractor", "Scheduler")


def _names_processor(value: ast.expr) -> bool:
    for n in ast.walk(value):
        if isinstance(n, ast.Attribute) and n.attr == "from_pretrained":
            last = (dotted(n.value) or "").rsplit(".", 1)[-1]
            return last.endswith(_PROCESSORS) or "token" in last.lower()
    return False


def _model_name(name: str) -> bool:
    return bool(set(words(name)) & _MODEL_WORDS)


_OTHER_FRAMEWORKS = ("tensorflow", "keras", "jax", "flax", "paddle", "mxnet", "sklearn")


def _other_framework(tree: ast.Module) -> bool:
    for node in walk_tree(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(n.split(".")[0] in _OTHER_FRAMEWORKS for n in names):
            return True
    return False


def _abstract(cls: ast.ClassDef) -> bool:
    for base in cls.bases:
        if (dotted(base) or "").rsplit(".", 1)[-1] in ("ABC", "ABCMeta"):
            return True
    if any(k.arg == "metaclass" for k in cls.keywords):
        return True
    return any(
        isinstance(s, FUNCTIONS)
        and any((dotted(d) or "").endswith("abstractmethod") for d in s.decorator_list)
        for s in cls.body
    )


def _rebinds_itself(stmt: ast.stmt, attr: str) -> bool:
    value = getattr(stmt, "value", None)
    return (
        isinstance(stmt, ast.Assign)
        and value is not None
        and value is not strip_self_returning(value)
        and dotted(unwrap_value(value)[0]) == attr
    )


def _unstar(expr: ast.expr) -> ast.expr:
    return expr.value if isinstance(expr, ast.Starred) else expr


def _read_as_tensor(call: ast.Call, fn: FuncNode, reads: frozenset[str]) -> bool:
    """The forward's result is read with a tensor method or attribute
    (``out.data``, ``self.model(x).argmax(-1)``, ``logits[0].max(1)``): the
    object is a model that returns tensors, not a tokenizer or a callback."""
    names: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and node.value is call:
            for t in node.targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and node.attr in reads:
            base = node.value
            while isinstance(base, (ast.Subscript, ast.Attribute, ast.Call)):
                if base is call:
                    return True
                base = base.value if not isinstance(base, ast.Call) else base.func
            if base is call or (isinstance(base, ast.Name) and base.id in names):
                return True
    return False
