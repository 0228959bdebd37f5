"""rnnfix: find and fix PyTorch train/eval mode bugs.

The small API the CLI is built on::

    import rnnfix
    findings = rnnfix.check(source)            # list[Finding]
    result = rnnfix.fix(source)                # result.fixed, result.findings, result.applied

Neither imports torch.
"""

# Only ``rnnfix._version`` at run time, no ``typing`` nor ``__future__``:
# ``python -m rnnfix`` imports this package before ``rnnfix.__main__`` can
# drop the current folder from ``sys.path``, so a ``typing.py`` there would
# be imported instead (annotations are strings instead).
from rnnfix._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from rnnfix.analysis.context import Finding
    from rnnfix.config.settings import Settings
    from rnnfix.run.engine import SourceResult


def check(source: str, settings: "Settings | None" = None, **options: "Any") -> "list[Finding]":
    """Findings in ``source``. ``options`` are ``Settings`` fields
    (``select=("RNF001",)``, ``strict=True``). Raises ``SyntaxError``."""
    from rnnfix.run.engine import check_source

    return check_source(source, _settings(settings, options))


def fix(source: str, settings: "Settings | None" = None, **options: "Any") -> "SourceResult":
    """Fixed source and what is left. Raises ``SyntaxError`` for bad input."""
    from rnnfix.run.engine import fix_source

    return fix_source(source, _settings(settings, options))


def _settings(settings: "Settings | None", options: "dict[str, Any]") -> "Settings":
    import dataclasses

    from rnnfix.config.settings import Settings

    base = settings or Settings()
    for key in ("select", "extend_select", "ignore", "fixable", "unfixable"):
        if isinstance(options.get(key), str):
            options[key] = (options[key],)
    return dataclasses.replace(base, **options) if options else base


__all__ = ["__version__", "check", "fix"]
