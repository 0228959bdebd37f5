"""The ``# rnnfix-args:`` first line of a fixture, turned into Settings; the
fixture files the gate tests check against their analyses."""

from __future__ import annotations

import dataclasses
import functools
import shlex
from pathlib import Path
from typing import Any

from rnnfix.config.settings import Settings
from rnnfix.run.engine import SourceResult, fix_source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def single_file_fixtures() -> list[Path]:
    """Every single-file fixture: the rules', the examples, the verify scripts."""
    return sorted(
        p
        for pattern in ("RNF*/*.py", "examples/**/*.py", "verify/**/*.py")
        for p in FIXTURES.glob(pattern)
        if "snapshots" not in p.parts and "expected" not in p.parts
    )


def project_fixtures() -> list[Path]:
    """Every multi-file fixture folder of ``fixtures/project``."""
    return sorted(
        p for p in (FIXTURES / "project").iterdir() if p.is_dir() and any(p.rglob("*.py"))
    )


_FLAGS = {
    "--unsafe-fixes": ("unsafe_fixes", True),
    "--strict": ("strict", True),
    "--rnn-only": ("rnn_only", True),
    "--include-tests": ("include_tests", True),
}
_VALUED = {"--rnn-only-strategy": "rnn_only_strategy", "--select": "select", "--ignore": "ignore"}


def settings_for(source: str) -> Settings:
    first = source.lstrip("\ufeff").split("\n", 1)[0]
    if not first.startswith("# rnnfix-args:"):
        return Settings()
    words = shlex.split(first.split(":", 1)[1])
    changes: dict[str, Any] = {}
    i = 0
    while i < len(words):
        w = words[i]
        if w in _FLAGS:
            key, value = _FLAGS[w]
            changes[key] = value
        elif w in _VALUED:
            i += 1
            value = words[i]
            key = _VALUED[w]
            changes[key] = tuple(value.split(",")) if key in ("select", "ignore") else value
        else:
            raise ValueError(f"unknown fixture flag {w!r}")
        i += 1
    return dataclasses.replace(Settings(), **changes)


@functools.cache
def fixed(path: Path) -> SourceResult:
    """``fix_source`` of a fixture with its settings, once per test process:
    the snapshot, review and idempotence tests all start from it (do not
    modify the result)."""
    source = path.read_bytes().decode("utf-8")
    return fix_source(source, settings_for(source), path.name)
