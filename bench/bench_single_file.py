"""How long does `rnnfix apply train.py` take on a small package, as a whole process?

    python bench/bench_single_file.py [--runs 7]

Builds a small package in a temporary folder (``pyproject.toml``, a
``train.py`` that imports a few files of its package: models with an RNN, a
helper that evaluates, a factory that returns a DataParallel wrapper, data
loading) and times, as separate processes (what a pre-commit hook or an
editor pays):

- ``rnnfix --help``;
- ``rnnfix apply --check train.py`` cold (``--no-cache``) and warm (the
  result cache primed by a previous run);
- ``rnnfix apply train.py`` warm, on a copy whose bug is already fixed;
- ``rnnfix apply --check train.py`` with ``train.py`` edited since the last
  run (a pre-commit hook's case: its result is stale, its imports' are not);
- ``python -c pass`` as the floor.

Prints the median and the minimum wall and CPU time (user + system) of
``--runs`` runs of each; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES = {
    "pyproject.toml": '[project]\nname = "smallpkg"\n',
    "smallpkg/__init__.py": "",
    "smallpkg/models.py": """
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self, vocab, hidden=64, tags=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden, batch_first=True)
        self.drop = nn.Dropout(0.2)
        self.out = nn.Linear(hidden, tags)

    def forward(self, x):
        h, _ = self.rnn(self.embed(x))
        return self.out(self.drop(h))
""",
    "smallpkg/utils.py": """
import torch


def to_device(module, device):
    return module.to(device)


def evaluate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(-1) == y).sum().item()
    return correct
""",
    "smallpkg/factory.py": """
import torch.nn as nn

from smallpkg.models import Tagger


def build_parallel(vocab):
    return nn.DataParallel(Tagger(vocab))
""",
    "smallpkg/data.py": """
import torch
from torch.utils.data import DataLoader, TensorDataset


def loaders(n=64):
    x = torch.randint(0, 100, (n, 12))
    y = torch.randint(0, 8, (n, 12))
    ds = TensorDataset(x, y)
    return DataLoader(ds, batch_size=8), DataLoader(ds, batch_size=8)
""",
    "smallpkg/train.py": """
import torch
import torch.nn.functional as F

from smallpkg.data import loaders
from smallpkg.factory import build_parallel
from smallpkg.utils import evaluate, to_device


def main():
    model = to_device(build_parallel(100), "cuda")
    optimizer = torch.optim.Adam(model.parameters())
    train_loader, val_loader = loaders()
    for epoch in range(3):
        model.module.train()
        for x, y in train_loader:
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(evaluate(model, val_loader))


if __name__ == "__main__":
    main()
""",
}


def build(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip("\n"))
    return root / "smallpkg" / "train.py"


# Bytecode as users have it: an installed package has its ``.pyc`` files
# (``PYTHONDONTWRITEBYTECODE`` would compile every module on every run).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(
    cmd: list[str], cwd: Path, runs: int, before: list[str] | None = None
) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each run; CPU (user + system of the child) is
    what a busy shared machine disturbs least."""
    out = []
    subprocess.run(cmd, cwd=cwd, capture_output=True, check=False, env=ENV)  # writes the .pyc
    for _ in range(runs):
        if before is not None:
            subprocess.run(before, cwd=cwd, capture_output=True, check=False)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, capture_output=True, check=False, env=ENV)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime
        out.append((wall, cpu))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--rnnfix",
        help="the command to time (default: the rnnfix console script), e.g. "
        "'python -m rnnfix' with PYTHONPATH set to another version's checkout",
    )
    args = parser.parse_args()
    rnnfix = [sys.executable, "-m", "rnnfix"]
    exe = shutil.which("rnnfix")
    if args.rnnfix:
        rnnfix = args.rnnfix.split()
    elif exe is not None:
        rnnfix = [exe]  # the console script, as users run it
    env_note = f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {' '.join(rnnfix)}"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        train = build(root)
        rel = str(train.relative_to(root))
        fixed_root = root / "fixed"
        fixed_root.mkdir()
        fixed = build(fixed_root)
        subprocess.run([*rnnfix, "apply", str(fixed)], capture_output=True, check=False, env=ENV)
        rows = {
            "python -c pass": timed([sys.executable, "-c", "pass"], root, args.runs),
            "rnnfix --help": timed([*rnnfix, "--help"], root, args.runs),
            "apply --check train.py, cold (--no-cache)": timed(
                [*rnnfix, "apply", "--check", "--no-cache", rel], root, args.runs
            ),
            "apply --check train.py, warm": timed(
                [*rnnfix, "apply", "--check", rel], root, args.runs
            ),
            "apply train.py, warm, nothing left to fix": timed(
                [*rnnfix, "apply", str(fixed)], fixed_root, args.runs
            ),
        }
        # What a pre-commit hook sees: the file given changed since the last
        # run (its own result is stale), the files it imports did not.
        rows["apply --check train.py, warm, train.py just edited"] = timed(
            [*rnnfix, "apply", "--check", rel],
            root,
            args.runs,
            before=["sh", "-c", f"echo '# edit' >> {rel}"],
        )
        shutil.rmtree(root / ".rnnfix_cache", ignore_errors=True)
        rows["apply --check train.py, first run (writes the cache)"] = timed(
            [*rnnfix, "apply", "--check", rel],
            root,
            args.runs,
            before=["rm", "-rf", str(root / ".rnnfix_cache")],
        )
    print(f"single-file run on a {len(FILES)}-file package ({env_note}), {args.runs} runs")
    width = max(map(len, rows))
    print(f"  {'':<{width}}  wall: median    min   CPU: median    min")
    for name, times in rows.items():
        wall = [w for w, _ in times]
        cpu = [c for _, c in times]
        med_wall, med_cpu = statistics.median(wall) * 1000, statistics.median(cpu) * 1000
        print(
            f"  {name:<{width}}  {med_wall:9.0f} ms {min(wall) * 1000:4.0f} ms"
            f"  {med_cpu:9.0f} ms {min(cpu) * 1000:4.0f} ms"
        )


if __name__ == "__main__":
    main()
