"""rnnfix beside its peers on one folder: one table, whole-process figures.

    python bench/bench_tree.py PATH [--runs 5] [--scale 1,2,4] [--jobs 0]
    python bench/bench_tree.py --synthetic 2000 [--runs 5]   # no network needed
    python bench/bench_tree.py PATH --rows "rnnfix cold,ruff,ast.parse"   # some rows only

Rows (each a separate process, measured with ``os.wait4``: wall time, CPU time
user+system, peak resident memory; median of ``--runs`` runs; commands take
turns run by run so that machine noise hits all of them alike):

- ``read``:         read every file (the floor for anything that looks at them)
- ``ast.parse``:    read and ``ast.parse`` every ``.py`` file in one process
- ``rnnfix cold``:  ``rnnfix apply --check --no-cache``
- ``rnnfix warm``:  ``rnnfix apply --check`` with a primed ``.rnnfix_cache/``
- ``rnnfix edit1``: the same after one file changed (a comment appended to the
                    largest file with a finding, else the largest file, before each run)
- ``rnnfix strict``: ``rnnfix apply --check --no-cache --strict --unsafe-fixes``
- ``diff cold``:    ``rnnfix apply --diff --no-cache`` (a diff needs every fixed
                    file's new text, which the cache never holds)
- ``diff warm``:    ``rnnfix apply --diff`` with a primed cache
- ``ruff``:         ``ruff check --no-cache`` with ruff's default rules (if installed)
- ``libcst noop``:  ``python -m libcst.tool codemod noop.NOOPCommand`` (if it runs)

Ratios are to ruff's wall time; the strict row also prints its CPU time over
the cold row's. ``--scale 1,2,4`` also runs ``rnnfix cold`` on
1x, 2x and 4x copies of the tree (cost should grow linearly). Nothing is
asserted; the tree is copied to a temporary folder first, so the cache and any
libcst run never touch the original. Prints figures only; read them as ratios
within one run (these machines are shared).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import synthetic_tree  # noqa: E402

_READ = """
import os, sys
n = 0
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        if f.endswith(('.py', '.ipynb')):
            with open(os.path.join(d, f), 'rb') as h:
                n += len(h.read())
"""
_PARSE = """
import ast, os, sys, warnings
warnings.simplefilter('ignore')
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        if f.endswith('.py'):
            with open(os.path.join(d, f), 'rb') as h:
                try:
                    ast.parse(h.read())
                except (SyntaxError, ValueError):
                    pass
"""


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float


def measure(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> Sample:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = 0  # reaped by wait4
    # ru_maxrss is in KiB on Linux. wait4 reports the largest of the child
    # and the children it waited for (a worker pool's workers): the peak of
    # the largest single process, not their sum. CPU time includes workers.
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def commands(tree: Path, jobs: int) -> dict[str, list[str]]:
    py = sys.executable
    rnnfix = [py, "-m", "rnnfix", "apply", "--check", "-q", "--jobs", str(jobs)]
    diff = [py, "-m", "rnnfix", "apply", "--diff", "-q", "--jobs", str(jobs)]
    out = {
        "read": [py, "-c", _READ, str(tree)],
        "ast.parse": [py, "-c", _PARSE, str(tree)],
        "rnnfix cold": [*rnnfix, "--no-cache", str(tree)],
        "rnnfix warm": [*rnnfix, str(tree)],
        "rnnfix edit1": [*rnnfix, str(tree)],
        "rnnfix strict": [*rnnfix, "--no-cache", "--strict", "--unsafe-fixes", str(tree)],
        "diff cold": [*diff, "--no-cache", str(tree)],
        "diff warm": [*diff, str(tree)],
    }
    ruff = shutil.which("ruff")
    if ruff:
        out["ruff"] = [ruff, "check", "--no-cache", "--quiet", "--exit-zero", str(tree)]
    if _libcst_runs(tree):
        # `--jobs=N` with "=": libcst's parser takes `-j 1` as the command.
        out["libcst noop"] = [
            py, "-m", "libcst.tool", "codemod", "--jobs=1", "noop.NOOPCommand", str(tree),
        ]  # fmt: skip
    return out


def _libcst_runs(tree: Path) -> bool:
    probe = subprocess.run(
        [sys.executable, "-m", "libcst.tool", "codemod", "--help"],
        cwd=tree.parent,
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


def table(tree: Path, runs: int, jobs: int, rows: list[str] | None = None) -> None:
    cmds = commands(tree, jobs)
    if rows:
        cmds = {name: cmd for name, cmd in cmds.items() if name in rows}
    # Run from beside the tree, never inside it: `python -m` puts the current
    # folder first on sys.path, and a tree's own `types.py` (torch has one)
    # would shadow the standard library.
    cwd = tree.parent
    primer = cmds.get("rnnfix warm") or cmds.get("rnnfix edit1") or cmds.get("diff warm")
    if primer is not None:  # prime the cache
        subprocess.run(primer, cwd=cwd, capture_output=True, check=False)
    samples: dict[str, list[Sample]] = {name: [] for name in cmds}
    edited = _file_to_edit(tree) if "rnnfix edit1" in cmds else None
    for run in range(runs):
        for name, cmd in cmds.items():
            if name == "rnnfix edit1" and edited is not None:
                with edited.open("a", encoding="utf-8") as f:
                    f.write(f"# bench edit {run}\n")
            samples[name].append(measure(cmd, cwd))
    base = statistics.median(s.wall for s in samples["ruff"]) if "ruff" in samples else None
    files = sum(1 for _ in tree.rglob("*.py"))
    print(f"{tree}: {files} .py files, median of {runs} run(s), --jobs {jobs}")
    print(f"{'':<14}{'wall s':>9}{'cpu s':>9}{'peak MB':>9}{'x ruff':>8}")
    for name, got in samples.items():
        wall = statistics.median(s.wall for s in got)
        cpu = statistics.median(s.cpu for s in got)
        rss = max(s.rss_mb for s in got)
        ratio = f"{wall / base:8.2f}" if base else f"{'-':>8}"
        print(f"{name:<14}{wall:9.2f}{cpu:9.2f}{rss:9.0f}{ratio}")
    if "rnnfix strict" in samples and "rnnfix cold" in samples:
        cold = statistics.median(s.cpu for s in samples["rnnfix cold"])
        strict = statistics.median(s.cpu for s in samples["rnnfix strict"])
        print(f"strict CPU / cold CPU: {strict / cold:.2f}")
    if edited is not None:
        print(f"rnnfix edit1 edits {edited.relative_to(tree)}")


def _file_to_edit(tree: Path) -> Path | None:
    """The file whose change costs a warm run most: the largest with a
    finding (its re-check is a whole analysis), else the largest file."""
    files = sorted(tree.rglob("*.py"), key=lambda p: p.stat().st_size, reverse=True)
    if not files:
        return None
    cmd = [sys.executable, "-m", "rnnfix", "apply", "--check", "-q", "--no-cache", str(tree)]
    out = subprocess.run(cmd, cwd=tree.parent, capture_output=True, text=True, check=False).stdout
    reported = {line.split(":", 1)[0] for line in out.splitlines() if ": RNF" in line}
    with_finding = [p for p in files if any(str(p).endswith(r) for r in reported)]
    return (with_finding or files)[0]


def scaling(tree: Path, factors: list[int], runs: int, jobs: int, work: Path) -> None:
    print(f"\nscaling of rnnfix cold (--jobs {jobs}):")
    print(f"{'copies':<8}{'files':>7}{'wall s':>9}{'cpu s':>9}{'s / 1k files':>14}{'cpu / 1x':>10}")
    first: float | None = None
    for k in factors:
        dest = work / f"x{k}"
        for i in range(k):
            # Each copy keeps the tree's own name: its imports of itself
            # (``import torch.nn`` in torch) must resolve as in the original.
            shutil.copytree(tree, dest / f"copy{i}" / tree.name, dirs_exist_ok=True)
        files = sum(1 for _ in dest.rglob("*.py"))
        cmd = [sys.executable, "-m", "rnnfix", "apply", "--check", "-q", "--no-cache"]
        got = [measure([*cmd, "--jobs", str(jobs), str(dest)], work) for _ in range(runs)]
        wall = statistics.median(s.wall for s in got)
        # CPU seconds: what to read on shared cores, where wall follows the load.
        cpu = statistics.median(s.cpu for s in got)
        first = cpu if first is None else first
        per = f"{1000 * wall / max(files, 1):14.2f}"
        print(f"{k:<8}{files:>7}{wall:9.2f}{cpu:9.2f}{per}{cpu / first:10.2f}")


def _compile_rnnfix() -> None:
    """Byte-compile rnnfix as ``pip install`` does: an editable install under
    ``PYTHONDONTWRITEBYTECODE=1`` (this machine) would otherwise compile every
    module from source in every run, a tenth of a second that no installed
    copy pays."""
    import compileall

    import rnnfix

    compileall.compile_dir(Path(rnnfix.__file__).parent, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path)
    parser.add_argument("--synthetic", type=int, metavar="N", help="generate N files instead")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--scale", default="", help="e.g. 1,2,4")
    parser.add_argument(
        "--rows", default="", help="only these rows, e.g. 'rnnfix cold,ruff' (libcst is slow)"
    )
    args = parser.parse_args()
    _compile_rnnfix()
    with tempfile.TemporaryDirectory(prefix="rnnfix-bench-") as tmp:
        # The copy keeps the folder's name: a package's imports of itself
        # (``import torch.nn`` inside torch) resolve to the run's files only
        # then, as they do when rnnfix runs on the original (a copy named
        # "tree" measured a run with no import resolving).
        name = args.path.resolve().name if args.path and not args.synthetic else "tree"
        tree = Path(tmp) / name
        if args.synthetic:
            synthetic_tree(tree, args.synthetic)
        elif args.path:
            shutil.copytree(args.path, tree, symlinks=True)
        else:
            parser.error("give a PATH or --synthetic N")
        rows = [r.strip() for r in args.rows.split(",") if r.strip()]
        table(tree, args.runs, args.jobs, rows or None)
        if args.scale:
            factors = [int(k) for k in args.scale.split(",")]
            scaling(tree, factors, max(1, args.runs // 2), args.jobs, Path(tmp))


if __name__ == "__main__":
    main()
