"""Fingerprints that name a finding, not where it is: the rule, the file and
the code it is about (its source line, whitespace trimmed), numbered among
equals. Lines moving above a finding, or a message that cites line numbers
(RNF001's "set by `model.eval()` on line 54"), leave them as they were, so
GitLab's merge-request widget and code scanning show new and fixed findings,
not moved ones."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

from rnnfix.analysis.context import Finding
from rnnfix.report.sources import Sources
from rnnfix.run.process import FileResult


def fingerprints(results: Sequence[FileResult], sources: Sources) -> dict[tuple[str, int], str]:
    """(path, index of the finding in its result's ``findings``) -> fingerprint."""
    out: dict[tuple[str, int], str] = {}
    seen: Counter[tuple[str, str, str]] = Counter()
    for r in results:
        for i, f in enumerate(r.findings):
            key = (r.path, f.code, _code_text(r, f, sources))
            seen[key] += 1
            out[(r.path, i)] = digest(*key, str(seen[key]))
    return out


def _code_text(r: FileResult, f: Finding, sources: Sources) -> str:
    code = sources.code(r, f)
    # Unknown source (an unreadable file): the code's name stands in; never a line number.
    return " ".join(code.split()) if code is not None else f.code


def digest(*parts: str) -> str:
    data = "\0".join(parts).encode("utf-8", "surrogateescape")
    return hashlib.blake2b(data, digest_size=16).hexdigest()
