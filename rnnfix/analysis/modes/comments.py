"""Does the author's comment say that a mode call is on purpose?

A comment is positive evidence of intent when it sits on the mode call's
own lines or in the comment lines right above it, and says one of:

- BatchNorm (or its statistics) kept fixed: ``# freeze bn``, ``# fix
  batchnorm statistics``, ``# frozen BN``, ``# keep BN in eval``,
  ``# use_global_stats = True`` (Caffe's name for it, in ports);
- a batch too small for batch statistics: ``# batch size 1``, ``# bs=1``;
- dropout kept on for sampling: ``# MC dropout``, ``# Monte Carlo dropout``,
  ``# keep dropout on``, ``# uncertainty``;
- BatchNorm statistics taken from the batches on purpose: ``# use batch
  statistics``, ``# recompute BN running stats``;
- test-time adaptation: ``# TTA``, ``# test-time adaptation``, ``# adapt
  BN statistics``;
- a frozen feature model: ``# linear probe``, ``# frozen backbone``,
  ``# feature extractor stays in eval``.

Only comments are read, never code or strings, and only these phrases:
a comment that merely names the mode (``# eval mode``) is no evidence. An
``eval()`` counts as deliberate for ``EVAL_INTENTS``, a ``train()`` for
``TRAIN_INTENTS``.
"""

from __future__ import annotations

import ast
import re

# Each pattern is matched against the lowercased comment text.
_PHRASES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "frozen BatchNorm",
        re.compile(
            r"\b(?:freez\w*|fix\w*|frozen|keep\w*|lock\w*)\b.{0,30}"
            r"\b(?:bn|batch[\s_-]?norm\w*|bn\s+stat\w*|running\s+stat\w*|batch\s+stat\w*)\b"
            r"|\b(?:bn|batch[\s_-]?norm\w*)\b.{0,20}\b(?:frozen|fixed|freez\w*)\b"
            r"|\bfreeze_bn\b"
            # Caffe's BatchNorm switch, kept in ports: running statistics only.
            r"|\buse_global_stats\b"
        ),
    ),
    ("batch size 1", re.compile(r"\b(?:batch[\s_-]?size|bs)\s*(?:=|==|of|is)?\s*1\b")),
    (
        "Monte Carlo dropout",
        re.compile(
            r"\bmc[\s_-]?dropout\b|\bmonte[\s_-]?carlo\b|\bmc\b.{0,12}\bsampl\w*"
            r"|\bkeep\w*\b.{0,12}\bdropout\b.{0,8}\b(?:on|active|enabled)\b"
            r"|\bdropout\b.{0,12}\b(?:on|active|enabled)\b.{0,20}\b(?:uncertaint\w*|sampl\w*)"
            r"|\buncertaint\w*"
        ),
    ),
    (
        "BatchNorm batch statistics",
        re.compile(
            r"\b(?:use|using|recomput\w*|updat\w*|collect\w*|estimat\w*|re-?estimat\w*)\b.{0,20}"
            r"\b(?:batch\s+stat\w*|bn\s+stat\w*|running\s+(?:stat\w*|mean\w*|var\w*))"
        ),
    ),
    (
        "test-time adaptation",
        re.compile(
            r"\btta\b|\btest[\s_-]?time\s+(?:adapt\w*|train\w*|augment\w*)"
            r"|\badapt\w*\b.{0,20}\b(?:bn|batch[\s_-]?norm\w*|statistics|stats)\b"
        ),
    ),
    (
        "a frozen feature model",
        re.compile(
            r"\blinear[\s_-]?(?:probe|probing|eval\w*)\b"
            r"|\bfrozen\b.{0,20}\b(?:backbone|encoder|feature\w*|teacher)\b"
            r"|\b(?:backbone|encoder|feature[\s_-]?extractor|teacher)\b.{0,30}\b(?:frozen|fixed)\b"
        ),
    ),
)
_MAX_ABOVE = 3  # comment lines read above the statement

# What each mode call's comment may say to make it deliberate.
EVAL_INTENTS = frozenset({"frozen BatchNorm", "batch size 1", "a frozen feature model"})
TRAIN_INTENTS = frozenset(
    {"Monte Carlo dropout", "test-time adaptation", "BatchNorm batch statistics"}
)


def intent_comment(
    lines: list[str], node: ast.AST, kinds: frozenset[str] | None = None
) -> str | None:
    """What the comments at ``node`` (a statement or a call in one) say the
    author means (one of the module docstring's kinds, among ``kinds``), or
    None."""
    first = getattr(node, "lineno", None)
    if first is None:
        return None
    last = getattr(node, "end_lineno", None) or first
    texts = [c for c in (_comment(lines, i) for i in range(first, last + 1)) if c]
    above = first - 1
    while above >= 1 and first - above <= _MAX_ABOVE:
        text = lines[above - 1].strip() if above - 1 < len(lines) else ""
        if not text.startswith("#"):
            break
        texts.append(text[1:])
        above -= 1
    for text in texts:
        low = text.lower()
        for kind, pattern in _PHRASES:
            if (kinds is None or kind in kinds) and pattern.search(low):
                return kind
    return None


def _comment(lines: list[str], line: int) -> str | None:
    """The comment ending line ``line`` (1-based), outside string literals."""
    if line - 1 >= len(lines):
        return None
    text = lines[line - 1]
    if "#" not in text:
        return None
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif ch in "'\"":
            quote = text[i : i + 3] if text.startswith(ch * 3, i) else ch
            i += len(quote)
            continue
        elif ch == "#":
            return text[i + 1 :]
        i += 1
    return None
