"""How fast is `apply --check` on a tree, compared with just ast-parsing it?

    python bench/bench_apply.py [PATH]     # default: a synthetic tree of 1,000 files

Prints wall times and the ratio; asserts nothing. "each file on its own" is
``process_file`` per file without the project index (what a run did before
calls into other files were followed); "apply --check" is ``process_files``,
which builds the index first.
"""

from __future__ import annotations

import ast
import sys
import tempfile
import time
from pathlib import Path

from rnnfix.analysis.project.index import ProjectIndex
from rnnfix.config.settings import Settings
from rnnfix.run.process import process_file, process_files
from rnnfix.source.files import discover, read_source

CLEAN = """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x
"""
BUGGY = """
import torch
model = torch.nn.DataParallel(torch.nn.LSTM(4, 4))
for epoch in range(3):
    model.module.train()
    for x in loader:
        model(x)[0].sum().backward()
    model.eval()
    with torch.no_grad():
        for x in val_loader:
            model(x)
"""


def synthetic_tree(root: Path, n: int = 1000, buggy_every: int = 50) -> None:
    for i in range(n):
        body = BUGGY if i % buggy_every == 0 else CLEAN * 5
        (root / f"m{i:04}.py").write_text(body)


def main() -> None:
    if len(sys.argv) > 1:
        root = Path(sys.argv[1])
    else:
        root = Path(tempfile.mkdtemp()) / "tree"
        root.mkdir()
        synthetic_tree(root)
    files = list(discover([root]))
    t0 = time.perf_counter()
    for f in files:
        try:
            ast.parse(read_source(f)[1].text)
        except Exception:  # noqa: BLE001 - benchmark: count what parses
            pass
    t_ast = time.perf_counter() - t0
    t0 = time.perf_counter()
    for f in files:
        process_file(f, Settings(), write=False)
    t_alone = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = process_files(files, Settings(), write=False, jobs=1)
    t_check = time.perf_counter() - t0
    t0 = time.perf_counter()
    process_files(files, Settings(), write=False, jobs=0)
    t_jobs = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = ProjectIndex.build(files)
    t_index = time.perf_counter() - t0
    summarised = sum(s is not None for s in index.files.values())
    changed = sum(r.outcome.value == "changed" for r in results)
    print(f"files: {len(files)}  would change: {changed}  summarised: {summarised}")
    print(f"ast.parse only:           {t_ast:.2f} s")
    print(f"project index alone:      {t_index:.2f} s  ({t_index / t_ast:.1f}x ast.parse)")
    print(f"each file on its own:     {t_alone:.2f} s  ({t_alone / t_ast:.1f}x ast.parse)")
    print(f"apply --check, 1 job:     {t_check:.2f} s  ({t_check / t_ast:.1f}x ast.parse)")
    print(f"apply --check, auto jobs: {t_jobs:.2f} s  ({t_jobs / t_ast:.1f}x ast.parse)")


if __name__ == "__main__":
    main()
