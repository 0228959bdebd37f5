"""The run's reverse call index: which files call a module-level function of
another file, and with what (issue 36.3, evaluation in another file than the
loop: ``utils.py: def test_seg(model, loader)`` called from
``train_semseg.py`` with the network it trains).

Each calling file is read once (``CallsOut``, computed at the first question
that needs it and kept by the project index); a question about one function
joins the records of the files whose text names it (``ProjectIndex.callers``).
What a call passes is judged in the caller's own file, by the evidence the
rules use there (a callable ``Reader`` the asking rule hands down: the index
cannot import the rules). Plain data, like the summaries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Argument:
    """What a caller passes in one parameter position, as its file shows it."""

    module: bool  # a torch module whose mode matters (Dropout/BatchNorm, a mode call)
    evaluated: bool  # in eval mode at the call on every path the caller's mode flow reads


@dataclass(frozen=True)
class CallFact:
    """One call of a function of another file."""

    positional: tuple[Argument, ...]
    keywords: dict[str, Argument]
    # ``f(*args)`` / ``f(**kw)``: which parameter gets what is not known.
    starred: bool
    # It runs in the same iteration as a training step of the caller: an
    # ``eval()`` in the callee must give the mode back.
    in_training: bool
    # Its result reaches a gradient use in the caller, or leaves the caller
    # (returned, stored) for code that may differentiate it.
    result_trained: bool


@dataclass(frozen=True)
class CallsOut:
    """A file's calls of module-level functions of other files of the run."""

    # (the file that defines it, its name) -> each call there
    calls: dict[tuple[str, str], tuple[CallFact, ...]] = field(default_factory=dict)
    # Functions it names without calling (``callbacks=[evaluate]``,
    # ``partial(evaluate, ...)``): called by code rnnfix does not see.
    referenced: frozenset[tuple[str, str]] = frozenset()
    # Names it calls or names through an import it cannot follow to a
    # definition (a re-export it cannot read): may be any function of that name.
    unresolved: frozenset[str] = frozenset()


# Computes one file's record from its absolute path (None: unreadable).
Reader = Callable[[str], "CallsOut | None"]


@dataclass(frozen=True)
class Callers:
    """Every call of one function the run shows, or why not all are seen."""

    calls: tuple[CallFact, ...]
    unseen: str | None  # why a caller may be missed; None when all are seen
