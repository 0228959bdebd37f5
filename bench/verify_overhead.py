"""Overhead of the rnnfix mode sanitizer on small training steps.

Prints the median time of one training step (forward, backward, optimizer
step, plus an eval-mode no_grad validation forward every 10 steps) without the
sanitizer, with it in raise mode and in record mode, and the ratios, for a
small LSTM tagger and a small CNN with BatchNorm and Dropout (which go through
the sanitizer's dropout/batch_norm wrappers). Blocks alternate between the
settings so that machine noise hits all alike.

    python bench/verify_overhead.py [--steps 300] [--rounds 5] [--threads 1]
                                    [--model lstm|cnn|both]
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


class SmallCNN(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
            nn.Dropout2d(0.1),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(channels, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.drop(self.features(x)))


def step_times(steps: int, hidden: int, kind: str = "lstm") -> list[float]:
    torch.manual_seed(0)
    model: nn.Module = Tagger(hidden) if kind == "lstm" else SmallCNN(hidden // 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    shape = (16, 20, 32) if kind == "lstm" else (16, 3, 16, 16)
    x, y = torch.randn(*shape), torch.randint(0, 5, (16,))
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
    parser.add_argument(
        "--hidden", type=int, default=64, help="LSTM hidden size (CNN channels: a quarter)"
    )
    parser.add_argument("--model", choices=("lstm", "cnn", "both"), default="both")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    kinds = ("lstm", "cnn") if args.model == "both" else (args.model,)
    for kind in kinds:
        bench(kind, args.steps, args.rounds, args.hidden, args.threads)


def bench(kind: str, steps: int, rounds: int, hidden: int, threads: int) -> None:
    settings: dict[str, str | None] = {"off": None, "raise": "raise", "record": "record"}
    samples: dict[str, list[float]] = {name: [] for name in settings}
    step_times(50, hidden, kind)  # warm up allocator and kernels
    for _ in range(rounds):
        for name, mode in settings.items():
            if mode is not None:
                verify.install(mode)  # type: ignore[arg-type]
            try:
                samples[name] += step_times(steps, hidden, kind)
            finally:
                verify.uninstall()
    assert not verify.records(), "the benchmark loop itself must be clean"
    base = statistics.median(samples["off"])
    what = (
        f"LSTM hidden {hidden}" if kind == "lstm" else f"CNN (BatchNorm, Dropout) {hidden // 4} ch"
    )
    print(f"torch {torch.__version__}, {threads} thread(s), {what}, {rounds}x{steps} steps")
    for name, values in samples.items():
        median = statistics.median(values)
        print(
            f"{name:>7}: median step {median * 1e3:7.3f} ms  ratio {median / base:.3f}  "
            f"({(median - base) * 1e6:+.0f} us)"
        )


if __name__ == "__main__":
    main()
