"""The project index as one file sees it (``ProjectView``): its imports
resolved against the files of the run, and what the analyses of that file
ask about them (a function's or a class's summary, the handlers, returns and
loaders of another file)."""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from rnnfix.analysis.project.bindings import Binding, import_bindings, stars, statements
from rnnfix.analysis.project.summaries import (
    ClassSummary,
    ExternalCall,
    FunctionSummary,
    ModuleSummary,
    ReturnSummary,
    SelfUses,
    Shown,
    has_function,
)
from rnnfix.analysis.project.texts import (
    CALLED_CHAIN,
    CHAIN,
    CHAIN_NAME,
    COMMENT,
    LOAD_CODE,
    MAX_REEXPORTS,
    MODE_CODE,
    MODE_SWITCH,
    RNN_CODE,
    WORD,
    WORD_OR_DOT,
)
from rnnfix.analysis.project.tree import project_python_files
from rnnfix.analysis.syntax.names import dotted, strip_self_returning
from rnnfix.analysis.syntax.scopes import bind_arguments, names_bound

if TYPE_CHECKING:
    from rnnfix.analysis.modes.objectuse import Order
    from rnnfix.analysis.project.callers import Callers, Reader
    from rnnfix.analysis.torch.returns import Returns
    from rnnfix.analysis.torch.rnns import RnnSpec

# What a module summary records per module-level name (``ProjectView._module_fact``).
_Fact = TypeVar("_Fact")


class Index(Protocol):
    """The project index as its views and the file contexts see it
    (``rnnfix.analysis.project.index.ProjectIndex``). A protocol here, not the
    index's type: the index summarises files by running their analyses, and
    those ask the view, so naming the index would close a circle."""

    @property
    def files(self) -> Mapping[str, ModuleSummary | None]: ...

    def view(self, path: str, tree: ast.Module, source: str | None = None) -> ProjectView: ...

    def member(
        self, file: str, names: tuple[str, ...], consulted: set[str], depth: int = 0
    ) -> FunctionSummary | ClassSummary | None: ...

    def star_names(self, file: str, consulted: set[str]) -> frozenset[str] | None: ...

    def returns_of(self, file: str) -> ReturnSummary | None: ...

    def self_uses_of(self, file: str) -> SelfUses | None: ...

    def callers(
        self,
        file: str,
        name: str,
        read: Reader,
        consulted: set[str],
        outside: Iterable[str] = (),
    ) -> Callers: ...

    def words_of(self, path: str) -> frozenset[bytes] | None: ...

    def definition(
        self, file: str, names: tuple[str, ...], consulted: set[str]
    ) -> tuple[str, tuple[str, ...]] | None: ...

    def resolve(
        self, importer: str, level: int, parts: tuple[str, ...]
    ) -> tuple[str, tuple[str, ...]] | None: ...

    def method_order(self, file: str, class_name: str) -> tuple[Order, frozenset[str]]: ...

    def may_load_from(self, file: str, name: str, consulted: set[str], depth: int = 0) -> bool: ...

    def may_member(
        self, file: str, names: tuple[str, ...], consulted: set[str], depth: int = 0
    ) -> bool: ...

    def may_hold(
        self,
        file: str,
        names: tuple[str, ...],
        text: re.Pattern[bytes],
        consulted: set[str],
        depth: int = 0,
    ) -> bool: ...


class ProjectView:
    """The project index as one file sees it: its imports resolved against
    the run's files. Never answers with the file itself (a file's own
    functions are the mode flow's, computed from its current source).
    ``consulted`` collects the other files a lookup reached: the run re-checks
    this file if one of them changes."""

    def __init__(
        self,
        index: Index,
        path: str,
        tree: ast.Module,
        bindings: dict[str, Binding] | None = None,
    ) -> None:
        self.index = index
        self.path = path
        self.tree = tree
        self.bindings = import_bindings(tree) if bindings is None else bindings
        self.consulted: set[str] = set()
        self._cache: dict[str, FunctionSummary | ClassSummary | None] = {}
        self._instances: dict[str, ClassSummary] | None = None
        self._constructions: dict[str, list[ast.Call]] = {}

    def lookup(self, expr: ast.AST) -> FunctionSummary | ClassSummary | None:
        """What the imported dotted name ``expr`` (``evaluate``, ``U.evaluate``,
        ``models.Seq2Seq``) is in another file of the run."""
        text = dotted(expr)
        if text is None:
            return None
        if text in self._cache:
            return self._cache[text]
        found: FunctionSummary | ClassSummary | None = None
        target = self._target(text)
        if target is not None:
            found = self.index.member(target[0], target[1], self.consulted)
        self._cache[text] = found
        return found

    def lookup_class(self, expr: ast.AST) -> ClassSummary | None:
        """``lookup``, when what ``expr`` names is a class. The analyses below
        the project index ask through this (and import the summary types only
        for typing), so that they need not import this module at run time."""
        found = self.lookup(expr)
        return found if isinstance(found, ClassSummary) else None

    def mode_free(self, expr: ast.AST) -> bool:
        """The imported module class ``expr`` of another file of the run
        computes the same in train and eval mode: its summary proves it
        (``ClassSummary.mode_free_needs``) and so, from its own file, do the
        classes of other files it needs (followed a few files deep)."""
        text = dotted(expr)
        target = self._target(text) if text is not None else None
        return target is not None and self._mode_free_at(target[0], target[1], 0)

    def _mode_free_at(self, file: str, names: tuple[str, ...], depth: int) -> bool:
        found = self._class_at(file, names, depth)
        if found is None:
            return False
        home, cls = found
        needs = cls.mode_free_needs
        if needs is None or not cls.is_module:
            return False
        return all(self._mode_free_at(home, tuple(need.split(".")), depth + 1) for need in needs)

    def _class_at(
        self, file: str, names: tuple[str, ...], depth: int
    ) -> tuple[str, ClassSummary] | None:
        """The class ``names`` reaches from ``file`` (its imports and
        re-exports followed, star imports not) and the file that defines it."""
        while depth <= MAX_REEXPORTS and names:
            self.consulted.add(file)
            module = self.index.files.get(file)
            if module is None:
                return None
            head, rest = names[0], names[1:]
            if head in module.classes:
                return (file, module.classes[head]) if not rest else None
            binding = module.imports.get(head)
            found = (
                self.index.resolve(file, binding[0], binding[1] + rest)
                if binding is not None
                else None
            )
            if found is None or found[0] == file:
                return None
            file, names = found
            depth += 1
        return None

    def factory_class(self, expr: ast.AST) -> ClassSummary | None:
        """The module class a factory function of another file of the run
        (``create_model``) builds and returns on every path
        (``ModuleSummary.factories``); None when ``expr`` names no such function."""
        found = self._module_fact(expr, lambda module: module.factories)
        if found is not None:
            return found
        # A factory of a class its own file imports (``utils.load_model``
        # returning ``nets.Tagger``): the class read where it is defined.
        text = dotted(expr)
        located = self._fact_file(text, lambda m: m.factory_refs) if text else None
        if located is None:
            return None
        home = self._class_at(located[0], located[1], 1)
        return home[1] if home is not None and home[1].is_module else None

    def returns_detached(self, expr: ast.AST) -> bool:
        """The imported function ``expr`` of another file of the run gives
        back no graph whatever it is given (``ModuleSummary.detached``)."""
        return bool(self._module_fact(expr, lambda module: module.detached))

    def handler(self, expr: ast.AST) -> frozenset[str] | None:
        """What the imported decorator or context manager ``expr`` does to grad
        and the module mode (``{"grad"}``, ``{"eval"}``), read from its
        definition in another file of the run; None when it is not one the
        index read (then it is unknown)."""
        return self._module_fact(expr, lambda module: module.handlers)

    def returns(self, expr: ast.AST) -> Returns | None:
        """What the imported function ``expr`` (``build``, ``U.to_cuda``,
        ``Trainer.load_model``) of another file of the run returns: a
        wrapper, a parameter unchanged, or None (unknown)."""
        text = dotted(expr)
        target = self._target(text) if text is not None else None
        for _ in range(MAX_REEXPORTS + 1):
            if target is None or target[0] == self.path:
                return None
            file, names = target
            self.consulted.add(file)
            module = self.index.returns_of(file)
            if module is None or not names:
                return None
            found = module.functions.get(".".join(names))
            if found is not None:
                return found
            binding = module.imports.get(names[0])
            if binding is None:
                return None
            target = self.index.resolve(file, binding[0], binding[1] + names[1:])
        return None

    def callers(self, name: str, read: Reader, outside: Iterable[str] = ()) -> Callers:
        """Every call the other files of the run (and ``outside``) make of
        this file's module-level function ``name`` (``ProjectIndex.callers``)."""
        return self.index.callers(self.path, name, read, self.consulted, outside)

    def called_elsewhere(self, name: str, beyond_run: bool) -> bool:
        """Whether another file of the run, or with ``beyond_run`` of the
        project beyond it (a script that imports this file), calls a function
        named ``name``, by its text: ``name(`` with no ``def name`` of its own
        (a script's module-level code has no summary to ask)."""
        if not name.isascii():
            return True  # identifiers are NFKC-normalised: the text may spell it otherwise
        paths = list(self.index.files)
        if beyond_run:
            paths += project_python_files(os.path.dirname(self.path)) or ()
        called = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*\(")
        defined = re.compile(rb"\bdef\s+" + re.escape(name.encode()) + rb"\b")
        for path in dict.fromkeys(paths):
            if path == self.path:
                continue
            self.consulted.add(path)
            words = self.index.words_of(path)
            if words is None or name.encode() not in words:
                continue
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue
            if called.search(data) and not defined.search(data):
                return True
        return False

    def definition_of(self, expr: ast.AST) -> tuple[str, tuple[str, ...]] | None | bool:
        """Where the imported dotted name ``expr`` is defined in another file of
        the run, re-exports followed: (file, names); False when it names
        nothing of the run; None when an import on the way cannot be read."""
        text = dotted(expr)
        target = self._target(text) if text is not None else None
        if target is None:
            return False
        return self.index.definition(target[0], target[1], self.consulted)

    def self_uses(self, expr: ast.AST) -> frozenset[str] | None:
        """What the imported class ``expr`` of another file of the run (with
        its bases) reads on ``self`` (``selfuses.self_uses``): the methods
        it may call on an instance of a subclass. None when that is not
        known (not such a class, a base outside its file)."""
        text = dotted(expr)
        target = self._target(text) if text is not None else None
        for _ in range(MAX_REEXPORTS + 1):
            if target is None or target[0] == self.path or len(target[1]) != 1:
                return None
            file, names = target
            self.consulted.add(file)
            module = self.index.self_uses_of(file)
            if module is None:
                return None
            if names[0] in module.classes:
                return module.classes[names[0]]
            binding = module.imports.get(names[0])
            if binding is None:
                return None
            target = self.index.resolve(file, binding[0], binding[1])
        return None

    def loader(self, expr: ast.AST) -> bool | None:
        """``expr`` names a function of another file of the run that returns a
        model it loaded and left in the mode it was built in (RNF006): True
        when it built it from an ``nn.Module`` class, False when that is not
        known; None when it is no such function."""
        return self._module_fact(expr, lambda module: module.loaders)

    def loads_into(self, expr: ast.AST) -> tuple[int, str] | None:
        """``expr`` names a checkpoint helper of another file of the run that
        loads weights into one of its parameters (RNF006): its position and
        name; None when it is no such function."""
        return self._module_fact(expr, lambda module: module.loads_into)

    def shows(self, expr: ast.AST) -> Shown | None:
        """``expr`` names a function of another file of the run that shows
        what some of its parameters compute (``modes.shows``): which; None
        when it is no such function."""
        return self._module_fact(expr, lambda module: module.shows)

    def _module_fact(
        self, expr: ast.AST, facts: Callable[[ModuleSummary], Mapping[str, _Fact]]
    ) -> _Fact | None:
        """The fact ``facts`` of its module records for the module-level name
        ``expr`` resolves to in another file of the run, following re-exports."""
        text = dotted(expr)
        return self._fact_of(text, facts) if text is not None else None

    def _fact_of(
        self, text: str, facts: Callable[[ModuleSummary], Mapping[str, _Fact]]
    ) -> _Fact | None:
        """``_module_fact`` of the dotted name ``text``."""
        located = self._fact_file(text, facts)
        return located[1] if located is not None else None

    def _fact_file(
        self, text: str, facts: Callable[[ModuleSummary], Mapping[str, _Fact]]
    ) -> tuple[str, _Fact] | None:
        """``_fact_of``, with the file whose summary records the fact."""
        target = self._target(text)
        for _ in range(MAX_REEXPORTS + 1):
            if target is None or len(target[1]) != 1:
                return None
            module = self.index.files.get(target[0])
            if module is None:
                return None
            name = target[1][0]
            found = facts(module)
            if name in found:
                return target[0], found[name]
            binding = module.imports.get(name)
            if binding is None:
                return None
            target = self.index.resolve(target[0], binding[0], binding[1])
        return None

    def _target(self, text: str) -> tuple[str, tuple[str, ...]] | None:
        root, _, rest = text.partition(".")
        binding = self.bindings.get(root)
        if binding is None:
            return self._star_target(root, tuple(rest.split(".")) if rest else ())
        level, parts = binding
        target = self.index.resolve(
            self.path, level, parts + (tuple(rest.split(".")) if rest else ())
        )
        if target is None or target[0] == self.path:
            return None
        self.consulted.add(target[0])
        return target

    def _star_target(self, root: str, rest: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
        """``from utils import *`` then ``to_cuda(...)``: a name the file binds
        no other way is the star-imported module's (the last one's first)
        when that module of the run may define it."""
        if not self._star_modules or root in self._bound_here:
            return None  # most files star-import no module of the run: no walk for them
        for file, names in self._star_modules:
            if names is None or root in names:
                self.consulted.add(file)
                return file, (root, *rest)
        return None

    @functools.cached_property
    def _star_modules(self) -> list[tuple[str, frozenset[str] | None]]:
        """The files of the run this file star-imports (the last one first),
        each with the names it may define (None: any)."""
        out: list[tuple[str, frozenset[str] | None]] = []
        for level, parts in stars(self.bindings):
            target = self.index.resolve(self.path, level, parts)
            if target is None or target[0] == self.path or target[1]:
                continue  # not a module of the run (``from torch.nn import *``)
            out.append((target[0], self.index.star_names(target[0], self.consulted)))
        return out

    @functools.cached_property
    def _star_names(self) -> list[str]:
        """The names star imports may bind here that ``_star_target`` looks
        up: what the star-imported modules of the run define, less what this
        file binds itself (sorted: the chains come out in a stable order)."""
        if not self._star_modules:
            return []
        names = {n for _, found in self._star_modules if found is not None for n in found}
        return sorted(names - self._bound_here - set(self.bindings))

    @functools.cached_property
    def _bound_here(self) -> frozenset[str]:
        """Names this file binds itself: they shadow whatever a star import brings."""
        return names_bound(self.tree)

    def method_order(self, class_name: str) -> Order:
        """``ProjectIndex.method_order`` for a class of this file; the files
        that name the class are consulted (a result depends on them)."""
        order, shown = self.index.method_order(self.path, class_name)
        self.consulted.update(shown)
        return order

    def imports_eval(self) -> bool:
        """Whether this file imports a function, a class or a module of the
        run that may leave a model in eval mode: RNF001 asks this when its
        text pre-filter (no ``.eval(`` here) fails."""
        return self._imports(lambda f: f.sets_eval, MODE_SWITCH)

    def imports_training(self) -> bool:
        """Whether it imports a function (class, module) of the run that
        trains the models it is given in the mode they come in."""
        return self._imports(lambda f: f.trains, MODE_CODE)

    def imports_gradient_code(self) -> bool:
        """Whether it imports a function (class, module) of the run that takes
        an input gradient through a model it is given (RNF004's pre-filter)."""
        return self._imports(lambda f: bool(f.summary.entry_grads), MODE_CODE)

    def _imports(self, test: Callable[[FunctionSummary], bool], text: re.Pattern[bytes]) -> bool:
        return any(has_function(found, test) for found in self._imported(text))

    def reaches(
        self,
        test: Callable[[FunctionSummary], bool],
        text: re.Pattern[bytes],
        source: str,
        called: bool = False,
        bases: bool = False,
    ) -> bool:
        """Whether a dotted name ``source`` writes from one of its import
        bindings (``evaluate``, ``U.evaluate``, ``pkg.sub.Trainer``, each
        prefix of it too) names, in another file of the run, a function for
        which ``test`` holds, or a class or a module with one. Every lookup
        the mode flow makes (``call``, ``lookup`` of a base class or of a
        constructor) is of such a name, so this is a necessary condition for
        it to find such a function (unlike ``_imports``, it follows a
        package's submodules: ``import pkg; pkg.sub.f()``). ``text`` is what
        the defining file must match (``ProjectIndex.may_hold``): files
        without it are never summarised. ``called``: only names the text calls
        (``evaluate(``, ``U.Trainer(``), for what only ``call`` finds (a call of
        a function, or of a method of an instance of a class the file builds);
        ``bases``: with ``called``, also the base classes of the file's classes
        (``FilePass.public_methods`` looks them up)."""
        chains = self._chains(source, called)
        if called and bases:
            chains += [
                written
                for stmt in statements(self.tree.body)
                if isinstance(stmt, ast.ClassDef)
                for base in stmt.bases
                if (written := dotted(base)) is not None and written.split(".")[0] in self.bindings
            ]
        for chain in chains:
            target = self._target(chain)
            if target is None:
                continue
            file, names = target
            if not self.index.may_hold(file, names, text, self.consulted):
                continue
            found = (
                self.index.member(file, names, self.consulted)
                if names
                else self.index.files.get(file)
            )
            if found is not None and has_function(found, test):
                return True
        return False

    def _chains(self, source: str, called: bool) -> list[str]:
        """The binding names and the dotted names rooted at them in ``source``
        (every prefix), spaces, continuations and comments between the parts
        removed; with ``called``, only those followed by ``(``."""
        if not self.bindings:
            return []
        # What one regular expression with the bindings as alternatives
        # (``(?<![\w.])(a|b)\b`` then the chain) finds, in the same order,
        # without trying every binding at every position of the file (a file
        # importing many names spent most of its pre-condition there): each
        # binding's occurrences as a whole word not after a dot, by substring
        # search, then the chain after each, skipping those inside a chain.
        tail = CALLED_CHAIN if called else CHAIN
        found: dict[str, None] = {} if called else dict.fromkeys(self.bindings)
        roots: list[tuple[int, str]] = []
        for name in [*self.bindings, *self._star_names]:
            at = source.find(name) if name else -1
            while at >= 0:
                after = at + len(name)
                if not (at and WORD_OR_DOT.match(source, at - 1)) and not WORD.match(source, after):
                    roots.append((at, name))
                at = source.find(name, after)
        roots.sort()
        end = 0
        for at, name in roots:
            if at < end:
                continue
            m = tail.match(source, at + len(name))
            if m is None:
                continue
            end = m.end()
            parts = [name, *CHAIN_NAME.findall(COMMENT.sub("", m.group(1)))]
            for i in range(len(parts) if called else 2, len(parts) + 1):
                found[".".join(parts[:i])] = None
        return list(found)

    def loader_called(self, source: str) -> bool:
        """Whether ``source`` (this file's text) calls a loader function of
        another file of the run (``loader`` is not None for the callee):
        RNF006's pre-filter. ``loader`` is asked only of a call's function
        (``loads``), which answers only for a binding of this file or a dotted
        name rooted at one (``restore(...)``, ``U.restore(...)``): each is
        among the called chains of the text (``_chains``). Only files with
        loading text (``LOAD_TOKENS``) record loaders: the others, after the
        re-exports ``loader`` follows, are never summarised for this."""
        for chain in self._chains(source, called=True):
            target = self._target(chain)
            if target is None or len(target[1]) != 1:
                continue  # ``loader`` answers None for it
            # ``may_hold`` as this gate has always asked; ``may_load_from``
            # (a necessary condition too) skips more files' summaries.
            if not self.index.may_hold(target[0], target[1], LOAD_CODE, self.consulted):
                continue
            if not self.index.may_load_from(target[0], target[1][0], self.consulted):
                continue
            if self._fact_of(chain, lambda module: module.loaders) is not None:
                return True
            if self._fact_of(chain, lambda module: module.loads_into) is not None:
                return True
        return False

    def may_be_loader(self, expr: ast.AST) -> bool:
        """A necessary condition for ``loader(expr)`` not to be None (read
        from text and import lines, never summarising): what
        ``loader_called`` asks of each called chain, for a dotted name."""
        text = dotted(expr)
        target = self._target(text) if text is not None else None
        if target is None or len(target[1]) != 1:
            return False
        return self.index.may_load_from(target[0], target[1][0], self.consulted)

    def imports_rnn_class(self) -> bool:
        """Whether this file imports a class of the run that holds an RNN (or
        a module of the run that defines one)."""
        for found in self._imported(RNN_CODE):
            if isinstance(found, ClassSummary):
                if found.rnns:
                    return True
            elif isinstance(found, ModuleSummary):
                if any(c.rnns for c in found.classes.values()):
                    return True
        return False

    def _imported(
        self, text: re.Pattern[bytes]
    ) -> Iterator[FunctionSummary | ClassSummary | ModuleSummary]:
        """What each import binding of this file names in another file of the
        run: a function or class (``from utils import evaluate``) or a whole
        module (``import utils``); only those defined in a file whose text
        matches ``text`` (what the caller asks about is in no other file)."""
        for local in self.bindings:
            target = self._target(local)
            if target is None:
                continue
            file, names = target
            if not self.index.may_hold(file, names, text, self.consulted):
                continue
            if not self.index.may_member(file, names, self.consulted):
                continue  # ``lookup`` answers None: no summary needed
            found = self.lookup(_name(local)) if names else self.index.files.get(file)
            if found is not None:
                yield found

    def class_rnns(self, expr: ast.AST) -> tuple[RnnSpec, ...] | None:
        """The RNNs of an instance of the imported module class ``expr``."""
        found = self.lookup(expr)
        return found.rnns if isinstance(found, ClassSummary) and found.is_module else None

    def call(self, call: ast.Call, shadowed: Collection[str]) -> ExternalCall | None:
        """The function of another file ``call`` runs: an imported function
        (``evaluate(m)``, ``U.evaluate(m)``), or a method of an instance of an
        imported class (``trainer.fit()``, ``Trainer(m).fit()``)."""
        if not self.bindings:
            return None  # imports nothing of the run (most files of a large tree)
        func = call.func
        root: ast.expr = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if (
            isinstance(root, ast.Name)
            and (root.id in self.bindings or self._star_target(root.id, ()) is not None)
            and root.id not in shadowed
        ):
            found = self.lookup(func)
            if isinstance(found, FunctionSummary):
                if found.is_method:
                    return None  # ``Trainer.fit(obj)``: rare, not followed
                return ExternalCall(found, None, _bind(found, call))
        if not isinstance(func, ast.Attribute):
            return None
        owner = dotted(func.value)
        ctor: ast.Call | None = None
        if owner is not None:
            instances = self.instances()
            cls = instances.get(owner) if instances else None
            ctor = self.construction(owner)
        else:
            built = strip_self_returning(func.value)
            ctor = built if isinstance(built, ast.Call) else None
            cls = self._class_of_call(ctor) if ctor is not None else None
        method = cls.methods.get(func.attr) if cls is not None else None
        if cls is None or method is None or not method.is_method:
            return None
        return ExternalCall(method, owner, _bind(method, call), _stored(cls, ctor))

    def method_call(self, owner: str, method: str) -> ExternalCall | None:
        """``owner.method()`` for the dotted name ``owner`` assigned an
        instance of an imported class (``instances``), as ``call`` follows
        ``trainer.fit()``: the method, with ``owner`` bound to ``self``."""
        cls = self.instances().get(owner)
        found = cls.methods.get(method) if cls is not None else None
        if found is None or not found.is_method:
            return None
        return ExternalCall(found, owner, {})

    def stored_gradients(
        self, call: ast.Call, built: Callable[[ast.expr], ast.Call | None]
    ) -> tuple[str, ...]:
        """The caller's texts for the models ``call`` takes an input gradient
        through as an object of an imported class stored them at its
        construction (``ClassSummary.ctor_grads``): ``attack.perturb(x)``,
        ``PGD(m).perturb(x)``, ``attack(x)`` (``__call__``). ``built`` finds
        the construction an object name was assigned (None: unknown)."""
        if not self.bindings:
            return ()
        func = call.func
        target, method = (
            (func.value, func.attr) if isinstance(func, ast.Attribute) else (func, "__call__")
        )
        stripped = strip_self_returning(target)
        ctor = stripped if isinstance(stripped, ast.Call) else built(target)
        cls = self._class_of_call(ctor) if ctor is not None else None
        params = cls.ctor_grads.get(method, ()) if cls is not None else ()
        if cls is None or not params or ctor is None:
            return ()
        args = bind_arguments(cls.init_params, cls.init_kwonly, True, ctor)
        return tuple(a for p in params if (a := args.get(p)) is not None)

    def _class_of_call(self, value: ast.Call) -> ClassSummary | None:
        found = self.lookup(value.func)
        return found if isinstance(found, ClassSummary) else None

    def instances(self) -> dict[str, ClassSummary]:
        """Dotted names assigned an instance of an imported class (``t = Trainer(...)``)."""
        if self._instances is None:
            self._instances = {}
            for node in statements(self.tree.body):
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    value = strip_self_returning(node.value)
                    if not isinstance(value, ast.Call) or dotted(value.func) is None:
                        continue
                    cls = self._class_of_call(value)
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        text = dotted(t)
                        if cls is not None and text is not None:
                            self._instances[text] = cls
                            self._constructions.setdefault(text, []).append(value)
        return self._instances

    def construction(self, owner: str) -> ast.Call | None:
        """The one construction the file assigns to ``owner`` (``ev =
        BertEvaluator(self.model, ...)``); None when it assigns it an
        instance more than once or never (which object a method call then
        runs on is not known)."""
        self.instances()
        found = self._constructions.get(owner, [])
        return found[0] if len(found) == 1 else None


def _name(text: str) -> ast.expr:
    return ast.Name(id=text, ctx=ast.Load())


def _stored(cls: ClassSummary, ctor: ast.Call | None) -> dict[str, str]:
    """``self`` attribute -> the caller's text for what the construction
    ``ctor`` passed to the ``__init__`` parameter stored there."""
    if ctor is None or not cls.stored or not cls.init_params:
        return {}
    args = bind_arguments(cls.init_params, cls.init_kwonly, True, ctor)
    return {attr: arg for attr, param in cls.stored.items() if (arg := args.get(param)) is not None}


def _bind(fn: FunctionSummary, call: ast.Call) -> dict[str, str | None]:
    return bind_arguments(fn.params, fn.kwonly, fn.is_method, call)
