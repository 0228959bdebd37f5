"""Run settings: what the CLI flags and ``[tool.rnnfix]`` decide."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

RnnOnlyStrategy = Literal["rnn-train", "cudnn-off"]
# ``target-version`` values, as ruff spells them.
TARGET_VERSIONS = tuple(f"py3{minor}" for minor in range(8, 15))


# ruff's selector of every rule (the least specific of all).
ALL = "ALL"


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("RNF",)
    extend_select: tuple[str, ...] = ()  # added to ``select``
    ignore: tuple[str, ...] = ()
    # The rules whose fixes may be applied (ruff's ``fixable``/``unfixable``):
    # an unfixable rule's findings are reported without their fix.
    fixable: tuple[str, ...] = (ALL,)
    unfixable: tuple[str, ...] = ()
    # Say which of rnnfix's suppression comments silence nothing (ruff's RUF100).
    report_unused_suppressions: bool = False
    unsafe_fixes: bool = False
    # RNF001: also put train() at the head of training loops/functions whose
    # models' mode is unknown (unsafe fixes).
    strict: bool = False
    # RNF004: fix backward-in-eval through RNNs (opt-in) and how.
    rnn_only: bool = False
    rnn_only_strategy: RnnOnlyStrategy = "rnn-train"
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = field(default_factory=tuple)
    # Test code (test files found in folders, unittest TestCase classes) is
    # left alone unless this is set.
    include_tests: bool = False
    # Apply exclusions to files named on the command line too (pre-commit).
    force_exclude: bool = False
    # See only the files of the run: no imported file outside it is read
    # (``--isolated``; a CLI flag, not a ``[tool.rnnfix]`` option).
    isolated: bool = False
    # Larger files are reported, not read: generated code and data, not
    # training scripts (``max-file-size`` in bytes).
    max_file_size: int = 5 * 1024 * 1024
    # ``per-file-ignores``: (glob, codes) pairs, globs relative to ``root``
    # (the folder of the pyproject.toml they come from); ``rnnfix.config.perfile``.
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    root: str | None = None
    # ``target-version`` (ruff's): the oldest Python the code must run on,
    # "py38" .. "py314". Syntax newer than it is an error; without it, syntax
    # newer than the running Python only leaves the file unchecked.
    target_version: str | None = None

    @property
    def target(self) -> tuple[int, int] | None:
        """``target_version`` as (3, minor)."""
        if self.target_version is None:
            return None
        return (3, int(self.target_version[3:]))

    def for_path(self, path: str) -> Settings:
        """The settings for one file: ``per-file-ignores`` added to ``ignore``."""
        if not self.per_file_ignores:
            return self
        from rnnfix.config.perfile import ignored_codes

        codes = ignored_codes(path, self.root, self.per_file_ignores)
        return dataclasses.replace(self, ignore=self.ignore + codes) if codes else self

    def enabled(self, code: str) -> bool:
        """Selection by code prefix; the longest matching prefix wins, as in
        ruff (``ALL`` is the shortest of all), and an ignore wins a tie."""
        return _wins(code, self.select + self.extend_select, self.ignore)

    def fix_enabled(self, code: str) -> bool:
        """``fixable`` over ``unfixable``, by the same rule as ``enabled``."""
        return _wins(code, self.fixable, self.unfixable)


def _specificity(code: str, selectors: tuple[str, ...]) -> int:
    return max(
        (0 if p == ALL else len(p) for p in selectors if p == ALL or code.startswith(p)),
        default=-1,
    )


def _wins(code: str, chosen: tuple[str, ...], refused: tuple[str, ...]) -> bool:
    sel = _specificity(code, chosen)
    return sel >= 0 and sel > _specificity(code, refused)
