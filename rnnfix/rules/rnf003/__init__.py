"""RNF003: validation, test and inference code not under ``eval()`` and
``no_grad()``. The rule is ``rule``; its helpers: ``gate`` (may a region call a
model), ``judge`` (leave, report or fix a region), ``models``, ``modes`` and
``escape`` (can results reach a backward rnnfix does not see). RNF006 shares
the judge."""
