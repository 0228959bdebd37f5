"""The abstract values of the mode-flow analysis.

A model's mode at a program point is a set of ``ModeFact``: each says one mode
the model may be in there and which statement or call put it in that mode (its
*origin*). Origins are what let RNF001 decide where ``train()`` must go (the
head of the loop whose back edge carries eval mode, before the statement that
follows an evaluation, or the head of a function whose callers leave the model
in eval) and say in its message which ``eval()`` is to blame.

``Frame`` maps model keys (dotted text: ``model``, ``self.encoder``) to facts.
``model.eval()`` also switches every submodule, so setting a key overwrites its
children (``model.encoder``) and reading a key falls back to its longest set
prefix, then to the scope's entry state.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rnnfix.analysis.modes.mayalias import Alias
from rnnfix.analysis.syntax.names import is_below, parent_path
from rnnfix.analysis.torch.mode import Mode


@dataclass(frozen=True)
class ModeFact:
    mode: Mode
    # What set the mode, in the scope being analysed: a ``.eval()``/``.train()``
    # call, a call to a helper whose summary sets it, the assignment that built
    # or loaded the model, or the scope's own node (FunctionDef / Module) for
    # "whatever it was when the scope was entered".
    origin: ast.AST
    # For entry facts: the origin in the caller (for messages); else None.
    cause: ast.AST | None = None
    # Set inside ``if <test>`` (True) or its ``else`` (False): a later ``if``
    # on the same test in the same loop iteration takes the same branch, as in
    # ``if phase == "train": model.train() else: model.eval()`` ... ``if phase
    # == "train": loss.backward()``. Dropped when the fact goes round a loop.
    guard: tuple[str, bool] | None = None


Facts = frozenset[ModeFact]


@dataclass(frozen=True)
class ModeState:
    """What ``ModeFlow.mode_before`` answers: the modes a model may be in."""

    facts: Facts

    @property
    def modes(self) -> frozenset[Mode]:
        return frozenset(f.mode for f in self.facts)

    @property
    def may_eval(self) -> bool:
        return Mode.EVAL in self.modes

    @property
    def may_train(self) -> bool:
        return Mode.TRAIN in self.modes

    @property
    def unknown(self) -> bool:
        return Mode.UNKNOWN in self.modes or not self.facts

    @property
    def provably_train(self) -> bool:
        return self.modes == {Mode.TRAIN}

    def origins(self, mode: Mode) -> list[ast.AST]:
        return sorted(
            {f.origin for f in self.facts if f.mode is mode},
            key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)),
        )


EntryLookup = Callable[[str], Facts]


def is_prefix(prefix: str, key: str) -> bool:
    """``key`` is ``prefix`` or a part of it (``model.encoder``, ``nets["G"]``)."""
    return is_below(key, prefix)


class Frame:
    """Mutable-by-copy mapping of model keys to facts for one program point."""

    __slots__ = ("aliases", "entry", "saved", "values", "via")

    def __init__(
        self,
        entry: EntryLookup,
        values: dict[str, Facts] | None = None,
        saved: dict[str, tuple[str, Facts]] | None = None,
        aliases: dict[str, frozenset[Alias]] | None = None,
        via: dict[tuple[str, str], Facts] | None = None,
    ) -> None:
        self.entry = entry
        self.values: dict[str, Facts] = values if values is not None else {}
        # Saved modes: ``was = model.training`` maps ``was`` to (``model``, the
        # facts it had there), so that ``model.train(was)`` restores them.
        self.saved: dict[str, tuple[str, Facts]] = saved if saved is not None else {}
        # May-aliases (``rnnfix.analysis.modes.mayalias``): a local name -> the
        # models it may be bound to here (``test_model = model`` in an ``else``).
        self.aliases: dict[str, frozenset[Alias]] = aliases if aliases is not None else {}
        # (name, model) -> the facts a mode change through the may-alias
        # ``name`` added to ``model``: a later change through the same name
        # replaces them (``net.eval()`` ... ``net.train()`` leaves no eval).
        self.via: dict[tuple[str, str], Facts] = via if via is not None else {}

    def copy(self) -> Frame:
        return Frame(
            self.entry, dict(self.values), dict(self.saved), dict(self.aliases), dict(self.via)
        )

    def lookup(self, key: str) -> Facts:
        probe: str | None = key
        while probe is not None:
            found = self.values.get(probe)
            if found is not None:
                return found
            probe = parent_path(probe)
        return self.entry(key)

    def set(self, key: str, facts: Facts) -> None:
        for k in [k for k in self.values if k != key and is_below(k, key)]:
            del self.values[k]
        self.values[key] = facts

    def add(self, key: str, facts: Facts) -> None:
        """A path that may or may not change ``key``: keep the old facts too."""
        for k in [k for k in self.values if k != key and is_below(k, key)]:
            self.values[k] = self.values[k] | facts
        self.values[key] = self.lookup(key) | facts

    def through(self, name: str, key: str, facts: Facts, replace: bool) -> None:
        """A mode change reaching ``key`` through the may-alias ``name``: on
        the other paths ``key`` keeps its facts, so they are kept; with
        ``replace`` the facts an earlier change through ``name`` added go."""
        old = self.via.get((name, key), frozenset()) if replace else frozenset()
        for k in [k for k in self.values if k != key and is_below(k, key)]:
            self.values[k] = (self.values[k] - old) | facts
        self.values[key] = (self.lookup(key) - old) | facts
        self.via[(name, key)] = (self.via.get((name, key), frozenset()) - old) | facts

    def drop_aliases(self, bound: str) -> None:
        """``bound`` is rebound: it is no longer an alias, nor what one names."""
        self.aliases.pop(bound, None)
        for name, aliases in list(self.aliases.items()):
            live = frozenset(a for a in aliases if not is_prefix(bound, a.target))
            if live != aliases:
                self.aliases[name] = live

    def assume(self, guard: tuple[str, bool]) -> None:
        """Entering a branch where ``guard`` holds: facts set under the
        opposite branch of the same test cannot be live here."""
        test, value = guard
        for k, facts in list(self.values.items()):
            kept = frozenset(f for f in facts if f.guard != (test, not value))
            if kept != facts:
                self.values[k] = kept
        for name, bound in list(self.aliases.items()):
            live = frozenset(a for a in bound if a.guard != (test, not value))
            if live != bound:
                self.aliases[name] = live

    def unguarded(self, inside: Callable[[ast.AST], bool]) -> Frame:
        """A copy in which facts set ``inside`` a loop forget their guards: on
        the next iteration the test may have another value."""
        out = Frame(self.entry, saved=dict(self.saved))
        for k, facts in self.values.items():
            out.values[k] = frozenset(
                ModeFact(f.mode, f.origin, f.cause) if f.guard and inside(f.origin) else f
                for f in facts
            )
        for name, bound in self.aliases.items():
            out.aliases[name] = frozenset(
                Alias(a.target, a.origin) if a.guard and inside(a.origin) else a for a in bound
            )
        for pair, facts in self.via.items():
            out.via[pair] = frozenset(
                ModeFact(f.mode, f.origin, f.cause) if f.guard and inside(f.origin) else f
                for f in facts
            )
        return out

    def same_as(self, other: Frame) -> bool:
        return (
            self.values == other.values
            and self.saved == other.saved
            and self.aliases == other.aliases
            and self.via == other.via
        )


def join(frames: Iterable[Frame | None]) -> Frame | None:
    """Merge the states of several paths; None stands for "unreachable"."""
    live = [f for f in frames if f is not None]
    if not live:
        return None
    if len(live) == 1:
        return live[0].copy()
    keys: set[str] = set()
    for f in live:
        keys.update(f.values)
    out = Frame(live[0].entry)
    for k in keys:
        merged: Facts = frozenset()
        for f in live:
            merged |= f.lookup(k)
        out.values[k] = merged
    # A may-alias of any path is one of the join (a name bound on no path to a
    # model has none).
    for f in live:
        for name, bound in f.aliases.items():
            out.aliases[name] = out.aliases.get(name, frozenset()) | bound
        for pair, facts in f.via.items():
            out.via[pair] = out.via.get(pair, frozenset()) | facts
    # A saved mode survives a join only where every path saved it from the same model.
    for var, (model, facts) in live[0].saved.items():
        others = [f.saved.get(var) for f in live[1:]]
        if all(o is not None and o[0] == model for o in others):
            out.saved[var] = (model, facts.union(*(o[1] for o in others if o is not None)))
    return out
