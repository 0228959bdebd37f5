"""The mode a module is in: ``training`` true (``train()``) or false
(``eval()``), or not known from the source."""

from __future__ import annotations

import enum


class Mode(enum.Enum):
    TRAIN = "train"
    EVAL = "eval"
    # Not known in this scope: a parameter, a model loaded from disk, a mode
    # passed as a variable (``model.train(flag)``). Only --strict acts on it.
    UNKNOWN = "unknown"
