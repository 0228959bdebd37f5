"""One edited file in a warm tree, per file and per version of rnnfix.

    python bench/bench_edit.py TREE FILE [FILE...] [--runs 5] [--versions main=DIR,edit=.]

For each version (a folder holding the ``rnnfix`` package, put first on
``PYTHONPATH``), the tree is copied once and its cache primed; then, run by
run and version by version in turn (so that machine noise hits all alike),
a comment is appended to FILE and ``rnnfix apply --check -q`` runs on the
copy. Prints the median wall and CPU (user+system, ``os.wait4``) seconds per
file and version. FILE is relative to TREE. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd: list[str], cwd: Path, pythonpath: Path) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--versions", default="this=.", help="name=DIR,name=DIR")
    args = parser.parse_args()
    versions = {
        name: Path(folder).resolve()
        for name, folder in (v.split("=", 1) for v in args.versions.split(","))
    }
    cmd = [sys.executable, "-P", "-m", "rnnfix", "apply", "--check", "-q"]
    with tempfile.TemporaryDirectory(prefix="rnnfix-edit-") as tmp:
        trees = {}
        for name, folder in versions.items():
            compileall.compile_dir(folder / "rnnfix", quiet=1)  # as an install would
            tree = Path(tmp) / name / args.tree.resolve().name
            shutil.copytree(args.tree, tree, symlinks=True)
            run([*cmd, tree.name], tree.parent, folder)  # prime the cache
            trees[name] = tree
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for i in range(args.runs):
            for file in args.files:
                for name, folder in versions.items():
                    tree = trees[name]
                    with (tree / file).open("a", encoding="utf-8") as f:
                        f.write(f"# bench edit {i}\n")
                    times.setdefault((file, name), []).append(
                        run([*cmd, tree.name], tree.parent, folder)
                    )
    print(f"{args.tree}: one edited file, warm cache, median of {args.runs} runs (wall / CPU s)")
    for file in args.files:
        cells = []
        for name in versions:
            got = times[(file, name)]
            wall = statistics.median(w for w, _ in got)
            cpu = statistics.median(c for _, c in got)
            cells.append(f"{name} {wall:.2f} / {cpu:.2f}")
        print(f"  {file}: " + " | ".join(cells))


if __name__ == "__main__":
    main()
