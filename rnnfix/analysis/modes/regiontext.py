"""Whether a source can hold an evaluation region at all, read from its text.

``rnnfix.analysis.modes.regions.find_regions`` needs the tree and the parent map
of the whole file; most files of a large tree hold no region (torch's own
package: about one file in six passes this test, against three in four for
a plain search for ``val``/``test``/``eval``). This is a necessary condition
for each of its signals, never a guess: a file it rules out has no region.

- *name*: a ``def`` whose name has an evaluation word (``evaluate``,
  ``val_epoch``): the text after ``def``;
- *data* and *phase*: a ``for`` statement whose iterable names evaluation
  data (``val_loader``, ``loaders["val"]``, ``("train", "val")``): the text
  of each ``for`` header, continued over the lines its brackets span;
- *after-eval* and *after-step*: a mode call (``.eval()``, ``.train(False)``)
  before a loop or a statement;
- *after-training*: a training step's call (``.backward(``, ``.step(``;
  a call of a function of the file that makes one means the file holds that
  text too), and a call of an output (``print(``, ``.save(``: the names of
  ``outputs.SINKS``), or an import and a ``backward(`` (a function of
  another file of the run may print what the model computes: ``shows``);
- *flag*: a boolean default of a ``FLAG_NAMES`` parameter (``train=True``)
  or of one named for evaluation (``cross_valid=False``: every word of
  ``EVAL_FLAG_WORDS`` holds ``val``, ``test`` or ``cv``),
  a comparison with a training string (``mode == "train"``, ``mode in
  ("train", "train+log")``), or a model's mode read (``if model.training:``).

Keep it in step with ``regions``: ``tests/analysis/test_regiontext.py``
checks that every fixture with a region passes.
"""

from __future__ import annotations

import re

from rnnfix.analysis.modes.flagparams import FLAG_NAMES, TRAIN_VALUES
from rnnfix.analysis.modes.outputs import SINK_CALL
from rnnfix.analysis.modes.regions import (
    _EVAL_FUNCTION_WORDS,
    _estimates_metric,
    _eval_word,
)
from rnnfix.analysis.syntax.walks import words

# ``model.eval()``, ``model . train (False)``: spaces and line continuations
# may sit between the parts of an attribute call.
_MODE_CALL = re.compile(r"\.[\s\\]*(?:eval|train)[\s\\]*\(")
# A ``def`` whose name holds the text of an evaluation word (every word of
# ``_EVAL_FUNCTION_WORDS`` contains one of these, or ``estimate``:
# ``regions._estimates_metric``); its words are read after.
# No leading ``\b``: a pattern that starts with a literal is scanned for far
# faster, and the boundary is checked on each (rare) match instead.
_DEF = re.compile(
    r"def[\s\\]+(\w*(?:[vV][aA][lL]|[tT][eE][sS][tT]|[pP][rR][eE][dD][iI][cC][tT]|[iI][nN][fF][eE][rR]"
    r"|[eE][sS][tT][iI][mM][aA][tT][eE])\w*)"
)
_WORD_CHAR = re.compile(r"\w")
# ``mode == "train"``, ``"train" == phase``: a string flag's guard.
_TRAIN_COMPARE = re.compile(
    r"==\s*[rbuRBU]?['\"](?:" + "|".join(sorted(TRAIN_VALUES)) + r")['\"]"
    r"|['\"](?:" + "|".join(sorted(TRAIN_VALUES)) + r")['\"]\s*=="
    # ``mode in ("train", "train+log")``
    r"|in\s*[(\[{][^)\]}]*['\"](?:" + "|".join(sorted(TRAIN_VALUES)) + r")['\"]"
)
# ``cross_valid=False``, ``is_test: bool = False``: an evaluation flag.
_EVAL_FLAG_DEFAULT = re.compile(r"(?i:val|test|cv)\w*\s*(?::[^=,)]*)?=\s*False\b")
# ``loss.backward()``, ``optimizer.step()``: a training step (``gradctx``'s
# steps are all calls of a ``backward`` or a ``step``), for *after-training*.
_STEP_CALL = re.compile(r"\.[\s\\]*(?:backward|step)[\s\\]*\(|\bbackward[\s\\]*\(")
# A backward: with an import, a training file whose output may be in a helper
# of another file (a sampling pipeline's ``scheduler.step(`` has none).
_BACKWARD = re.compile(r"\bbackward[\s\\]*\(")
# ``model.training``: a mode read, the flag of ``flagparams.mode_flag``.
_MODE_READ = re.compile(r"\.[\s\\]*training\b")
_FLAG_DEFAULT = re.compile(
    r"\b(?:" + "|".join(sorted(FLAG_NAMES)) + r")\s*(?::[^=,)]*)?=\s*(?:True|False)\b"
)
# A ``for`` statement starts a logical line (a compound statement never
# follows ``;`` or a colon on the same line); comprehensions are not loops.
# Found as the literal ``for`` and then checked for what may precede it on
# its line (a ``^`` pattern in multi-line mode is scanned slowly).
_FOR = re.compile(r"for\b")
_FOR_INDENT = re.compile(r"[ \t]*(?:async[ \t]+)?")
_STRING = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_COMMENT = re.compile(r"#.*")
_MAX_HEADER_LINES = 50
# Every evaluation data word (``_eval_word``) contains one of these, in
# lower case: a header without any has no evaluation word.
_EVAL_TEXT = ("val", "dev", "test", "holdout", "heldout")


def may_have_regions(source: str) -> bool:
    if _MODE_CALL.search(source) or _FLAG_DEFAULT.search(source) or _TRAIN_COMPARE.search(source):
        return True
    if _MODE_READ.search(source) or _EVAL_FLAG_DEFAULT.search(source):
        return True
    if ("no_grad" in source or "inference_mode" in source) and _FOR.search(source):
        return True  # the *grad-off* signal: a loop over data under no_grad
    if _STEP_CALL.search(source) and (
        SINK_CALL.search(source) or ("import" in source and _BACKWARD.search(source))
    ):
        return True
    for m in _DEF.finditer(source):
        start = m.start()
        if start and _WORD_CHAR.match(source, start - 1):
            continue  # ``undef``: not the keyword
        ws = words(m.group(1))
        if any(w in _EVAL_FUNCTION_WORDS for w in ws) or _estimates_metric(ws):
            return True
    for header in _for_headers(source):
        text = header.lower()
        if any(t in text for t in _EVAL_TEXT) and any(_eval_word(w) for w in words(header)):
            return True
    return False


def _for_starts(source: str) -> list[int]:
    """Where each line that starts a ``for`` statement begins."""
    out: list[int] = []
    last = -1
    for m in _FOR.finditer(source):
        pos = m.start()
        line = source.rfind("\n", 0, pos) + 1
        if line != last and _FOR_INDENT.fullmatch(source, line, pos):
            out.append(line)
            last = line
    return out


def _for_headers(source: str) -> list[str]:
    """The text of each ``for`` header: its line, and the lines after it
    while a bracket is open or the line ends with a backslash (a header too
    long to read this way counts as the whole rest of the file)."""
    out: list[str] = []
    for start in _for_starts(source):
        depth = 0
        pos = start
        for _ in range(_MAX_HEADER_LINES):
            end = source.find("\n", pos)
            end = len(source) if end < 0 else end
            # Brackets in strings and comments do not count.
            line = _COMMENT.sub("", _STRING.sub("''", source[pos:end]))
            depth += sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
            pos = end + 1
            if (depth <= 0 and not line.rstrip().endswith("\\")) or pos > len(source):
                out.append(source[start:end])
                break
        else:
            out.append(source[start:])
    return out
