"""Whether any selected rule can report something in a file, before parsing it.

A run parses and analyses only the files that pass this test (as Semgrep
skips files whose text cannot match any pattern); the others are read (the
cache keys on their bytes) but never parsed, so their syntax is not checked
and they are never written. It is a *necessary* condition of a finding of
each rule: for every rule, the disjunction below of what that rule's own
pre-condition (its ``may_apply``, the first test its ``check`` makes) asks
before it reads the tree. A file it rules out would have been ruled out by
every rule's own pre-condition, so it has no finding.

Per rule (the tokens, and why each is necessary, are in the rules' own
pre-conditions; this module restates only their text and import parts):

- RNF001 (``rnf001.may_apply``): an eval mode (``rnf001.eval_text``: a mode
  call, a ``transformers`` ``from_pretrained``; with ``--strict`` also
  ``.backward(``/``.step(``), or an
  import of a file of the run with a function that may set eval
  (``ProjectView.imports_eval``), *and* a training step (``step``,
  ``parameters``, ``optim`` or ``backward`` in the text, or a call of a
  function of the run that trains or steps: ``ProjectView.reaches``);
- RNF002: ``rnf002.may_apply`` (``<owner>.module.train/eval`` in the text);
- RNF003: its ``_PREFILTER`` words and ``regiontext.may_have_regions`` (or
  ``periodic.may_have_periodic``: a remainder and a training step);
- RNF004 (``rnf004.may_apply``): an RNN (``LSTM``/``GRU``/``RNN``, or an
  imported RNN class of the run) *and* gradient code (``backward``,
  ``autograd``, ``captum``, or an imported gradient helper of the run) *and*
  an eval mode: a mode call (``regiontext``'s ``may_switch_mode``) or a name
  the file writes that reaches, in another file of the run, a function that
  sets eval;
- RNF005: ``rnf005.may_apply`` (a zero assigned to ``cudnn.enabled``);
- RNF006 (``rnf006.may_apply``): loading text, a
  call of a loader function of the run (``ProjectView.loader_called``), or
  a class that binds ``self.<name>`` and runs it (``inferclass.class_text``).

A rule this module does not know passes (the file is parsed).

The project parts need the file's import bindings, which the rules read from
the tree. Here they come from the import lines (``importtext.text_bindings``,
the reader the index uses for files it never summarises): every import
statement of the file starts a logical line there, so the lines bind every
name the tree binds, to the same target, plus perhaps names of import-like
lines inside strings. More bindings can only let more through (each project
part is an ``any`` over the bindings and the dotted names rooted at them).
When the lines cannot be trusted (an import after ``;`` or ``:``, ``\\r``
line ends) or bind one name twice, the project parts pass. A file whose
import lines name nothing of the run (``ProjectIndex.may_import``) has no
bindings to another file of the run, which is what the rules' views say too.

Keep it in step with the rules: ``tests/rules/test_filegate.py`` checks that
every fixture with a finding passes, and that a file that fails has none.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from rnnfix.analysis.modes.inferclass import class_text
from rnnfix.analysis.modes.regiontext import may_have_regions
from rnnfix.analysis.project.importtext import text_bindings
from rnnfix.analysis.project.index import normalise
from rnnfix.analysis.project.view import ProjectView
from rnnfix.analysis.ruletext import EVAL_REACH, STEP_REACH, may_switch_mode
from rnnfix.rules import rnf002_wrapper_mode_via_module as _rnf002
from rnnfix.rules import rnf005_global_cudnn_switch as _rnf005
from rnnfix.rules.rnf001_train_step_in_eval_mode import eval_text as _rnf001_eval_text
from rnnfix.rules.rnf003.periodic import may_have_periodic
from rnnfix.rules.rnf003.rule import _PREFILTER as _RNF003_WORDS
from rnnfix.rules.rnf004_backward_in_eval_through_rnn import _sets_eval
from rnnfix.rules.rnf006 import rule as _rnf006

if TYPE_CHECKING:
    from rnnfix.analysis.project.index import ProjectIndex
    from rnnfix.analysis.project.summaries import FunctionSummary
    from rnnfix.config.settings import Settings

# Text of ``rnf001.may_apply``: a mode call to eval written here, and what
# ``call_facts`` needs for a step of this file.
_RNF001_STRICT = (".backward(", ".step(")
_RNF001_STEP = ("step", "parameters", "optim", "backward")
# Text of ``rnf004.may_apply``.
_RNF004_GRAD = ("backward", "autograd", "captum")
_RNF004_RNN = ("LSTM", "GRU", "RNN")


class _Project:
    """The project parts of the rules' pre-conditions for one file, from its
    import lines; every answer True when they cannot be read."""

    def __init__(self, source: str, path: str, project: ProjectIndex | None) -> None:
        self._source = source
        self._path = path
        self._project = project
        self._read = False
        self._view: ProjectView | None = None
        self._unknown = False

    def _bindings(self) -> None:
        """Read at the first question: most files pass or fail on text alone."""
        if self._read:
            return
        self._read = True
        project = self._project
        if project is None or not project.may_import(self._source):
            return  # no binding to another file of the run
        read = text_bindings(self._source.encode("utf-8", "replace"))
        if read is None or read.ambiguous:
            self._unknown = True
            return
        # The view reads its tree only for the base classes of ``reaches(...,
        # bases=True)``, which is not asked here (see ``reaches_eval``).
        self._view = ProjectView(project, normalise(self._path), ast.Module([], []), read.bindings)

    @property
    def view(self) -> ProjectView | None:
        self._bindings()
        return self._view

    @property
    def unknown(self) -> bool:
        self._bindings()
        return self._unknown

    @property
    def consulted(self) -> set[str]:
        return self._view.consulted if self._view is not None else set()

    @property
    def any(self) -> bool:
        return self.unknown or self.view is not None

    def imports_eval(self) -> bool:
        return self.unknown or (self.view is not None and self.view.imports_eval())

    def imports_training(self) -> bool:
        return self.unknown or (self.view is not None and self.view.imports_training())

    def imports_gradient_code(self) -> bool:
        return self.unknown or (self.view is not None and self.view.imports_gradient_code())

    def imports_rnn_class(self) -> bool:
        return self.unknown or (self.view is not None and self.view.imports_rnn_class())

    def loader_called(self, source: str) -> bool:
        return self.unknown or (self.view is not None and self.view.loader_called(source))

    def reaches_step(self, source: str) -> bool:
        """``rnf001.may_apply``'s last test, for either of its summaries."""
        if self.unknown:
            return True
        view = self.view
        return view is not None and view.reaches(_trains_or_steps, STEP_REACH, source, called=True)

    def reaches_eval(self, source: str) -> bool:
        """``rnf004.may_apply``'s ``reaches(_sets_eval, ..., called=True,
        bases=True)``: the base classes of the file's classes are dotted names
        rooted at a binding, which the chains of every name (``called=False``)
        hold, each prefix included."""
        if self.unknown:
            return True
        view = self.view
        return view is not None and (
            view.reaches(_sets_eval, EVAL_REACH, source, called=True)
            or view.reaches(_sets_eval, EVAL_REACH, source, called=False)
        )


class _NoProject(_Project):
    """No other file of the run: the project parts all say False (only the
    rules without project parts are asked with it)."""

    def __init__(self) -> None:
        super().__init__("", "", None)


_NO_PROJECT = _NoProject()


def _trains_or_steps(f: FunctionSummary) -> bool:
    return f.trains or f.summary.optimizer_step


def may_find(
    source: str,
    settings: Settings,
    path: str,
    project: ProjectIndex | None,
    consulted: set[str] | None = None,
) -> bool:
    """Whether a rule enabled in ``settings`` (already for ``path``) may
    report something in ``source``; False only when none can. ``consulted``
    gets the other files of the run whose text or summaries the answer read:
    when one of them changes (a fix, an edit) the answer may too."""
    from rnnfix.rules import all_rules

    proj = _Project(source, path, project)
    codes = [code for code in sorted(all_rules()) if settings.enabled(code)]
    try:
        # The answer is an ``any`` over the rules: the parts read from the
        # text alone first, for every rule (a file that passes one of them
        # never reads its import lines here, nor summarises what it imports),
        # then the project parts of the rules the text left undecided.
        undecided = []
        for code in codes:
            verdict = _by_text(code, source, settings)
            if verdict is True:
                return True
            if verdict is None:
                undecided.append(code)
        return any(_may_find(code, source, settings, proj) for code in undecided)
    finally:
        if consulted is not None:
            consulted |= proj.consulted


def _by_text(code: str, src: str, settings: Settings) -> bool | None:
    """``_may_find`` where the text alone decides it: True when it passes
    whatever the project parts say, False for a rule without project parts
    that fails; None when only the project parts can tell."""
    if code in ("RNF002", "RNF003", "RNF005"):
        return _may_find(code, src, settings, _NO_PROJECT)
    if code == "RNF001":
        eval_here = _rnf001_eval_text(src, settings.strict)
        return True if eval_here and any(t in src for t in _RNF001_STEP) else None
    if code == "RNF004":
        grad_and_rnn = any(t in src for t in _RNF004_GRAD) and any(t in src for t in _RNF004_RNN)
        return True if grad_and_rnn and may_switch_mode(src) else None
    if code == "RNF006":
        return True if _rnf006._loads(src) or class_text(src) else None
    return None


def _may_find(code: str, src: str, settings: Settings, proj: _Project) -> bool:
    if code == "RNF001":
        return _rnf001(src, settings, proj)
    if code == "RNF002":
        return _rnf002.may_apply(src)
    if code == "RNF003":
        return _RNF003_WORDS.search(src) is not None and (
            may_have_regions(src) or may_have_periodic(src)
        )
    if code == "RNF004":
        return _rnf004(src, proj)
    if code == "RNF005":
        return _rnf005.may_apply(src)
    if code == "RNF006":
        # Training text alone no longer rules a file out: RNF006 reads the
        # code for it (a comment may mention ``model.train()``), which needs
        # the tree; the gate keeps only the load part of its pre-condition.
        return _rnf006._loads(src) or class_text(src) or proj.loader_called(src)
    return True


def _rnf001(src: str, settings: Settings, proj: _Project) -> bool:
    eval_here = _rnf001_eval_text(src, settings.strict)
    if not eval_here:
        # ``_imports_eval``: an imported eval helper, and a step here or an
        # imported training function.
        if not proj.imports_eval():
            return False
        if not any(t in src for t in _RNF001_STRICT) and not proj.imports_training():
            return False
    if any(t in src for t in _RNF001_STEP):
        return True
    return proj.reaches_step(src)


def _rnf004(src: str, proj: _Project) -> bool:
    grad_text = any(t in src for t in _RNF004_GRAD)
    rnn_text = any(t in src for t in _RNF004_RNN)
    if not proj.any and not (grad_text and rnn_text):
        return False
    if not rnn_text and not proj.imports_rnn_class():
        return False
    if not grad_text and not proj.imports_gradient_code():
        return False
    return may_switch_mode(src) or proj.reaches_eval(src)
