"""Is a train-mode evaluation the method rather than a slip? A model whose
BatchNorm layers keep no statistics meant for evaluation (issue 36.5).

Asked by the rules (RNF003's judge, RNF006's fix); its own module, not
``intent``'s, because the mode flow imports ``intent`` and this reads the
file's facts (``FileContext``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext


def evaluates_with_batch_statistics(ctx: FileContext, model: str) -> bool:
    """``model``'s class (of this file) has no mode-dependent layer but
    BatchNorm layers built with ``momentum=1`` or ``track_running_stats=False``
    (``classfacts.transductive_norm``): running statistics it never meant to
    evaluate with, so its train mode in an evaluation is the method
    (LearningToCompare's Relation Network, MAML ports), not a slip."""
    info = ctx.facts.modes.models.get(model)
    name = info.class_name if info is not None else None
    return name is not None and ctx.facts.receivers.table.transductive_norm(name) is True
