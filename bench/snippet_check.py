"""Every ``apply_edits`` call the engine's fix loop makes, made every way:
as text (``rnnfix.source.textedit``, where it gives a result), on the
snippet of top-level statements (``rnnfix.source.span``) and on the whole
file with a transformer that visits every node (as before issue 28); prints
each call whose result or error differs. Too slow for the suite
(``tests/test_snippet.py`` checks each fixture's first-pass fixes).

    python bench/snippet_check.py fixtures    # every .py under it, its `# rnnfix-args:`
    python bench/snippet_check.py TREE --strict --unsafe-fixes
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rnnfix.config.settings import Settings  # noqa: E402
from rnnfix.run import engine  # noqa: E402
from rnnfix.source import rewrite, textedit  # noqa: E402
from rnnfix.source.edits import Edit  # noqa: E402
from rnnfix.source.span import edit_span  # noqa: E402
from tests.fixture_args import settings_for  # noqa: E402

REAL = rewrite.apply_edits


def outcome(source: str, edits: Sequence[Edit], tree: ast.Module | None, prune: bool) -> str:
    every_node = mock.patch.object(rewrite._EditTransformer, "on_visit", lambda s, n: True)
    with contextlib.nullcontext() if prune else every_node:
        try:
            return "ok:" + REAL(source, edits, tree)
        except Exception as exc:  # noqa: BLE001 - compared, not raised
            return f"error:{type(exc).__name__}: {exc}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--unsafe-fixes", action="store_true")
    args = parser.parse_args()
    counts = {"calls": 0, "text": 0, "snippet": 0, "differ": 0, "files": 0}
    current: list[str] = [""]

    def both(text: str, edits: Sequence[Edit], tree: ast.Module | None = None) -> str:
        counts["calls"] += 1
        whole = outcome(text, edits, None, prune=False)
        if tree is not None:
            counts["snippet"] += edit_span(text, tree, edits) is not None
            as_text = textedit.text_edits(text, tree, edits)
            counts["text"] += as_text is not None
            got_all = [outcome(text, edits, tree, True), outcome(text, edits, None, True)]
            for got in got_all + ([] if as_text is None else ["ok:" + as_text]):
                if got != whole:
                    counts["differ"] += 1
                    print(f"DIFFERS: {current[0]}: {edits}")
        return REAL(text, edits)

    textedit.apply_edits = both  # type: ignore[assignment]
    files = [p for root in args.paths for p in ([root] if root.is_file() else root.rglob("*.py"))]
    for path in sorted(files):
        try:
            source = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        settings = settings_for(source)
        if args.strict or args.unsafe_fixes:
            settings = Settings(strict=args.strict, unsafe_fixes=args.unsafe_fixes)
        current[0] = str(path)
        counts["files"] += 1
        try:
            engine.fix_source(source, settings, str(path))
        except (SyntaxError, ValueError, RecursionError):
            continue
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    sys.exit(1 if counts["differ"] else 0)


if __name__ == "__main__":
    main()
