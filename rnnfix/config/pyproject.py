"""``[tool.rnnfix]`` in ``pyproject.toml``, merged under the CLI flags."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from rnnfix.config.discovery import ConfigFinder
from rnnfix.config.perfile import validate as validate_per_file_ignores
from rnnfix.config.settings import TARGET_VERSIONS, Settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_KEYS = {
    "select": "select",
    "extend-select": "extend_select",
    "ignore": "ignore",
    "fixable": "fixable",
    "unfixable": "unfixable",
    "report-unused-suppressions": "report_unused_suppressions",
    "unsafe-fixes": "unsafe_fixes",
    "strict": "strict",
    "rnn-only": "rnn_only",
    "rnn-only-strategy": "rnn_only_strategy",
    "exclude": "exclude",
    "extend-exclude": "extend_exclude",
    "include-tests": "include_tests",
    "force-exclude": "force_exclude",
    "max-file-size": "max_file_size",
    "per-file-ignores": "per_file_ignores",
    "target-version": "target_version",
}


class ConfigError(Exception):
    pass


def find_pyproject(start: Path) -> Path | None:
    """The configuration of the file or folder at ``start``
    (``rnnfix.config.discovery``: the nearest ``pyproject.toml`` with
    ``[tool.rnnfix]``, within the repository, of this user's)."""
    return ConfigFinder().nearest(start)


def load_settings(pyproject: Path | None) -> Settings:
    if pyproject is None:
        return Settings()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read configuration: {exc}") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{pyproject}: [tool] must be a table")
    table = tool.get("rnnfix")
    if table is None:
        return Settings()
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.rnnfix] must be a table")
    settings = apply_overrides(Settings(), table, source=str(pyproject))
    if settings.per_file_ignores:  # their globs are relative to the project root
        settings = dataclasses.replace(settings, root=str(pyproject.parent.resolve()))
    return settings


def apply_overrides(settings: Settings, table: dict[str, Any], source: str) -> Settings:
    changes: dict[str, Any] = {}
    for key, value in table.items():
        field = _KEYS.get(key) or _KEYS.get(key.replace("_", "-"))
        if field is None:
            raise ConfigError(f"{source}: unknown option {key!r} in [tool.rnnfix]")
        default = getattr(settings, field)
        if field == "target_version":
            if value not in TARGET_VERSIONS:
                raise ConfigError(
                    f"{source}: {key} must be one of {', '.join(TARGET_VERSIONS)}, not {value!r}"
                )
        elif field == "per_file_ignores":
            try:
                value = validate_per_file_ignores(value, source)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        elif isinstance(default, tuple):
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{source}: {key} must be a list of strings")
            value = tuple(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{source}: {key} must be true or false")
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{source}: {key} must be a positive number of bytes")
        elif field == "rnn_only_strategy" and value not in ("rnn-train", "cudnn-off"):
            raise ConfigError(f"{source}: {key} must be 'rnn-train' or 'cudnn-off'")
        changes[field] = value
    return dataclasses.replace(settings, **changes)
