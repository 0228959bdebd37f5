"""One run over files: the per-file engine (parse -> rules -> edits -> re-check),
the run over many files (``process``, ``pool``), the result cache, the git
changes a run can be limited to, and the nets under every fix (``linemap``,
``undefined``)."""
