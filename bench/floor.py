"""The floors under a cold ``rnnfix apply --check``, beside ruff, in one run.

    python bench/floor.py PATH [--runs 3] [--jobs 1,2]

What a cold run cannot avoid, measured in this process (CPU seconds, median
of ``--runs``): reading every file; the file gate (``filegate.may_find``,
with the run's project index, as ``process_text`` asks it); ``ast.parse`` of
the files the gate passes (the files rnnfix must parse by the rule of issue
28: those where a rule may report); ``ast.parse`` of every file. Beside
them, ruff's whole run (``ruff check --no-cache``, default rules, in a child
process: its CPU time, all threads). Prints figures and ratios only; nothing
is asserted. The gap between "parse of the gated files" and ruff's run is
what no Python analysis on ``ast`` can close. ``--jobs 1,2`` adds cold
``rnnfix apply --check --no-cache`` runs with those worker counts (child
processes, CPU of all of them, and wall), so that the ratio to the floor and
the ``-j`` speedup come from the same run; ``--against DIR`` times another
checkout's rnnfix the same way, in turns with this one's. The floor ("parse gated") is what
issue 37's targets are stated against.
"""

from __future__ import annotations

import argparse
import ast
import os
import resource
import shutil
import statistics
import subprocess
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
    # ``--isolated``: ruff's default rules, whatever configuration the
    # current folder has (run from a checkout of rnnfix, ruff read rnnfix's
    # own pyproject.toml); its report goes nowhere, as in bench_tree.py.
    cmd = [ruff, "check", "--no-cache", "--isolated", "--quiet", "--exit-zero", str(root)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def _rnnfix(root: Path, jobs: int, code: Path) -> tuple[float, float, float]:
    """A cold ``rnnfix apply --check`` of ``root`` in a child process (wall,
    CPU of it and its workers, the peak resident memory in MB of the child
    itself: with one worker, of the whole run), run from beside the tree as
    bench_tree.py does (a tree's own ``types.py`` must not shadow the
    standard library)."""
    cmd = [sys.executable, "-m", "rnnfix", "apply", "--check", "--no-cache", "-q"]
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*cmd, "--jobs", str(jobs), str(root.resolve())],
        cwd=root.resolve().parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4
    peak = usage.ru_maxrss / 1024  # KiB on Linux
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--jobs",
        default="",
        help="also time cold rnnfix runs with these worker counts, e.g. 1,2 (CPU and wall)",
    )
    parser.add_argument(
        "--against",
        type=Path,
        help="also time the cold runs of another rnnfix checkout (the folder holding rnnfix/)",
    )
    args = parser.parse_args()
    jobs = [int(j) for j in args.jobs.split(",") if j.strip()]
    codes = {"rnnfix": Path(__file__).resolve().parents[1]}
    if args.against is not None:
        codes["against"] = args.against.resolve()
    if jobs:
        import compileall

        # As ``pip install`` does (see bench_tree.py): no run compiles rnnfix.
        for code in codes.values():
            compileall.compile_dir(code / "rnnfix", quiet=1)
    files = _files(args.path)
    rows: dict[str, list[float]] = {
        "read": [], "gate": [], "parse gated": [], "parse all": [], "ruff cpu": [], "ruff wall": [],
    }  # fmt: skip
    for label in codes:
        for j in jobs:
            rows[f"{label} -j{j} cpu"] = []
            rows[f"{label} -j{j} wall"] = []
            rows[f"{label} -j{j} peak MB"] = []
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
        for label, code in codes.items():  # in turns, so that the load hits all alike
            for j in jobs:
                wall, cpu, peak = _rnnfix(args.path, j, code)
                rows[f"{label} -j{j} wall"].append(wall)
                rows[f"{label} -j{j} cpu"].append(cpu)
                rows[f"{label} -j{j} peak MB"].append(peak)
    print(f"{args.path}: {len(files)} .py files, {len(gated)} pass the gate; median of {args.runs}")
    print(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    floor = statistics.median(rows["parse gated"])
    ruff_cpu = statistics.median(rows["ruff cpu"]) if rows["ruff cpu"] else None
    for name, got in rows.items():
        if not got:
            continue
        value = statistics.median(got)
        ratios = ""
        if name.endswith("peak MB"):
            print(f"{name:<17}{value:8.0f} MB")
            continue
        if not name.endswith("wall"):
            ratios = f"{value / floor:7.2f}x floor"
            if ruff_cpu:
                ratios += f"  {value / ruff_cpu:7.2f}x ruff CPU"
        print(f"{name:<17}{value:8.2f} s  {ratios}")
    for label in codes:
        if len(jobs) > 1:
            first = rows[f"{label} -j{jobs[0]} wall"]
            for j in jobs[1:]:
                other = rows[f"{label} -j{j} wall"]
                # Each run's own pair, then their median: the load changes between runs.
                ratio = statistics.median(a / b for a, b in zip(first, other, strict=True))
                said = f"{label}: wall -j{jobs[0]} / -j{j}: {ratio:.2f}"
                print(f"{said} (median of the runs' ratios)")


if __name__ == "__main__":
    main()
