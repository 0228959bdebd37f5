"""What the project index reads in a file's text without parsing it: the
patterns of its pre-filters (mode code, RNN code, loads, defined names, dotted
chains) shared by the index and its per-file view."""

from __future__ import annotations

import re

from rnnfix.analysis.project.summaries import LOAD_TOKENS, MODE_TOKENS, OVERRIDE_TOKENS, RNN_TOKENS

IMPORT_LINE = re.compile(
    r"^[ \t]*(?:from[ \t]+(\.)|from[ \t]+([A-Za-z_]\w*)|import[ \t]+([^\n#;\\]+))", re.M
)
MAX_REEXPORTS = 3


def any_of(tokens: tuple[str, ...]) -> re.Pattern[bytes]:
    return re.compile(b"|".join(re.escape(t.encode()) for t in tokens))


# What a file needs for ``ProjectIndex.may_hold`` to let a lookup through:
# functions are summarised only in files with mode code, and one can set
# eval only with a mode call (``.eval()``, ``.train(False)``; ``m . eval()``
# is one too); RNNs are read only in files with RNN or override text.
MODE_CODE = any_of(MODE_TOKENS)
MODE_SWITCH = re.compile(rb"\.\s*(?:eval|train)\b")
RNN_CODE = any_of(RNN_TOKENS + OVERRIDE_TOKENS)
LOAD_CODE = any_of(LOAD_TOKENS)
# The name of a ``def`` or ``class`` in a file's text (``LazySummaries.may_define``).
DEFINED_NAME = re.compile(rb"\b(def|class)[ \t\f\\\r\n]+(\w+)")
# One ``.name`` of a dotted name in the text (``ProjectView._chains``): the
# name maybe parenthesised, with spaces, continuations and comments between.
CHAIN_PART = r"(?:[ \t\f\r\n\\)]|#[^\n]*(?![^\n]))*\.(?:[ \t\f\r\n\\]|#[^\n]*(?![^\n]))*\w+"
CALL_AFTER = r"(?=(?:[ \t\f\r\n\\)]|#[^\n]*(?![^\n]))*\()"
COMMENT = re.compile(r"#[^\n]*")
CHAIN_NAME = re.compile(r"\.(?:[ \t\f\r\n\\]|#[^\n]*(?![^\n]))*(\w+)")
WORD = re.compile(r"\w")
WORD_OR_DOT = re.compile(r"[\w.]")
CHAIN = re.compile(rf"((?:{CHAIN_PART})*)")
CALLED_CHAIN = re.compile(rf"((?:{CHAIN_PART})*){CALL_AFTER}")
