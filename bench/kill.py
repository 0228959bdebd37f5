"""Kill and interrupt runs (issue 23): start ``rnnfix apply`` on a tree of
files with fixes, stop it at a random moment with SIGINT, SIGTERM or SIGKILL,
and check what it left.

    python bench/kill.py [RUNS] [--files N] [--seed N]    # default 30 interrupted runs, 120 files

Half the runs use one process, half a pool of two (``--jobs 2``). After each
run every file must hold either its original bytes or exactly the bytes an
uninterrupted run writes (no file half-written, none partly old); SIGINT and
SIGTERM must end the run with 128 + the signal's number and one line on
stderr (no traceback); a later run must leave no temporary file behind (a
SIGKILL may leave one: the next walk removes it) and bring every file to the
fixed bytes. Prints the counts; exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BUGGY = """\
import torch

model = torch.nn.LSTM(8, 8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for x in loader:
        optimizer.zero_grad()
        model(x)[0].sum().backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x in val_loader:
            model(x)
"""


def _tree(root: Path, n: int) -> None:
    for i in range(n):
        folder = root / f"pkg{i // 40}"
        folder.mkdir(parents=True, exist_ok=True)
        # CRLF and a comment of its own: a half-written or mixed file shows.
        text = f"# file {i}\n" + BUGGY
        (folder / f"train_{i:03}.py").write_bytes(text.replace("\n", "\r\n").encode())


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _rnnfix(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "RNNFIX_NO_CACHE": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "rnnfix", "apply", *args, str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="?", type=int, default=30)
    parser.add_argument("--files", type=int, default=120)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    # A background job of a non-interactive shell starts with SIGINT ignored,
    # and the runs would inherit that: give them Python's own handling back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rng = random.Random(args.seed)
    problems: list[str] = []
    stops: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="rnnfix-kill-") as tmp:
        pristine, fixed = Path(tmp) / "pristine", Path(tmp) / "fixed"
        _tree(pristine, args.files)
        shutil.copytree(pristine, fixed)
        reference = _rnnfix(fixed, "--jobs", "1")
        reference.communicate()
        before, after = _snapshot(pristine), _snapshot(fixed)
        assert before != after and reference.returncode == 0
        # How long an uninterrupted run takes, to spread the signals over it.
        started = time.monotonic()
        shutil.copytree(pristine, Path(tmp) / "timing")
        _rnnfix(Path(tmp) / "timing", "--jobs", "2").communicate()
        span = time.monotonic() - started
        signals = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
        interrupted = 0
        for run in range(args.runs * 3):
            if interrupted == args.runs:
                break
            sig = signals[run % 3]
            jobs = "1" if run % 2 == 0 else "2"
            # From 0.3 s: before, Python itself is starting (site, runpy), and
            # a signal there gets Python's default handling, not rnnfix's.
            delay = rng.uniform(0.3, 0.7 * span)
            work = Path(tmp) / f"run{run}"
            shutil.copytree(pristine, work)
            proc = _rnnfix(work, "--jobs", jobs)
            time.sleep(delay)
            os.killpg(proc.pid, sig)
            _, err = proc.communicate(timeout=120)
            label = f"run {run} ({sig.name} after {delay:.2f} s, --jobs {jobs})"
            finished = proc.returncode == 0
            interrupted += not finished
            kind = "finished first" if finished else sig.name
            stops[kind] = stops.get(kind, 0) + 1
            if not finished and sig != signal.SIGKILL:
                if proc.returncode != 128 + sig:
                    problems.append(f"{label}: exit {proc.returncode}, expected {128 + sig}")
                lines = err.splitlines()
                if len(lines) != 1 or "Traceback" in err or not lines[0].startswith("rnnfix: "):
                    problems.append(f"{label}: stderr is not one line: {err[:300]!r}")
            now = _snapshot(work)
            for name, data in now.items():
                if name.endswith(".rnnfix"):
                    if sig != signal.SIGKILL:
                        problems.append(f"{label}: temporary file left: {name}")
                    continue
                if data not in (before.get(name), after.get(name)):
                    problems.append(f"{label}: {name} is neither old nor fixed")
            if set(before) - set(now):
                problems.append(f"{label}: files vanished: {sorted(set(before) - set(now))[:3]}")
            again = _rnnfix(work, "--jobs", "1")
            again.communicate()
            if _snapshot(work) != after:
                problems.append(
                    f"{label}: a run after it did not bring the tree to the fixed bytes"
                )
            shutil.rmtree(work)
    print(
        f"{interrupted} interrupted runs over {args.files} files (seed {args.seed}; an "
        f"uninterrupted --jobs 2 run takes {span:.1f} s): stops {stops}; {len(problems)} problems"
    )
    for item in problems[:10]:
        print(f"  {item}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
