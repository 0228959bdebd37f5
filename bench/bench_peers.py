"""rnnfix beside the peers that do its job, on one tree: one table.

    python bench/bench_peers.py PATH --venvs DIR [--runs 3] [--jobs 0] [--rows "Fixit rule"]

Each peer is installed in a virtual environment of its own under ``DIR``
(never into rnnfix's):

    python -m venv DIR/torchfix && DIR/torchfix/bin/pip install torchfix
    python -m venv DIR/fixit && DIR/fixit/bin/pip install fixit
    python -m venv DIR/pylint && DIR/pylint/bin/pip install pylint

Rows (whole processes, measured as in ``bench_tree.py``: wall, CPU of the
process and its workers, peak memory; median of ``--runs``, the commands
taking turns run by run):

- ``rnnfix cold``:   ``rnnfix apply --check --no-cache``
- ``TorchFix``:      ``torchfix PATH`` (its default rules; LibCST)
- ``Fixit rule``:    ``fixit --rules fixit_mode_rule lint PATH``, Fixit 2 running
                     one mode-toggling rule (``bench/peers/fixit_mode_rule.py``)
- ``pylint plugin``: pylint running only a mode-toggling checker
                     (``bench/peers/pylint_mode_checker.py``; dslinter, the
                     data-science pylint plugin, does not install on Python 3.11)
- ``ruff``:          ``ruff check --no-cache`` (the far reference; not a peer)

``--jobs`` goes to rnnfix, TorchFix and pylint (0: rnnfix's and pylint's own
choice, all cores for TorchFix); Fixit always uses every core. The peers'
rules are far smaller than rnnfix's: the figures are the cost of each
engine walking the tree, the floor under any rule written for it. A row
whose tool is missing is left out. Prints figures only, asserts nothing;
read the ratios (these machines are shared).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tree import Sample, _compile_rnnfix, measure  # noqa: E402

_PEERS = Path(__file__).resolve().parent / "peers"


def commands(tree: Path, venvs: Path | None, jobs: int) -> dict[str, list[str]]:
    py = sys.executable
    out = {
        "rnnfix cold": [py, "-m", "rnnfix", "apply", "--check", "--no-cache", "-q",
                        "--jobs", str(jobs), str(tree)],
    }  # fmt: skip
    if venvs is not None:
        torchfix = venvs / "torchfix" / "bin" / "torchfix"
        if torchfix.exists():
            out["TorchFix"] = [str(torchfix), *(["-j", str(jobs)] if jobs else []), str(tree)]
        fixit = venvs / "fixit" / "bin" / "fixit"
        if fixit.exists():
            out["Fixit rule"] = [str(fixit), "--rules", "fixit_mode_rule", "lint", str(tree)]
        pylint = venvs / "pylint" / "bin" / "pylint"
        if pylint.exists():
            out["pylint plugin"] = [
                str(pylint), "--load-plugins=pylint_mode_checker", "--disable=all",
                "--enable=eval-without-train", "--recursive=y", "--score=n",
                f"--jobs={jobs}", str(tree),
            ]  # fmt: skip
    ruff = shutil.which("ruff")
    if ruff:
        out["ruff"] = [ruff, "check", "--no-cache", "--isolated", "--quiet", "--exit-zero"]
        out["ruff"].append(str(tree))
    return out


def table(tree: Path, venvs: Path | None, runs: int, jobs: int, rows: list[str]) -> None:
    cmds = commands(tree, venvs, jobs)
    if rows:  # rnnfix's row always: the ratios are to it
        cmds = {n: c for n, c in cmds.items() if n in rows or n == "rnnfix cold"}
    # The peers' plugins are imported by module name; rnnfix from this checkout.
    paths = [str(_PEERS), str(Path(__file__).resolve().parents[1])]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    samples: dict[str, list[Sample]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            samples[name].append(measure(cmd, tree.parent, env))
    files = sum(1 for _ in tree.rglob("*.py"))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{tree}: {files} .py files, median of {runs} run(s), --jobs {jobs}, load {load}")
    print(f"{'':<15}{'wall s':>9}{'cpu s':>9}{'peak MB':>9}{'cpu/rnnfix':>12}{'wall/rnnfix':>13}")
    base_wall = statistics.median(s.wall for s in samples["rnnfix cold"])
    base_cpu = statistics.median(s.cpu for s in samples["rnnfix cold"])
    for name, got in samples.items():
        wall = statistics.median(s.wall for s in got)
        cpu = statistics.median(s.cpu for s in got)
        rss = max(s.rss_mb for s in got)
        ratios = f"{cpu / base_cpu:12.2f}{wall / base_wall:13.2f}"
        print(f"{name:<15}{wall:9.2f}{cpu:9.2f}{rss:9.0f}{ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--venvs", type=Path, help="the folder of the peers' virtual environments")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument(
        "--rows", default="", help="only these rows besides rnnfix's, e.g. 'Fixit rule,ruff'"
    )
    args = parser.parse_args()
    _compile_rnnfix()
    if args.venvs is None:
        print("no --venvs: only rnnfix and ruff (see this script's help for the peers)")
    with tempfile.TemporaryDirectory(prefix="rnnfix-peers-") as tmp:
        # A copy, named as the original (see bench_tree.py), beside nothing
        # that configures a tool (rnnfix's own pyproject.toml configures ruff).
        tree = Path(tmp) / args.path.resolve().name
        shutil.copytree(args.path, tree, symlinks=True)
        rows = [r.strip() for r in args.rows.split(",") if r.strip()]
        table(tree, args.venvs, args.runs, args.jobs, rows)


if __name__ == "__main__":
    main()
