"""Overhead of the rnnfix mode sanitizer on a small LSTM training step.

Prints the median time of one training step (forward, backward, optimizer
step, plus a no_grad validation forward every 10 steps) without the
sanitizer, with it in raise mode and in record mode, and the ratios.
Blocks alternate between the settings so that machine noise hits all alike.

    python bench/verify_overhead.py [--steps 300] [--rounds 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from rnnfix import verify  # noqa: E402


class Tagger(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(32, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def step_times(steps: int, hidden: int) -> list[float]:
    torch.manual_seed(0)
    model = Tagger(hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    x, y = torch.randn(16, 20, 32), torch.randint(0, 5, (16,))
    times = []
    for i in range(steps):
        start = time.perf_counter()
        model.train()
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
        if i % 10 == 9:
            model.eval()
            with torch.no_grad():
                model(x)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=64, help="LSTM hidden size")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    settings: dict[str, str | None] = {"off": None, "raise": "raise", "record": "record"}
    samples: dict[str, list[float]] = {name: [] for name in settings}
    step_times(50, args.hidden)  # warm up allocator and kernels
    for _ in range(args.rounds):
        for name, mode in settings.items():
            if mode is not None:
                verify.install(mode)  # type: ignore[arg-type]
            try:
                samples[name] += step_times(args.steps, args.hidden)
            finally:
                verify.uninstall()
    assert not verify.records(), "the benchmark loop itself must be clean"
    base = statistics.median(samples["off"])
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), LSTM hidden {args.hidden}, "
        f"{args.rounds}x{args.steps} steps"
    )
    for name, values in samples.items():
        median = statistics.median(values)
        print(
            f"{name:>7}: median step {median * 1e3:7.3f} ms  ratio {median / base:.3f}  "
            f"({(median - base) * 1e6:+.0f} us)"
        )


if __name__ == "__main__":
    main()
