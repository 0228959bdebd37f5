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
element must be a dotted path (a name or an attribute path). Anything else
(a container built by a comprehension, filled in a loop, an ``nn.ModuleList``,
which is a module itself and switches as one) gives no elements.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping

from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import walk_tree

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
        ``for`` around ``at`` whose target is ``name``; None when that loop's
        elements are not written out, or when the call runs under a condition
        inside that loop (``for net in nets: if train: net.train() else:
        net.eval()``, a helper whose mode comes from its flag): which of the
        calls runs is then not read, so no element is said to be switched."""
        cur = self.parents.get(at)
        conditional = False
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if (
                isinstance(cur, (ast.For, ast.AsyncFor))
                and isinstance(cur.target, ast.Name)
                and cur.target.id == name
            ):
                return None if conditional else self._iterated(cur.iter)
            conditional = conditional or isinstance(cur, (ast.If, ast.IfExp, ast.Try, ast.While))
            cur = self.parents.get(cur)
        return None

    def of_loop(self, loop: ast.For) -> tuple[str, ...] | None:
        """The paths ``loop`` runs through, when written out (never empty)."""
        if not isinstance(loop.target, ast.Name):
            return None
        return self._iterated(loop.iter)

    def _iterated(self, expr: ast.expr) -> tuple[str, ...] | None:
        values = False
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "values"
            and not expr.args
            and not expr.keywords
        ):
            expr, values = expr.func.value, True
        if not isinstance(expr, (ast.List, ast.Tuple, ast.Dict)):
            text = dotted(expr)
            bound = self._bindings.get(text) if text is not None else None
            if bound is None or len(bound) != 1 or text in self._mutated:
                return None
            expr = bound[0]
        if isinstance(expr, ast.Dict):
            if not values or any(k is None for k in expr.keys):
                return None  # iterating a dict gives its keys; ``**other`` hides some
            elts = [v for v in expr.values]
        elif isinstance(expr, (ast.List, ast.Tuple)) and not values:
            elts = list(expr.elts)
        else:
            return None
        found = [dotted(e) for e in elts]
        if not found or any(f is None for f in found):
            return None
        return tuple(f for f in found if f is not None)

    @functools.cached_property
    def _bindings(self) -> dict[str, list[ast.expr]]:
        """Every value a dotted path is bound to in the file; a binding whose
        value is not read (a loop or ``with`` target, an element of an
        unpacking, an augmented assignment) counts as ``ast.Constant(None)``."""
        out: dict[str, list[ast.expr]] = {}
        unknown = ast.Constant(None)
        for node in walk_tree(self.tree):
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


def loop_spelling(
    elements: Elements, switch: ast.AST, models: set[str], source: str, scope: ast.AST
) -> str | None:
    """How the author writes the mode calls of ``models``: the loop around
    ``switch`` (``for m in models: m.eval()``) when it runs through exactly
    ``models``, as ``for m in models:\\n    m.{method}()`` text with the
    author's own header (``{method}`` left to fill). None when the loop
    visits other models too (a fix must not switch a teacher the author
    keeps in eval), or when its variable names anything else in ``scope``
    (a loop of ours would rebind it)."""
    if not (
        isinstance(switch, ast.Call)
        and isinstance(switch.func, ast.Attribute)
        and isinstance(switch.func.value, ast.Name)
    ):
        return None
    name = switch.func.value.id
    loop = elements.parents.get(switch)
    while loop is not None and not (
        isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and loop.target.id == name
    ):
        loop = elements.parents.get(loop)
    if not isinstance(loop, ast.For):
        return None
    found = elements.of_loop(loop)
    if found is None or set(found) != models:
        return None
    header = ast.get_source_segment(source, loop.iter)
    if header is None or "\n" in header:
        return None
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and node.id == name:
            owner = elements.parents.get(node)
            if not (isinstance(owner, ast.For) and owner.target is node) and not _in_loop_of(
                elements, node, name
            ):
                return None
        elif isinstance(node, ast.arg) and node.arg == name:
            return None
    return f"for {name} in {header}:\n    {name}.{{method}}()"


def _in_loop_of(elements: Elements, node: ast.AST, name: str) -> bool:
    """``node`` lies in the body of a ``for <name> in <written-out elements>``."""
    cur = elements.parents.get(node)
    while cur is not None:
        if (
            isinstance(cur, ast.For)
            and isinstance(cur.target, ast.Name)
            and cur.target.id == name
            and elements.of_loop(cur) is not None
        ):
            return True
        cur = elements.parents.get(cur)
    return False
