"""The mode flow and intent: which models may be in eval mode where
(``modeflow``, ``flow``, ``state``), whether an ``eval()`` is deliberate
(``intent``), where a ``train()`` must go (``placement``), which objects may get
a mode call (``receivers``), evaluation regions, and loads for inference."""
