"""Run settings (``settings``), ``[tool.rnnfix]`` in ``pyproject.toml``
(``pyproject``) and ``per-file-ignores`` (``perfile``): the bottom layer, read by
every other."""
