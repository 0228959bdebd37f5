"""Models held in a list, a tuple or a dict that a loop switches one by one
(issue 36.1): ``for m in models: m.eval()`` is an ``eval()`` of every model
``models`` holds.

The elements must be written out, so that which objects the loop visits is
read, not guessed: the loop's iterable is a literal (``for m in (enc, dec):``,
``for net in [G, D]:``), ``<dict literal>.values()``, or a name (or
``self.<attr>``) bound exactly once in the file, to such a literal
(``models = [encoder, decoder]``, ``self.nets = {"G": G, "D": D}`` then
``self.nets.values()``), and never changed in place (no ``append``,
``extend``, ``insert``, ``update``, ``pop``, item assignment, ``+=``). Every
element must be a dotted path (a name or an attribute path).

Also written out (issue 36.1, models in containers):

- ``dict(G=G, D=D)`` (keywords only) reads as the dict literal;
- a container bound once to an empty one (``{}``, ``[]``, ``dict()``,
  ``list()``) and then filled only by statements of that same body,
  outside any condition or loop, that put an element at a constant key:
  ``self.nets["G"] = build_generator(cfg)`` (the element is the path
  ``self.nets["G"]``, or the path assigned there, ``self.nets["G"] =
  self.gen``) or ``models.append(encoder)`` (a dotted path only). A loop in
  that body must come after the last of them.

The loops read: ``for m in C``, ``for m in C.values()``, ``for k, m in
C.items()`` (``m``), and ``for k in C`` / ``C.keys()`` / ``for k, _ in
C.items()`` with ``C[k].eval()`` in the body (``of_subscript``). Anything
else (a comprehension, a container filled in a loop or under a condition,
with a variable key) gives no elements: which objects the loop visits is
then not read. Nor does an ``nn.ModuleList``/``nn.ModuleDict``: it is a
module itself, and its own ``train()`` switches its elements under paths
the flow does not tie to the names written into it.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Mapping

from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import nodes_of, walk_tree

_MUTATORS = frozenset(
    {"append", "extend", "insert", "update", "pop", "remove", "clear", "setdefault", "popitem"}
)


class Elements:
    """Per file: the model paths a loop variable runs through."""

    def __init__(self, tree: ast.Module, parents: Mapping[ast.AST, ast.AST]) -> None:
        self.tree = tree
        self.parents = parents

    def of_loop_variable(self, name: str, at: ast.AST) -> tuple[str, ...] | None:
        """The paths ``name`` is bound to, one per iteration, by the innermost
        ``for`` around ``at`` whose target is ``name`` (or the value of a
        ``for k, name in C.items()``); None when that loop's elements are not
        written out, or when the call runs under a condition inside that loop
        (``for net in nets: if train: net.train() else: net.eval()``, a
        helper whose mode comes from its flag): which of the calls runs is
        then not read, so no element is said to be switched."""
        cur = self.parents.get(at)
        conditional = False
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(cur, (ast.For, ast.AsyncFor)):
                if isinstance(cur.target, ast.Name) and cur.target.id == name:
                    return None if conditional else self._iterated(cur.iter, cur)
                if _items_value(cur) == name:
                    return None if conditional else self._iterated(cur.iter, cur)
            conditional = conditional or isinstance(cur, (ast.If, ast.IfExp, ast.Try, ast.While))
            cur = self.parents.get(cur)
        return None

    def of_subscript(self, receiver: ast.expr, at: ast.AST) -> tuple[str, ...] | None:
        """``C[k].eval()`` in the body of ``for k in C`` (``C.keys()``, or
        ``for k, _ in C.items()``), outside any condition inside that loop:
        the loop's key covers every element, so the paths of ``C``'s
        elements; None for any other subscript (a key from a parameter, a
        loop over a subset of the keys: which element it switches is not
        read)."""
        if not (isinstance(receiver, ast.Subscript) and isinstance(receiver.slice, ast.Name)):
            return None
        key, container = receiver.slice.id, dotted(receiver.value)
        if container is None:
            return None
        cur = self.parents.get(at)
        conditional = False
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(cur, (ast.For, ast.AsyncFor)) and key in _target_names(cur.target):
                if conditional or _keys_of(cur, key) != container:
                    return None
                return self._elements_of(container, values=True, loop=cur)
            conditional = conditional or isinstance(cur, (ast.If, ast.IfExp, ast.Try, ast.While))
            cur = self.parents.get(cur)
        return None

    def covering(self, receiver: ast.expr, at: ast.AST) -> tuple[str, str] | None:
        """The container every element of which the mode call ``at`` on
        ``receiver`` switches, one per iteration, whatever it holds: (its
        path, "list" or "dict" as the loop reads it). ``for m in C: m.eval()``
        (a list), ``for m in C.values()`` or ``for k, m in C.items()`` (a
        dict), ``for k in C: C[k].eval()`` (a dict's keys). None under a
        condition inside the loop, or for any other receiver. Whether ``C``
        holds only modules is the caller's question
        (``models.model_containers``)."""
        if isinstance(receiver, ast.Subscript) and isinstance(receiver.slice, ast.Name):
            key, container = receiver.slice.id, dotted(receiver.value)
            loop = self._loop_binding(key, at)
            if loop is None or container is None or _keys_of(loop, key) != container:
                return None
            return container, "dict"
        if not isinstance(receiver, ast.Name):
            return None
        loop = self._loop_binding(receiver.id, at)
        if loop is None or _loop_value(loop) != receiver.id:
            return None
        it = loop.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and not it.args:
            method = it.func.attr
            if method == "values" or (method == "items" and _items_value(loop) is not None):
                path = dotted(it.func.value)
                return (path, "dict") if path is not None else None
            return None
        path = dotted(it)
        return (path, "list") if path is not None else None

    def _loop_binding(self, name: str, at: ast.AST) -> ast.For | ast.AsyncFor | None:
        """The innermost loop around ``at`` that binds ``name``, when no
        condition inside it stands between (else None)."""
        cur = self.parents.get(at)
        conditional = False
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(cur, (ast.For, ast.AsyncFor)) and name in _target_names(cur.target):
                return None if conditional else cur
            conditional = conditional or isinstance(cur, (ast.If, ast.IfExp, ast.Try, ast.While))
            cur = self.parents.get(cur)
        return None

    def of_loop(self, loop: ast.For) -> tuple[str, ...] | None:
        """The paths ``loop`` runs through, when written out (never empty)."""
        if not isinstance(loop.target, ast.Name) and _items_value(loop) is None:
            return None
        return self._iterated(loop.iter, loop)

    def _iterated(self, expr: ast.expr, loop: ast.AST | None = None) -> tuple[str, ...] | None:
        values = False
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in ("values", "items")
            and not expr.args
            and not expr.keywords
        ):
            if expr.func.attr == "items" and (loop is None or _items_value(loop) is None):
                return None
            expr, values = expr.func.value, True
        if not isinstance(expr, (ast.List, ast.Tuple, ast.Dict)):
            text = dotted(expr)
            return self._elements_of(text, values, loop) if text is not None else None
        return _literal_elements(expr, values)

    def elements_of(self, text: str, loop: ast.AST | None) -> tuple[str, ...] | None:
        """The elements of the dict ``text`` names, as its ``values()``."""
        return self._elements_of(text, True, loop)

    def _elements_of(self, text: str, values: bool, loop: ast.AST | None) -> tuple[str, ...] | None:
        """The elements of the container ``text`` names: bound once to a
        written-out literal and never changed, or bound once to an empty one
        and filled only by constant-key statements (see the module's doc)."""
        bound = self._bindings.get(text)
        if bound is None or len(bound) != 1:
            return None
        value = _literal_of(bound[0])
        if value is None:
            return None
        if text not in self._mutated:
            return _literal_elements(value, values)
        fills = self._fills.get(text)
        if fills is None or _literal_elements(value, values, empty=True) != ():
            return None
        elements, statements = fills
        keyed = elements[0][0] is not None
        if isinstance(value, ast.Dict) != keyed:
            return None  # ``d["G"] = G`` on a list, ``append`` on a dict
        if keyed != values:
            return None  # iterating a dict gives its keys; a list has no ``values()``
        owner = self.parents.get(statements[0])
        if loop is not None and _inside(self.parents, loop, owner):
            last = statements[-1]
            if (loop.lineno, loop.col_offset) <= (last.lineno, last.col_offset):  # type: ignore[attr-defined]
                return None  # the loop runs before the container is full
        return tuple(path for _, path in elements)

    @functools.cached_property
    def _bindings(self) -> dict[str, list[ast.expr]]:
        """Every value a dotted path is bound to in the file; a binding whose
        value is not read (a loop or ``with`` target, an element of an
        unpacking, an augmented assignment) counts as ``ast.Constant(None)``."""
        out: dict[str, list[ast.expr]] = {}
        unknown = ast.Constant(None)
        binders = (
            ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor,
            ast.comprehension, ast.withitem,
        )  # fmt: skip
        for node in nodes_of(self.tree, *binders):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    text = dotted(t)
                    if text is not None:
                        out.setdefault(text, []).append(node.value)
                    elif isinstance(t, (ast.Tuple, ast.List)):
                        for e in t.elts:
                            if (name := dotted(e)) is not None:
                                out.setdefault(name, []).append(unknown)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                text = dotted(node.target)
                if text is not None:
                    value = node.value if isinstance(node, ast.AnnAssign) else None
                    out.setdefault(text, []).append(value if value is not None else unknown)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                for n in ast.walk(node.target):
                    if (text := dotted(n)) is not None:
                        out.setdefault(text, []).append(unknown)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                for n in ast.walk(node.optional_vars):
                    if (text := dotted(n)) is not None:
                        out.setdefault(text, []).append(unknown)
        return out

    @functools.cached_property
    def _fills(self) -> dict[str, tuple[list[tuple[str | None, str]], list[ast.stmt]]]:
        """Containers filled only by constant-key statements of one body,
        outside any condition or loop: path -> ((key or None for an
        ``append``, element path) in order, the statements). A container
        changed any other way (a variable key, ``update``, ``pop``, a fill
        under an ``if``) is left out."""
        found: dict[str, tuple[list[tuple[str | None, str]], list[ast.stmt]]] = {}
        spoiled: set[str] = set()
        for node in walk_tree(self.tree):
            fill = _fill(node) if isinstance(node, (ast.Assign, ast.Expr)) else None
            if fill is None:
                continue
            assert isinstance(node, ast.stmt)
            container, key, path = fill
            body = getattr(self.parents.get(node), "body", None)
            owner = self.parents.get(node)
            if (
                path is None
                or not isinstance(body, list)
                or node not in body
                or not isinstance(owner, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef))
            ):
                spoiled.add(container)
                continue
            elements, statements = found.setdefault(container, ([], []))
            if statements and self.parents.get(statements[0]) is not owner:
                spoiled.add(container)
            elements.append((key, path))
            statements.append(node)
        for text in self._mutated:
            if text in found and self._mutations.get(text, 0) != len(found[text][1]):
                spoiled.add(text)  # changed by something else too
        out = {}
        for text, (elements, statements) in found.items():
            keys = [k for k, _ in elements]
            if text in spoiled or len(set(keys)) != len(keys) and None not in keys:
                continue  # a key set twice: the element is the second one
            if len({k is None for k in keys}) != 1:
                continue
            out[text] = (elements, statements)
        return out

    @functools.cached_property
    def _mutations(self) -> dict[str, int]:
        """How many in-place changes of each path the file makes (the
        statements ``_mutated`` counts)."""
        out: dict[str, int] = {}
        for node in walk_tree(self.tree):
            for text in _changed(node):
                out[text] = out.get(text, 0) + 1
        return out

    @functools.cached_property
    def _mutated(self) -> frozenset[str]:
        """Paths changed in place: ``models.append(m)``, ``nets["E"] = e``,
        ``del nets["G"]``."""
        out: set[str] = set()
        for node in walk_tree(self.tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MUTATORS
            ):
                if (text := dotted(node.func.value)) is not None:
                    out.add(text)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = (
                    node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                )
                for t in targets:
                    if isinstance(t, ast.Subscript) and (text := dotted(t.value)) is not None:
                        out.add(text)
        return frozenset(out)


_EMPTY_CALLS = frozenset({"dict", "list"})


def _literal_of(value: ast.expr) -> ast.expr | None:
    """The literal a container's binding writes out: the literal itself;
    ``dict(G=G, D=D)`` as ``{"G": G, "D": D}``; ``dict()`` / ``list()`` as
    empty ones. None for anything else."""
    if isinstance(value, (ast.List, ast.Tuple, ast.Dict)):
        return value
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    name = func.id if isinstance(func, ast.Name) else ""
    if name in _EMPTY_CALLS:
        if name == "dict" and not value.args and all(k.arg for k in value.keywords):
            keys: list[ast.expr | None] = [ast.Constant(k.arg) for k in value.keywords]
            return ast.Dict(keys=keys, values=[k.value for k in value.keywords])
        if name == "list" and not value.args and not value.keywords:
            return ast.List(elts=[], ctx=ast.Load())
        return None
    return None


def _literal_elements(expr: ast.expr, values: bool, empty: bool = False) -> tuple[str, ...] | None:
    """The dotted elements of a written-out literal (``values``: iterated
    through ``.values()``/``.items()``); None when one is not a path, or
    when the literal is empty, unless ``empty`` allows it (a container
    filled afterwards)."""
    if isinstance(expr, ast.Dict):
        if not values or any(k is None for k in expr.keys):
            return None  # iterating a dict gives its keys; ``**other`` hides some
        elts = list(expr.values)
    elif isinstance(expr, (ast.List, ast.Tuple)) and not values:
        elts = list(expr.elts)
    elif isinstance(expr, (ast.List, ast.Tuple)) and empty and not expr.elts:
        elts = []
    else:
        return None
    found = [dotted(e) for e in elts]
    if (not found and not empty) or any(f is None for f in found):
        return None
    return tuple(f for f in found if f is not None)


def _fill(node: ast.AST) -> tuple[str, str | None, str | None] | None:
    """(container, key, element path) for ``C["G"] = value`` (the element is
    ``value``'s path, else ``C["G"]``) and ``C.append(path)`` (key None);
    (container, None, None) for any other change of a dotted container."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        if isinstance(target, ast.Subscript) and (container := dotted(target.value)) is not None:
            here = dotted(target)
            if here is None:
                return container, None, None  # a variable key
            key = here[len(container) :]
            return container, key, dotted(node.value) or here
        return None
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "append"
        and (container := dotted(node.value.func.value)) is not None
    ):
        call = node.value
        path = dotted(call.args[0]) if len(call.args) == 1 and not call.keywords else None
        return container, None, path
    return None


def _changed(node: ast.AST) -> list[str]:
    """The dotted paths ``node`` changes in place (as ``_mutated`` reads them)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MUTATORS
    ):
        text = dotted(node.func.value)
        return [text] if text is not None else []
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        return [
            text
            for t in targets
            if isinstance(t, ast.Subscript) and (text := dotted(t.value)) is not None
        ]
    return []


def _items_value(loop: ast.AST) -> str | None:
    """``v`` for ``for k, v in C.items():``."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return None
    target, it = loop.target, loop.iter
    if (
        isinstance(target, ast.Tuple)
        and len(target.elts) == 2
        and isinstance(target.elts[1], ast.Name)
        and isinstance(it, ast.Call)
        and isinstance(it.func, ast.Attribute)
        and it.func.attr == "items"
        and not it.args
    ):
        return target.elts[1].id
    return None


def _target_names(target: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _keys_of(loop: ast.For | ast.AsyncFor, key: str) -> str | None:
    """The container whose every key ``key`` runs through in ``loop``:
    ``for key in C``, ``for key in C.keys()``, ``for key, _ in C.items()``."""
    target, it = loop.target, loop.iter
    method = (
        it.func.attr if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) else None
    )
    if isinstance(target, ast.Name) and target.id == key:
        if method == "keys" and isinstance(it, ast.Call) and not it.args:
            return dotted(it.func.value)  # type: ignore[attr-defined]
        return dotted(it) if method is None else None
    if (
        isinstance(target, ast.Tuple)
        and len(target.elts) == 2
        and isinstance(target.elts[0], ast.Name)
        and target.elts[0].id == key
        and method == "items"
        and isinstance(it, ast.Call)
        and not it.args
    ):
        return dotted(it.func.value)  # type: ignore[attr-defined]
    return None


def _inside(parents: Mapping[ast.AST, ast.AST], node: ast.AST, owner: ast.AST | None) -> bool:
    """``node`` lies in ``owner``'s own body (not in a function nested there)."""
    cur = parents.get(node)
    while cur is not None:
        if cur is owner:
            return True
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        cur = parents.get(cur)
    return False


def loop_spelling(
    elements: Elements,
    switch: ast.AST,
    models: set[str],
    source: str,
    scope: ast.AST,
    container_kind: Callable[[str], str | None] = lambda _: None,
) -> str | None:
    """How the author writes the mode calls of ``models``: the loop around
    ``switch`` (``for m in models: m.eval()``, ``for k, m in nets.items():
    m.eval()``, ``for k in nets: nets[k].eval()``) when it runs through
    exactly ``models``, as ``for m in models:\n    m.{method}()`` text with
    the author's own header and receiver (``{method}`` left to fill). None
    when the loop visits other models too (a fix must not switch a teacher
    the author keeps in eval), or when one of its variables names anything
    else in ``scope`` (a loop of ours would rebind it). ``container_kind``:
    "list"/"dict" for a container of modules filled at run time (the loop
    then covers it as one path, ``Elements.covering``)."""
    if not (isinstance(switch, ast.Call) and isinstance(switch.func, ast.Attribute)):
        return None
    receiver = switch.func.value
    if isinstance(receiver, ast.Name):
        name = receiver.id
    elif isinstance(receiver, ast.Subscript) and isinstance(receiver.slice, ast.Name):
        name = receiver.slice.id
    else:
        return None
    loop = elements.parents.get(switch)
    while loop is not None and not (
        isinstance(loop, ast.For) and name in _target_names(loop.target)
    ):
        loop = elements.parents.get(loop)
    if not isinstance(loop, ast.For):
        return None
    if isinstance(receiver, ast.Name):
        found = elements.of_loop(loop) if _loop_value(loop) == name else None
    else:
        found = elements.of_subscript(receiver, switch)
    if found is None:
        cover = elements.covering(receiver, switch)
        if cover is not None and container_kind(cover[0]) == cover[1]:
            found = (cover[0],)
    if found is None or set(found) != models:
        return None
    target = ast.get_source_segment(source, loop.target)
    header = ast.get_source_segment(source, loop.iter)
    call = ast.get_source_segment(source, receiver)
    if header is None or target is None or call is None or "\n" in header + target + call:
        return None
    for var in _target_names(loop.target):
        for node in ast.walk(scope):
            if isinstance(node, ast.Name) and node.id == var:
                owner = elements.parents.get(node)
                if not (isinstance(owner, ast.For) and _holds(owner.target, node)) and not (
                    _in_loop_of(elements, node, var, container_kind)
                ):
                    return None
            elif isinstance(node, ast.arg) and node.arg == var:
                return None
    return f"for {target} in {header}:\n    {call}.{{method}}()"


def _loop_value(loop: ast.For | ast.AsyncFor) -> str | None:
    """The variable that holds each element: ``m`` in ``for m in C`` and
    ``for k, m in C.items()``."""
    return loop.target.id if isinstance(loop.target, ast.Name) else _items_value(loop)


def _holds(target: ast.expr, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(target))


def _covers(elements: Elements, loop: ast.For, container_kind: Callable[[str], str | None]) -> bool:
    """``loop`` runs through written-out elements, through every key of a
    container whose elements are written out, or through a container of
    modules filled at run time."""
    if elements.of_loop(loop) is not None:
        return True
    value = _loop_value(loop)
    if value is not None:
        cover = elements.covering(ast.Name(value), loop.body[0])
        if cover is not None and container_kind(cover[0]) == cover[1]:
            return True
    for key in _target_names(loop.target):
        container = _keys_of(loop, key)
        if container is not None and elements.elements_of(container, loop) is not None:
            return True
    return False


def _in_loop_of(
    elements: Elements, node: ast.AST, name: str, container_kind: Callable[[str], str | None]
) -> bool:
    """``node`` lies in the body of a ``for`` over written-out elements (or
    every key of such a container, or a container of modules) that binds
    ``name``."""
    cur = elements.parents.get(node)
    while cur is not None:
        if (
            isinstance(cur, ast.For)
            and name in _target_names(cur.target)
            and _covers(elements, cur, container_kind)
        ):
            return True
        cur = elements.parents.get(cur)
    return False
