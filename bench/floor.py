"""The floors under a cold ``rnnfix apply --check``, beside ruff, in one run.

    python bench/floor.py PATH [--runs 3]

What a cold run cannot avoid, measured in this process (CPU seconds, median
of ``--runs``): reading every file; the file gate (``filegate.may_find``,
with the run's project index, as ``process_text`` asks it); ``ast.parse`` of
the files the gate passes (the files rnnfix must parse by the rule of issue
28: those where a rule may report); ``ast.parse`` of every file. Beside
them, ruff's whole run (``ruff check --no-cache``, default rules, in a child
process: its CPU time, all threads). Prints figures and ratios only; nothing
is asserted. The gap between "parse of the gated files" and ruff's run is
what no Python analysis on ``ast`` can close.
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import shutil
import statistics
import sys
import time
import warnings
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rnnfix.analysis.project.index import ProjectIndex  # noqa: E402
from rnnfix.config.settings import Settings  # noqa: E402
from rnnfix.run.filegate import may_find  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def _texts(files: list[Path]) -> dict[Path, str]:
    out = {}
    for p in files:
        try:
            out[p] = p.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return out


def _parse(texts: dict[Path, str], only: set[Path] | None = None) -> int:
    n = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p, text in texts.items():
            if only is not None and p not in only:
                continue
            try:
                ast.parse(text)
            except (SyntaxError, ValueError, RecursionError):
                pass
            n += 1
    return n


def _gated(texts: dict[Path, str], files: list[Path]) -> set[Path]:
    project = ProjectIndex.build(files)
    settings = Settings()
    return {p for p, t in texts.items() if may_find(t, settings.for_path(str(p)), str(p), project)}


def _timed(fn):  # type: ignore[no-untyped-def]
    start = _cpu()
    out = fn()
    return _cpu() - start, out


def _ruff(root: Path) -> tuple[float, float] | None:
    ruff = shutil.which("ruff")
    if ruff is None:
        return None
    start = time.perf_counter()
    pid = os.spawnv(
        os.P_NOWAIT, ruff, [ruff, "check", "--no-cache", "--quiet", "--exit-zero", str(root)]
    )
    _, _, usage = os.wait4(pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    files = _files(args.path)
    rows: dict[str, list[float]] = {
        "read": [], "gate": [], "parse gated": [], "parse all": [], "ruff cpu": [], "ruff wall": [],
    }  # fmt: skip
    gated: set[Path] = set()
    for _ in range(args.runs):
        t, texts = _timed(partial(_texts, files))
        rows["read"].append(t)
        t, gated = _timed(partial(_gated, texts, files))
        rows["gate"].append(t)
        rows["parse gated"].append(_timed(partial(_parse, texts, gated))[0])
        rows["parse all"].append(_timed(partial(_parse, texts))[0])
        found = _ruff(args.path)
        if found is not None:
            rows["ruff wall"].append(found[0])
            rows["ruff cpu"].append(found[1])
    print(f"{args.path}: {len(files)} .py files, {len(gated)} pass the gate; median of {args.runs}")
    ruff_cpu = statistics.median(rows["ruff cpu"]) if rows["ruff cpu"] else None
    for name, got in rows.items():
        if not got:
            continue
        value = statistics.median(got)
        ratio = f"{value / ruff_cpu:7.2f}x ruff CPU" if ruff_cpu and name != "ruff wall" else ""
        print(f"{name:<13}{value:8.2f} s  {ratio}")


if __name__ == "__main__":
    main()
