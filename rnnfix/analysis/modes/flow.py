"""The abstract interpreter that carries model modes through one scope.

It walks a function's (or the module's) statements in order with a ``Frame``
of facts: ``if``/``else`` and ``match`` join their branches, loops iterate to a
fixed point (the end of the body and every ``continue`` flow into the next
iteration; ``break`` and the exhausted loop flow out), ``try`` joins its
handlers with the body, ``finally`` also runs on ``return``, and
``return``/``raise`` end a path. Calls change modes through ``.eval()`` /
``.train(...)`` on a model or through the summary of a function of this file
or (with a project index) of another file of the run; any other call changes
nothing. ``before`` keeps, for every statement
reached, the join of all states it was reached with.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.elements import Elements
from rnnfix.analysis.modes.loadermode import returned_switches, switch_mode
from rnnfix.analysis.modes.mayalias import Alias, module_plain_names, plain_names
from rnnfix.analysis.modes.pretrained import transformers_load
from rnnfix.analysis.modes.records import Effect, Summary
from rnnfix.analysis.modes.state import Facts, Frame, ModeFact, is_prefix, join
from rnnfix.analysis.syntax.names import SELF_RETURNING, dotted
from rnnfix.analysis.syntax.scopes import FuncNode, Resolved
from rnnfix.analysis.syntax.walks import CONTEXTS, child_nodes
from rnnfix.analysis.torch.api import mode_switch, module_mode_switch
from rnnfix.analysis.torch.mode import Mode
from rnnfix.analysis.torch.models import assignment_pairs, built_class, mode_receiver, unwrap_built
from rnnfix.analysis.torch.passthrough import passed_back

if TYPE_CHECKING:
    from rnnfix.analysis.modes.flowview import FlowView

MAX_LOOP_PASSES = 32  # the lattice is finite; this only guards against a bug


@dataclass
class Loop:
    breaks: list[Frame] = field(default_factory=list)
    continues: list[Frame] = field(default_factory=list)


# Calls that end the program: nothing after them runs (a test-only branch of a
# training script that evaluates and then calls ``quit()``).
_PROGRAM_EXITS = frozenset({"sys.exit", "os._exit", "os.abort"})
_BUILTIN_EXITS = frozenset({"exit", "quit"})


def ends_program(expr: ast.expr, qualname: Callable[[ast.AST], str | None]) -> bool:
    """``expr`` is ``sys.exit(...)``, ``os._exit(...)``, ``os.abort()`` or the
    builtins ``exit(...)``/``quit(...)`` (a name no import rebinds)."""
    if not isinstance(expr, ast.Call):
        return False
    q = qualname(expr.func)
    if q is not None:
        return q in _PROGRAM_EXITS
    return isinstance(expr.func, ast.Name) and expr.func.id in _BUILTIN_EXITS


def _own_method_result(value: ast.expr, key: str, canonical: Callable[[str], str]) -> bool:
    """``model = model.merge_and_unload()``: what a model's own method returns,
    bound to the model's own name, is the model itself or modules taken from
    it (``get_base_model()``, ``merge_and_unload()``, ``fuse()``), in the mode
    they had. Not a loader (``model.from_pretrained(...)``,
    ``model.load_from_checkpoint(...)``): that builds a new object."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return False
    name = value.func.attr.lower()
    if name.startswith(("from_", "load", "build", "create", "make", "new")):
        return False
    recv = dotted(value.func.value)
    return recv is not None and canonical(recv) == key


def chained_mode(value: ast.AST) -> Mode | None:
    """The mode the last mode call in a self-returning chain sets:
    ``Net().to(dev).eval()`` -> eval."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in SELF_RETURNING
    ):
        switch = mode_switch(value)
        if switch is not None:
            return switch.mode
        value = value.func.value
    return None


def _guard_key(test: ast.expr) -> tuple[str, bool]:
    """``not x`` is ``x`` with the branches swapped. Once per test node (a
    loop's body is interpreted several times, and every summary again)."""
    found = _GUARD_KEYS.get(test)
    if found is None:
        node, polarity = test, True
        while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            node, polarity = node.operand, not polarity
        found = _GUARD_KEYS[test] = (ast.dump(node), polarity)
    return found


# Dropped with the tree (trees are never changed after parsing).
# Per mode flow: the containers its loops switch the models of.
_ELEMENTS: weakref.WeakKeyDictionary[FlowView, Elements] = weakref.WeakKeyDictionary()
_GUARD_KEYS: weakref.WeakKeyDictionary[ast.expr, tuple[str, bool]] = weakref.WeakKeyDictionary()


def calls_in(node: ast.AST | None) -> list[ast.Call]:
    """Calls in an expression, arguments before the call that uses them (the
    order Python evaluates them), not entering lambdas or nested defs."""
    out: list[ast.Call] = []
    if node is None:
        return out
    # A post-order walk on a stack (a recursive one cost a Python call per
    # node): a call goes below its children, popped once they are done.
    stack: list[tuple[ast.AST, bool]] = [(node, False)]
    pop, push = stack.pop, stack.append
    contexts = CONTEXTS
    while stack:
        n, done = pop()
        if done:
            out.append(n)  # type: ignore[arg-type]  # only calls are pushed done
            continue
        if isinstance(n, _OWN_SCOPES):
            continue
        if isinstance(n, ast.Call):
            push((n, True))
        children = child_nodes(n)
        for child in reversed(children):
            if child.__class__ not in contexts:  # ``Load``/``Store``: no calls below
                push((child, False))
    return out


_OWN_SCOPES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ASSIGNMENTS = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign})


class ScopeRun:
    """One pass of the interpreter over one scope."""

    def __init__(
        self,
        flow: FlowView,
        scope: FuncNode | None,
        scope_node: ast.AST,
        entry: Callable[[str], Facts],
    ) -> None:
        self.flow = flow
        self.scope = scope
        self.scope_node = scope_node
        self.entry = entry
        self.before: dict[ast.stmt, Frame] = {}
        self.call_frames: dict[ast.Call, Frame] = {}  # state just before a resolved call
        self.resolved: dict[ast.Call, Resolved] = {}
        self.returns: list[Frame] = []
        self.loops: list[Loop] = []
        self.guards: list[tuple[str, bool]] = []  # enclosing ``if`` tests

    @property
    def plain(self) -> frozenset[str]:
        """``mayalias.plain_names`` of this scope: computed once per scope of
        the flow (a scope is run many times: per caller, per summary)."""
        memo = self.flow._plain_names
        found = memo.get(self.scope_node)
        if found is None:
            body = getattr(self.scope_node, "body", None)
            if isinstance(self.scope_node, ast.Module):
                found = module_plain_names(self.scope_node)
            else:
                found = plain_names(body) if isinstance(body, list) else frozenset()
            memo[self.scope_node] = found
        return found

    def key(self, text: str) -> str:
        """The path the flow tracks ``text`` under here (must-aliases resolved)."""
        return self.flow.canonical(text, self.scope)

    def fact(self, mode: Mode, origin: ast.AST) -> frozenset[ModeFact]:
        guard = self.guards[-1] if self.guards else None
        return frozenset({ModeFact(mode, origin, None, guard)})

    def run(self, body: list[ast.stmt]) -> Frame | None:
        end = self.block(body, Frame(self.entry))
        return join([end, *self.returns])

    # --- statements --------------------------------------------------------
    def block(self, body: list[ast.stmt], frame: Frame | None) -> Frame | None:
        for stmt in body:
            if frame is None:
                return None
            frame = self.stmt(stmt, frame)
        return frame

    def stmt(self, s: ast.stmt, f: Frame) -> Frame | None:
        old = self.before.get(s)
        merged = join([old, f]) if old is not None else f.copy()
        assert merged is not None
        self.before[s] = merged
        # The commonest statements first (the kinds below are disjoint).
        cls = s.__class__
        if cls in _ASSIGNMENTS:
            return self.assign(s, f)  # type: ignore[arg-type]
        if cls is ast.Expr:
            if ends_program(s.value, self.flow.imports.qualname):  # type: ignore[attr-defined]
                return None
            return self.exprs(s, f)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return f
        if isinstance(s, ast.Return):
            self.returns.append(self.exprs(s.value, f))
            return None
        if isinstance(s, ast.Raise) or (
            isinstance(s, ast.Expr) and ends_program(s.value, self.flow.imports.qualname)
        ):
            return None
        if isinstance(s, ast.Assert):
            if isinstance(s.test, ast.Constant) and not s.test.value:
                return None  # ``else: assert False``: no path goes on from here
            f = self.exprs(s.test, f)
            return f if assume_mode(self, s, s.test, True, f) else None
        if isinstance(s, (ast.Break, ast.Continue)):
            if self.loops:
                target = self.loops[-1]
                (target.breaks if isinstance(s, ast.Break) else target.continues).append(f.copy())
            return None
        if isinstance(s, ast.If):
            f = self.exprs(s.test, f)
            test, polarity = _guard_key(s.test)
            outs: list[Frame | None] = []
            for body, value in ((s.body, polarity), (s.orelse, not polarity)):
                branch = f.copy()
                branch.assume((test, value))
                if not assume_mode(self, s, s.test, value == polarity, branch):
                    outs.append(None)  # ``if not model.training: raise``
                    continue
                self.guards.append((test, value))
                outs.append(self.block(body, branch))
                self.guards.pop()
            return join(outs)
        if isinstance(s, (ast.For, ast.AsyncFor)):
            return self.loop(s, self.exprs(s.iter, f), None)
        if isinstance(s, ast.While):
            return self.loop(s, f, s.test)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                f = self.exprs(item.context_expr, f)
            return self.block(s.body, f)
        if isinstance(s, (ast.Try, ast.TryStar)):
            return self.try_(s, f)
        if isinstance(s, ast.Match):
            f = self.exprs(s.subject, f)
            return join([f, *(self.block(c.body, f.copy()) for c in s.cases)])
        if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return self.assign(s, f)
        return self.exprs(s, f)

    def loop(
        self, s: ast.For | ast.AsyncFor | ast.While, entry: Frame, test: ast.expr | None
    ) -> Frame | None:
        ctx = Loop()
        self.loops.append(ctx)
        head = entry.copy()
        tested = head
        back: list[Frame] = []
        for _ in range(MAX_LOOP_PASSES):
            tested = self.exprs(test, head.copy()) if test is not None else head.copy()
            end = self.block(s.body, tested.copy())
            inside = self.flow.contains(s)
            back = [b.unguarded(inside) for b in [end, *ctx.continues] if b is not None]
            new_head = join([entry, *back])
            assert new_head is not None
            if new_head.same_as(head):
                break
            head = new_head
        self.loops.pop()
        infinite = (
            isinstance(s, ast.While) and isinstance(s.test, ast.Constant) and bool(s.test.value)
        )
        exit_from: Frame | None = tested
        if isinstance(s, ast.For) and self._elements().of_loop(s):
            # ``for m in (encoder, decoder):``: written-out elements, so the
            # body runs at least once; the loop never exits as it entered.
            exit_from = join(back)
        elif isinstance(s, ast.For) and tested is not None and back:
            # A loop over a container of modules filled at run time may run
            # no time at all, but then the container has no element to be
            # in another mode: its path leaves the loop as the body left it.
            path = self._covered_container(s)
            done = join(back) if path is not None else None
            if path is not None and self._elements().elements_of(path, s):
                exit_from = done  # its keys are written out: the body runs
            elif path is not None and done is not None:
                exit_from = tested.copy()
                exit_from.set(path, done.lookup(path))
        normal = None if infinite or exit_from is None else self.block(s.orelse, exit_from.copy())
        return join([normal, *ctx.breaks])

    def try_(self, s: ast.Try | ast.TryStar, f: Frame) -> Frame | None:
        outer_returns = self.returns
        self.returns = []
        body_end = self.block(s.body, f.copy())
        # An exception may come from anywhere in the body.
        seen = [self.before[b] for b in s.body if b in self.before]
        handler_in = join([f, body_end, *seen])
        outs: list[Frame | None] = []
        for h in s.handlers:
            outs.append(self.block(h.body, handler_in.copy() if handler_in else None))
        outs.append(self.block(s.orelse, body_end) if body_end is not None else None)
        normal = join(outs)
        inner_returns, self.returns = self.returns, outer_returns
        if not s.finalbody:
            self.returns.extend(inner_returns)
            return normal
        # ``finally`` runs on the way out of a ``return`` too: a helper that
        # restores train() in ``finally`` restores it for its callers.
        if inner_returns:
            after = self.block(s.finalbody, join(inner_returns))
            if after is not None:
                self.returns.append(after)
        return self.block(s.finalbody, normal) if normal is not None else None

    def assign(self, s: ast.Assign | ast.AnnAssign | ast.AugAssign, f: Frame) -> Frame:
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        single = dotted(targets[0]) if len(targets) == 1 else None
        f = self.exprs(s.value, f, ctor_target=single)
        for t in targets:
            for name in _bound(t):
                f.saved.pop(name, None)
                f.drop_aliases(name)
        self._bind_alias(s, f)
        saved = _mode_read(self, s.value)
        if saved is not None and single is not None:
            f.saved[single] = (saved, f.lookup(saved))  # ``was = model.training``
        if isinstance(s, ast.AugAssign) or s.value is None:
            return f
        for target, value in assignment_pairs(s):
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else None
            for elt in elts if elts is not None else [target]:
                key = dotted(elt)
                if key is None or not self.flow.is_model(key):
                    continue
                key = self.key(key)
                if elts is None:
                    self._assign_model(key, value, s, f)
                elif passed_back(value, key, self.key, (elts, elt)):
                    continue  # ``model, opt = accelerator.prepare(model, opt)``: as it was
                else:  # unpacked: a loader's tuple (``_returned_mode``), or unknown
                    mode = self._returned_mode(value, elts.index(elt))
                    f.set(key, frozenset({ModeFact(mode or Mode.UNKNOWN, s)}))
        return f

    def _bind_alias(self, s: ast.Assign | ast.AnnAssign | ast.AugAssign, f: Frame) -> None:
        """``test_model = model``: on this path the name is the model
        (``rnnfix.analysis.modes.mayalias``)."""
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1):
            return
        target, value = s.targets[0], dotted(s.value)
        if not isinstance(target, ast.Name) or value is None or target.id not in self.plain:
            return
        if self.key(target.id) != target.id or not self.flow.is_model(self.key(value)):
            return  # a must-alias is read as one; only models matter
        guard = self.guards[-1] if self.guards else None
        f.aliases[target.id] = frozenset({Alias(self.key(value), s, guard)})

    def _through_aliases(self, key: str, facts: Facts, f: Frame, replace: bool) -> None:
        """A mode change of ``key`` also reaches the models its root may be
        bound to (only on the paths that bound it: the old facts stay)."""
        root, dot, rest = key.partition(".")
        for a in f.aliases.get(root, ()):
            moved = frozenset(
                ModeFact(x.mode, x.origin, x.cause, a.guard or x.guard) for x in facts
            )
            f.through(root, self.flow.mode_target(a.target + dot + rest), moved, replace)

    def _assign_model(self, key: str, value: ast.expr, s: ast.stmt, f: Frame) -> None:
        imports = self.flow.imports
        if built_class(value, imports, self.flow.classes) is not None:
            # A new module trains, unless the chain switches it: ``Net().eval()``.
            mode = chained_mode(value)
            f.set(key, frozenset({ModeFact(mode or Mode.TRAIN, s)}))
            return
        inner = dotted(unwrap_built(value, imports))
        inner = self.key(inner) if inner is not None else None
        if (
            inner == key
            or _own_method_result(value, key, self.key)
            or passed_back(value, key, self.key)
        ):
            # ``model = model.to(device)``, ``model = model.merge_and_unload()``,
            # ``model = accelerator.prepare(model)``: the same modules, the same mode
            return
        if inner is not None and self.flow.is_model(inner):
            f.set(key, f.lookup(inner))  # an alias or a wrapper: same modules
            return
        if transformers_load(value, imports) is not None:
            # ``AutoModelForCausalLM.from_pretrained(...)`` returns the model in
            # eval mode (``rnnfix.analysis.modes.pretrained``); a chained
            # ``.train()`` is the author's.
            f.set(key, frozenset({ModeFact(chained_mode(value) or Mode.EVAL, s)}))
            return
        chained = chained_mode(value)
        if chained is not None:
            # ``getattr(models, name)().eval()``, ``copy.deepcopy(model).eval()``:
            # whatever built the model, the chain's last mode call set its mode
            # (``Module.eval()`` returns the module it switched).
            f.set(key, frozenset({ModeFact(chained, s)}))
            return
        returned = self._returned_mode(value, None)
        if returned is not None:
            # ``model = load_model(path)``, whose loader ends ``model.eval();
            # return model``: the mode it hands back.
            f.set(key, frozenset({ModeFact(returned, s)}))
            return
        f.set(key, frozenset({ModeFact(Mode.UNKNOWN, s)}))  # loaded, returned by a call...

    def _returned_mode(self, value: ast.expr, position: int | None) -> Mode | None:
        """The mode a loader of this file returns its model in, whole or at
        ``position`` of the tuple it returns (``loadermode``)."""
        if not isinstance(value, ast.Call):
            return None
        res = self.flow.resolve(value, self.scope)
        switch = returned_switches(res.callee.node).get(position) if res is not None else None
        return switch_mode(switch) if switch is not None else None

    # --- expressions -------------------------------------------------------
    def exprs(self, node: ast.AST | None, f: Frame, ctor_target: str | None = None) -> Frame:
        for call in self.flow.calls_of(node):
            self.call(call, f, ctor_target)
        return f

    def call(self, call: ast.Call, f: Frame, ctor_target: str | None) -> None:
        restored = _restored(self, call, f)
        if restored is not None:
            recv = mode_receiver(call, self.flow.imports)
            if recv is not None and self.flow.tracks(recv):
                f.set(
                    self.flow.mode_target(self.key(recv)), restored
                )  # ``model.train(was)``: the mode it was saved in
                self._through_aliases(self.key(recv), restored, f, replace=True)
                return
        switch = module_mode_switch(call)
        if switch is not None:
            recv = mode_receiver(call, self.flow.imports)
            if recv is not None and self.flow.tracks(recv):
                facts = self.fact(switch.mode, call)
                f.set(self.flow.mode_target(self.key(recv)), facts)
                self._through_aliases(self.key(recv), facts, f, replace=True)
            elements: tuple[str, ...] = ()
            if recv is not None and "." not in recv:
                # ``for m in models: m.eval()``: every model ``models`` holds.
                elements = self._loop_elements(recv, call)
            elif recv is None and isinstance(call.func, ast.Attribute):
                # ``for k in nets: nets[k].eval()``: the key covers every element.
                found = self._elements().of_subscript(call.func.value, call)
                if found and all(self.flow.tracks(e) for e in found):
                    elements = found
            if not elements and isinstance(call.func, ast.Attribute):
                # ``for net in self.nets.values(): net.eval()`` over a container
                # filled at run time with modules only: all of it.
                elements = self._container(call.func.value, call)
            if elements:
                for element in elements:
                    facts = self.fact(switch.mode, call)
                    f.set(self.flow.mode_target(self.key(element)), facts)
                    self._through_aliases(self.key(element), facts, f, replace=True)
            return
        res = self.flow.resolve(call, self.scope, ctor_target)
        if res is None:
            # A function of another file of the run (project index), if any.
            ext = self.flow.external(call, self.scope)
            if ext is not None:
                self.apply(call, ext.summary.effects, ext.effect_key, f)
                self.object_calls(call, ext.summary, ext.effect_key, f)
            return
        old = self.call_frames.get(call)
        self.call_frames[call] = join([old, f]) if old is not None else f.copy()  # type: ignore[assignment]
        self.resolved[call] = res
        summary = self.flow.summary(res.callee)
        self.apply(call, summary.effects, res.caller_key, f)
        self.object_calls(call, summary, res.caller_key, f)

    def _elements(self) -> Elements:
        found = _ELEMENTS.get(self.flow)
        if found is None:
            found = _ELEMENTS[self.flow] = Elements(self.flow.tree, self.flow.parents)
        return found

    def _covered_container(self, loop: ast.For) -> str | None:
        """The container of modules whose every element ``loop`` visits."""
        if not loop.body:
            return None
        for name in sorted({n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}):
            for receiver in (ast.Name(name), ast.Subscript(loop.iter, ast.Name(name))):
                found = self._container(receiver, loop.body[0])
                if found:
                    return found[0]
        return None

    def _container(self, receiver: ast.expr, call: ast.AST) -> tuple[str, ...]:
        """The container of modules (``models.model_containers``) whose every
        element the loop around ``call`` switches, as one path."""
        found = self._elements().covering(receiver, call)
        if found is None:
            return ()
        path, kind = found
        info = self.flow.models.get(path)
        return (path,) if info is not None and info.container == kind else ()

    def _loop_elements(self, name: str, call: ast.Call) -> tuple[str, ...]:
        """The models a loop variable runs through (``elements``), when every
        one of them is a model the flow tracks; else none."""
        elements = self._elements().of_loop_variable(name, call)
        if not elements or not all(self.flow.tracks(e) for e in elements):
            return ()
        return elements

    def apply(
        self,
        call: ast.Call,
        effects: dict[str, Effect],
        caller_key: Callable[[str], str | None],
        f: Frame,
    ) -> None:
        """A callee's effects on its names, applied to the caller's."""
        for key, eff in effects.items():
            mine = caller_key(key)
            if mine is None:
                continue
            mine = self.key(mine)
            facts = frozenset(f for m in eff.sets for f in self.fact(m, call))
            if eff.passthrough:
                f.add(mine, facts)
            else:
                f.set(mine, facts)
            self._through_aliases(mine, facts, f, replace=not eff.passthrough)

    def object_calls(
        self,
        call: ast.Call,
        summary: Summary,
        caller_key: Callable[[str], str | None],
        f: Frame,
    ) -> None:
        """The callee's methods on objects it was given whose class only this
        file knows (``validate(model)`` -> ``encode_data(model)`` ->
        ``model.val_start()``, ``VSE`` of another file): their effects on the
        object's models, after the callee's own effects. A key the callee
        also switches itself is left to its own effect (their order is not
        kept); a method called only on some paths may leave the mode as it
        was."""
        own = [self.key(m) for k in summary.effects if (m := caller_key(k)) is not None]
        for oc in summary.object_calls:
            owner = caller_key(oc.key)
            found = self.flow.object_method(self.key(owner), oc.method) if owner else None
            if found is None:
                continue
            method, mapper = found
            effects: dict[str, Effect] = {}
            for key, eff in method.effects.items():
                mine = mapper(key)
                if mine is None or any(is_prefix(o, mine) or is_prefix(mine, o) for o in own):
                    continue
                effects[key] = eff if oc.always else Effect(True, eff.sets)
            self.apply(call, effects, mapper, f)


# --- facts about the mode read from the program -----------------------------
def _mode_read(run: ScopeRun, value: ast.AST | None) -> str | None:
    """``model.training`` -> ``model`` when it is a model."""
    if isinstance(value, ast.Attribute) and value.attr == "training":
        key = dotted(value.value)
        if key is not None and run.flow.tracks(key):
            return run.key(key)
    return None


def _bound(target: ast.AST) -> list[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _bound(e)]
    if isinstance(target, ast.Starred):
        return _bound(target.value)
    text = dotted(target)
    return [text] if text is not None else []


def _restored(run: ScopeRun, call: ast.Call, f: Frame) -> Facts | None:
    """The saved facts ``model.train(was)`` / ``model.train(mode=was)`` restores."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "train"):
        return None
    flags = [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]
    if len(flags) != 1 or len(call.args) + len(call.keywords) != 1:
        return None
    text = dotted(flags[0])
    saved = f.saved.get(text) if text is not None else None
    receiver = dotted(call.func.value)
    if saved is None or receiver is None or saved[0] != run.key(receiver):
        return None
    return saved[1]


def assume_mode(run: ScopeRun, stmt: ast.stmt, test: ast.expr, truth: bool, f: Frame) -> bool:
    """Narrow ``f`` where ``test`` has the value ``truth``: ``model.training``
    (in ``assert`` or ``if``) and a saved mode (``if was: model.train()``).
    False when that cannot happen (the branch is dead)."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truth = test.operand, not truth
    key = _mode_read(run, test)
    if key is not None:
        facts = f.lookup(key)
        if truth:
            kept = {x for x in facts if x.mode is Mode.TRAIN}
            if any(x.mode is Mode.UNKNOWN for x in facts):
                kept.add(ModeFact(Mode.TRAIN, stmt))
        else:
            kept = {x for x in facts if x.mode is not Mode.TRAIN}
        if not kept:
            return False
        f.set(key, frozenset(kept))
        return True
    text = dotted(test)
    saved = f.saved.get(text) if text is not None else None
    if saved is None:
        return True
    model, before = saved
    if truth:
        return any(x.mode is not Mode.EVAL for x in before)
    not_train = frozenset(x for x in before if x.mode is not Mode.TRAIN)
    if not not_train:
        return False
    if all(x.mode is Mode.EVAL for x in f.lookup(model)):
        # Saved as "not training" and in eval now: as it was when saved.
        f.set(model, not_train)
    return True
