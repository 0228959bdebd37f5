"""Whether a source can hold an evaluation region at all, read from its text.

``rnnfix.analysis.regions.find_regions`` needs the tree and the parent map
of the whole file; most files of a large tree hold no region (torch's own
package: about one file in six passes this test, against three in four for
a plain search for ``val``/``test``/``eval``). This is a necessary condition
for each of its signals, never a guess: a file it rules out has no region.

- *name*: a ``def`` whose name has an evaluation word (``evaluate``,
  ``val_epoch``): the text after ``def``;
- *data* and *phase*: a ``for`` statement whose iterable names evaluation
  data (``val_loader``, ``loaders["val"]``, ``("train", "val")``): the text
  of each ``for`` header, continued over the lines its brackets span;
- *after-eval*: a mode call (``.eval()``, ``.train(False)``) before a loop.

Keep it in step with ``regions``: ``tests/analysis/test_regiontext.py``
checks that every fixture with a region passes.
"""

from __future__ import annotations

import re

from rnnfix.analysis.regions import _EVAL_FUNCTION_WORDS, _eval_word
from rnnfix.analysis.syntax import words

# ``model.eval()``, ``model . train (False)``: spaces and line continuations
# may sit between the parts of an attribute call.
_MODE_CALL = re.compile(r"\.[\s\\]*(?:eval|train)[\s\\]*\(")
_DEF = re.compile(r"\bdef[\s\\]+(\w+)")
# A ``for`` statement starts a logical line (a compound statement never
# follows ``;`` or a colon on the same line); comprehensions are not loops.
_FOR = re.compile(r"^[ \t]*(?:async[ \t]+)?for\b", re.M)
_STRING = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_COMMENT = re.compile(r"#.*")
_MAX_HEADER_LINES = 50


def may_have_regions(source: str) -> bool:
    if _MODE_CALL.search(source):
        return True
    for name in _DEF.findall(source):
        if any(w in _EVAL_FUNCTION_WORDS for w in words(name)):
            return True
    return any(any(_eval_word(w) for w in words(header)) for header in _for_headers(source))


def _for_headers(source: str) -> list[str]:
    """The text of each ``for`` header: its line, and the lines after it
    while a bracket is open or the line ends with a backslash (a header too
    long to read this way counts as the whole rest of the file)."""
    out: list[str] = []
    for m in _FOR.finditer(source):
        start = m.start()
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
