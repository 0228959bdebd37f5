"""Each file's ``Settings``: ``[tool.rnnfix]`` of its own configuration
(``--config``'s, else the nearest one above the file:
``rnnfix.config.discovery``), with the command line's flags over it, as
ruff resolves settings per file."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from rnnfix.cli.options import SettingFlags, check_selectors
from rnnfix.config.discovery import ConfigFinder
from rnnfix.config.settings import Settings

# Flags that replace the configuration's value when given.
_OVERRIDDEN = (
    "unsafe_fixes",
    "strict",
    "rnn_only",
    "rnn_only_strategy",
    "include_tests",
    "force_exclude",
    "target_version",
    "report_unused_suppressions",
)


class Configurations:
    """The settings of a run's files, each configuration read once. Errors
    in any configuration a file uses (TOML, unknown options or rule
    selectors) are usage errors."""

    def __init__(self, flags: SettingFlags, config_path: Path | None) -> None:
        self.flags = flags
        self.config_path = config_path
        self.finder = ConfigFinder()
        self._settings: dict[Path | None, Settings] = {}
        self._of_file: dict[Path, Path | None] = {}

    @property
    def notes(self) -> list[str]:
        """Configurations passed over (another user owns them), one line each."""
        return self.finder.notes

    def config_for(self, path: Path) -> Path | None:
        """The configuration file of ``path`` (a file or a folder), or None."""
        return self.config_path or self.finder.nearest(path)

    def for_path(self, path: Path) -> Settings:
        return self.settings(self.config_for(path))

    def settings(self, config: Path | None) -> Settings:
        if config not in self._settings:
            self._settings[config] = _resolve(config, self.flags)
        return self._settings[config]

    def group(self, files: Sequence[Path]) -> dict[Path | None, list[Path]]:
        """``files`` by their configuration, each list in ``files``' order."""
        groups: dict[Path | None, list[Path]] = {}
        for f in files:
            groups.setdefault(self.config_of_file(f), []).append(f)
        return groups

    def config_of_file(self, path: Path) -> Path | None:
        """``config_for`` a path known to be a file (looked up by its folder)."""
        if self.config_path is not None:
            return self.config_path
        if path not in self._of_file:
            self._of_file[path] = self.finder.for_file(path)
        return self._of_file[path]


def _resolve(pyproject: Path | None, flags: SettingFlags) -> Settings:
    """``[tool.rnnfix]`` of ``pyproject`` (defaults without one) with the
    flags given on the command line over it; unknown rule selectors are
    errors wherever they come from."""
    from rnnfix.config.pyproject import ConfigError, load_settings

    try:
        settings = load_settings(pyproject)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    overrides: dict[str, Any] = {}
    # As in ruff, --select starts the selection again (the configuration's
    # extend-select with it); the other lists add to the configuration's.
    if flags.select:
        overrides["select"] = flags.select
        overrides["extend_select"] = flags.extend_select
    elif flags.extend_select:
        overrides["extend_select"] = settings.extend_select + flags.extend_select
    if flags.ignore:
        overrides["ignore"] = settings.ignore + flags.ignore
    if flags.fixable:
        overrides["fixable"] = flags.fixable
    if flags.unfixable:
        overrides["unfixable"] = settings.unfixable + flags.unfixable
    for key in _OVERRIDDEN:
        value = getattr(flags, key)
        if value is not None:
            overrides[key] = value
    if flags.isolated:
        overrides["isolated"] = True
    settings = dataclasses.replace(settings, **overrides)
    in_file = f"[tool.rnnfix] of {pyproject}"
    check_selectors(settings.select, "--select" if flags.select else in_file)
    for name in ("extend_select", "ignore", "fixable", "unfixable"):
        flag = f"--{name.replace('_', '-')}"
        where = f"{flag} or {in_file}" if getattr(flags, name) else in_file
        check_selectors(getattr(settings, name), where)
    return settings


def show_settings(settings: Settings, pyproject: Path | None) -> str:
    """``--show-settings``: every setting as the ``[tool.rnnfix]`` TOML that
    gives it (paste it into a ``pyproject.toml``); one not set is a comment."""
    lines = [
        f"# settings from {pyproject or 'defaults (no pyproject.toml)'}",
        "[tool.rnnfix]",
    ]
    for f in dataclasses.fields(settings):
        if f.name in _NOT_OPTIONS or f.name == "per_file_ignores":
            continue
        key, value = f.name.replace("_", "-"), getattr(settings, f.name)
        lines.append(f"# {key} is not set" if value is None else f"{key} = {_toml(value)}")
    if settings.isolated:
        lines.append("# --isolated: on (a command-line flag, no [tool.rnnfix] option)")
    lines += ["", "[tool.rnnfix.per-file-ignores]"]
    lines += [f"{_toml(glob)} = {_toml(codes)}" for glob, codes in settings.per_file_ignores]
    return "\n".join(lines) + "\n"


# Settings no [tool.rnnfix] option sets: a flag, and the folder the
# per-file-ignores globs are relative to (the configuration's).
_NOT_OPTIONS = ("isolated", "root")


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")
