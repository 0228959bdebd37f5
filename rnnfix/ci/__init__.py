"""The CI autofix bot behind ``action.yml``: check, suggest or commit rnnfix's
fixes on a pull request. Run as ``python -m rnnfix.ci``; standard library only
(``urllib`` for the GitHub REST API, ``git`` for the working tree)."""
