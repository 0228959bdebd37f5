"""Hostile-input fuzzing (issue 23): mutate real fixtures the way odd files
are odd, fix each case twice, and count what breaks the safety contract.

    python bench/hostile_fuzz.py [CASES] [--seed N]     # default 2000 cases

Each case is a fixture (``fixtures/RNF00N/*.py``) with one or more mutations:
characters Python does not count as line breaks (``\\f``, ``\\v``, ``\\x1c``,
U+0085, U+2028...) in comments and strings, ``# rnnfix: ignore`` comments,
CRLF line endings, a BOM and a coding cookie, deleted lines (syntax errors),
deep nesting, undecodable bytes, and the same source as a notebook whose
cells hold rnnfix's own marker texts and IPython magics. Counted:

- crashes: an ``internal error`` result or an exception out of ``process_file``;
- lost bytes: an unchanged file whose bytes differ, a changed one that does not
  parse, lost a comment of the input, or (a notebook) changed a cell that is
  not code or a code cell's magic lines;
- non-idempotent files: a second run that changes the file again.

Prints the counts and the first cases of each kind; exits 1 if any is non-zero.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import random
import sys
import tempfile
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rnnfix.config.settings import Settings  # noqa: E402
from rnnfix.run.process import Outcome, process_file  # noqa: E402

ODD = ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
MARKERS = [
    "__rnnfix_cell__(0)",
    "__rnnfix_cell__(1)",
    "__rnnfix_magic__(0)",
    "__rnnfix_magic__(7)",
    "__rnnfix1_cell__(0)",
]


def _comments(text: str) -> Counter[str]:
    try:
        tokens = tokenize.generate_tokens(io.StringIO(text).readline)
        return Counter(t.string for t in tokens if t.type == tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return Counter()


def _mutate(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True) or ["\n"]
    kind = rng.randrange(8)
    if kind == 0:  # an odd character in a comment
        i = rng.randrange(len(lines))
        end = "\n" if lines[i].endswith("\n") else ""
        lines[i] = lines[i].rstrip("\n") + f"  # note{rng.choice(ODD)}more" + end
    elif kind == 1:  # an odd character in a string on its own line
        i = rng.randrange(len(lines))
        lines.insert(i, f"_s = 'a{rng.choice(ODD)}b'\n")
    elif kind == 2:  # an ignore comment, after an odd character
        i = rng.randrange(len(lines))
        end = "\n" if lines[i].endswith("\n") else ""
        odd = rng.choice(["", *ODD])
        lines[i] = lines[i].rstrip("\n") + f"  #{odd} rnnfix: ignore" + end
    elif kind == 3:  # CRLF
        return "".join(lines).replace("\r\n", "\n").replace("\n", "\r\n")
    elif kind == 4 and rng.random() < 0.3:  # a deleted line (a syntax error, mostly)
        del lines[rng.randrange(len(lines))]
    elif kind == 5:  # a form feed as indentation of a line of its own
        lines.insert(rng.randrange(len(lines) + 1), "\f\n")
    elif kind == 6:  # deep nesting
        depth = rng.choice([50, 200, 1000])
        lines.append("_deep = " + "(" * depth + "1" + ")" * depth + "\n")
    else:  # a marker text in a string
        lines.insert(rng.randrange(len(lines) + 1), f"_m = '{rng.choice(MARKERS)}'\n")
    return "".join(lines)


def _encode(rng: random.Random, text: str) -> bytes:
    kind = rng.randrange(12)
    if kind == 0:
        return b"\xef\xbb\xbf" + text.encode()
    if kind == 1:
        try:
            return ("# -*- coding: latin-1 -*-\n" + text).encode("latin-1")
        except UnicodeEncodeError:
            return text.encode()
    if kind == 2:
        data = bytearray(text.encode())
        if data:
            data[rng.randrange(len(data))] = 0xFF  # undecodable
        return bytes(data)
    return text.encode()


def _notebook(rng: random.Random, text: str) -> str:
    chunks = [c for c in text.split("\n\n") if c.strip()] or ["pass"]
    cells: list[dict[str, object]] = []
    for chunk in chunks:
        if rng.random() < 0.3:
            chunk = rng.choice(["%time x = 1", "!ls", "%matplotlib inline"]) + "\n" + chunk
        if rng.random() < 0.3:
            chunk = chunk + "\n" + rng.choice(MARKERS) + "\n"
        if rng.random() < 0.2:
            chunk = f"print('{rng.choice(MARKERS)}')\n" + chunk
        cells.append(
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": chunk.splitlines(keepends=True),
            }
        )
        if rng.random() < 0.2:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": ["# notes"]})
    data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _lost(path: Path, before: bytes, after: bytes, outcome: Outcome) -> str | None:
    if outcome is not Outcome.CHANGED:
        return None if before == after else "an unchanged file's bytes changed"
    if path.suffix == ".ipynb":
        old, new = json.loads(before), json.loads(after)
        if len(old["cells"]) != len(new["cells"]):
            return "cells added or removed"
        for a, b in zip(old["cells"], new["cells"], strict=True):
            if a["cell_type"] != "code" and a != b:
                return "a cell that is not code changed"
            if a["cell_type"] == "code":
                kept = [ln for ln in "".join(a["source"]).splitlines() if ln.startswith(("%", "!"))]
                if any(ln not in "".join(b["source"]).splitlines() for ln in kept):
                    return "a magic line was lost"
                for marker in MARKERS:
                    if "".join(a["source"]).count(marker) != "".join(b["source"]).count(marker):
                        return f"marker text {marker} lost or moved"
        return None
    from rnnfix.source.files import decode

    old_text, new_text = decode(before).text, decode(after).text
    try:
        ast.parse(new_text)
    except SyntaxError:
        return "the output does not parse"
    missing = _comments(old_text) - _comments(new_text)
    return f"comments lost: {sorted(missing)[:2]}" if missing else None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="?", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sources = sorted((ROOT / "fixtures").glob("RNF00*/*.py"))
    texts = [p.read_text(encoding="utf-8") for p in sources]
    settings = Settings()
    crashes: list[str] = []
    lost: list[str] = []
    unstable: list[str] = []
    outcomes: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="rnnfix-fuzz-") as tmp:
        for case in range(args.cases):
            base = rng.randrange(len(texts))
            text = texts[base]
            for _ in range(rng.randrange(1, 4)):
                text = _mutate(rng, text)
            if rng.random() < 0.25:
                path, data = Path(tmp) / f"case{case}.ipynb", _notebook(rng, text).encode()
            else:
                path, data = Path(tmp) / f"case{case}.py", _encode(rng, text)
            path.write_bytes(data)
            label = f"case {case} (from {sources[base].relative_to(ROOT)})"
            try:
                first = process_file(path, settings, write=True)
                after = path.read_bytes()
                second = process_file(path, settings, write=True)
            except Exception as exc:  # noqa: BLE001 - what is counted
                crashes.append(f"{label}: {type(exc).__name__}: {exc}")
                continue
            outcomes[first.outcome.value] += 1
            if "internal error" in (first.error or "") + (second.error or ""):
                crashes.append(f"{label}: {first.error or second.error}")
            problem = _lost(path, data, after, first.outcome)
            if problem:
                lost.append(f"{label}: {problem}")
                (Path(tmp) / f"lost{case}{path.suffix}").write_bytes(data)
            if second.outcome is Outcome.CHANGED:
                unstable.append(f"{label}: the second run changed it again")
            path.unlink()
    print(
        f"{args.cases} cases (seed {args.seed}): {dict(outcomes)}; "
        f"{len(crashes)} crashes, {len(lost)} lost bytes, {len(unstable)} non-idempotent"
    )
    for kind, items in (("crash", crashes), ("lost", lost), ("non-idempotent", unstable)):
        for item in items[:5]:
            print(f"  {kind}: {item}")
    return 1 if crashes or lost or unstable else 0


if __name__ == "__main__":
    sys.exit(main())
