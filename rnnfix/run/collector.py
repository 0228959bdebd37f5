"""The cyclic garbage collector during a run: the analysis allocates
millions of short-lived objects (trees, facts) that reference counting
frees; at Python's default threshold (700) the collector runs thousands of
times over them, a tenth of a cold run's time for nothing. Its own module
so that a warm run need not import the worker pool for one number."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# Allocations between collections of the youngest generation.
GC_THRESHOLD = 100_000


@contextlib.contextmanager
def collector_tuned() -> Iterator[None]:
    """Fewer collections while files are checked; what is loaded already
    (rnnfix and its imports) is moved out of the collector's reach."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
