"""Robustness run: every rnnfix setting that writes, over a copy of any folder.

    python scripts/robustness.py PATH [PATH...] [--settings default,strict,...] [--json OUT]

PATH is never written: its Python files, notebooks and the files discovery
reads (.gitignore, pyproject.toml) are copied to a temporary folder first. For
each setting the script runs, on a fresh copy:

1. `rnnfix apply --check --output-format json`: the findings, fixable or not;
2. `rnnfix apply` (writes) and compares the copy with the original;
3. `rnnfix apply` once more on the result: anything it changes is a file that
   is not idempotent.

and reports, per setting: files, findings, fixable findings, files changed,
fixes applied, files rnnfix reported as failed (by reason), crashes (exit 2 or a
traceback), edited files that no longer parse, files changed although `--check`
found nothing in them, non-idempotent files, and edited files whose `ast.dump`
changed outside the edited statements (every statement the diff does not
touch must come back with the same `ast.dump`).

Exit status: 0 nothing wrong, 1 a crash or a broken, non-idempotent or
over-edited file.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import re
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rnnfix_run import (  # noqa: E402
    SETTINGS,
    RunResult,
    Version,
    changed_files,
    copy_tree,
    invoke,
    parse_json,
    run_rnnfix,
    temp_dir,
)

DEFAULT_SETTINGS = (
    "default",
    "strict",
    "unsafe",
    "strict-unsafe",
    "rnn-only",
    "rnn-only-unsafe",
    "rnn-only-cudnn-off",
    "all",
)


@dataclass
class SettingReport:
    setting: str
    args: list[str]
    files: int = 0
    findings: int = 0
    fixable: int = 0
    changed: int = 0
    fixes_applied: int = 0
    failed: dict[str, int] = field(default_factory=dict)  # reason (first words) -> files
    crashes: list[str] = field(default_factory=list)
    not_parsing: list[str] = field(default_factory=list)
    changed_without_finding: list[str] = field(default_factory=list)
    not_idempotent: list[str] = field(default_factory=list)
    ast_outside_edits: list[str] = field(default_factory=list)

    @property
    def problems(self) -> int:
        return (
            len(self.crashes)
            + len(self.not_parsing)
            + len(self.changed_without_finding)
            + len(self.not_idempotent)
            + len(self.ast_outside_edits)
        )


# ---------------------------------------------------------------- ast check


def touched(old: str, new: str) -> tuple[set[int], set[int]]:
    """Old lines the diff replaces or deletes, and the old lines before which it inserts."""
    changed: set[int] = set()
    gaps: set[int] = set()
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            changed.update(range(i1 + 1, i2 + 1))
        elif tag == "insert":
            gaps.add(i1 + 1)
    return changed, gaps


def untouched_statements(tree: ast.AST, changed: set[int], gaps: set[int]) -> list[ast.stmt]:
    """The outermost statements whose lines the diff does not touch."""
    out: list[ast.stmt] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                first = min([child.lineno] + [d.lineno for d in _decorators(child)])
                last = child.end_lineno or child.lineno
                # An insertion inside the statement touches it; one right before it
                # does not (the statement follows the new line unchanged), except
                # before a def or class, where the new line may be a decorator.
                starts_def = bool(_decorators(child)) or isinstance(
                    child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                )
                hit = any(first <= n <= last for n in changed) or any(
                    first < g <= last or (g == first and starts_def) for g in gaps
                )
                if not hit:
                    out.append(child)
                    continue
            visit(child)

    visit(tree)
    return out


def _decorators(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return list(node.decorator_list)
    return []


def ast_changed_outside_edits(old: str, new: str) -> bool:
    """True when a statement the diff does not touch is missing from the new tree."""
    try:
        old_tree, new_tree = ast.parse(old), ast.parse(new)
    except (SyntaxError, ValueError):
        return False  # unparseable input or output is counted elsewhere
    changed, gaps = touched(old, new)
    available = Counter(ast.dump(n) for n in ast.walk(new_tree) if isinstance(n, ast.stmt))
    for stmt in untouched_statements(old_tree, changed, gaps):
        key = ast.dump(stmt)
        if available[key] <= 0:
            return True
        available[key] -= 1
    return False


def parses(path: str, text: str) -> bool:
    if path.endswith(".ipynb"):
        try:
            json.loads(text)
        except ValueError:
            return False
        return True
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


# ---------------------------------------------------------------- one setting


def failure_reason(error: str) -> str:
    """A short, countable form of a per-file failure message, without its location."""
    text = re.sub(r"\b(cell|line) \d+: ", "", error)
    words = text.replace(":", " ").split()
    return " ".join(words[:4]) if words else "?"


def check_setting(
    version: Version, pristine: Path, work: Path, setting: str, *, jobs: int, timeout: float
) -> SettingReport:
    flags = SETTINGS[setting]
    report = SettingReport(setting, list(flags))

    check_proc = invoke(
        version,
        pristine,
        ["--check", "--output-format", "json", *flags],
        jobs=jobs,
        timeout=timeout,
    )
    check = RunResult(returncode=check_proc.returncode, stderr=check_proc.stderr)
    parse_json(check_proc, check)
    if check.crashed or check.json_error:
        report.crashes.append(f"--check: exit {check.returncode}: {_tail(check.stderr)}")
    report.findings = len(check.diagnostics)
    report.fixable = sum(1 for d in check.diagnostics if d.get("fixable"))
    with_findings = {str(d.get("path")) for d in check.diagnostics}

    first = run_rnnfix(version, pristine, work / "first", flags, jobs=jobs, timeout=timeout)
    if first.crashed or first.json_error:
        report.crashes.append(f"write: exit {first.returncode}: {_tail(first.stderr)}")
    report.files = len(first.files)
    report.changed = len(first.changed)
    report.fixes_applied = sum(int(str(f.get("fixes_applied") or 0)) for f in first.files)
    reasons = Counter(failure_reason(err) for _path, err in first.failed_files())
    report.failed = dict(reasons.most_common())
    # A file that failed with an internal error is a crash confined to that file.
    report.crashes.extend(
        f"{path}: {err}" for path, err in first.failed_files() if err.startswith("internal error")
    )
    for path, (old, new) in sorted(first.changed.items()):
        if not parses(path, new):
            report.not_parsing.append(path)
        if path not in with_findings:
            report.changed_without_finding.append(path)
        if path.endswith(".py") and ast_changed_outside_edits(old, new):
            report.ast_outside_edits.append(path)

    if first.changed:
        second_dir = work / "second"
        if second_dir.exists():
            shutil.rmtree(second_dir)
        copy_tree(work / "first", second_dir)
        again = invoke(version, second_dir, list(flags), jobs=jobs, timeout=timeout)
        if again.crashed:
            report.crashes.append(f"second run: exit {again.returncode}: {_tail(again.stderr)}")
        report.not_idempotent = sorted(changed_files(work / "first", second_dir))
    return report


def _tail(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    return lines[-1] if lines else ""


# ---------------------------------------------------------------- main


HEADER = (
    f"{'setting':20} {'files':>6} {'find':>5} {'fixbl':>5} {'chgd':>5} {'fixes':>5} "
    f"{'fail':>5} {'crash':>5} {'noparse':>7} {'nofind':>6} {'nonidem':>7} {'astout':>6}"
)


def row(r: SettingReport) -> str:
    return (
        f"{r.setting:20} {r.files:6} {r.findings:5} {r.fixable:5} {r.changed:5} "
        f"{r.fixes_applied:5} {sum(r.failed.values()):5} {len(r.crashes):5} "
        f"{len(r.not_parsing):7} {len(r.changed_without_finding):6} "
        f"{len(r.not_idempotent):7} {len(r.ast_outside_edits):6}"
    )


def details(reports: list[SettingReport]) -> str:
    lines: list[str] = []
    failed_all: Counter[str] = Counter()
    for r in reports:
        failed_all.update(r.failed)
        for label, items in (
            ("crash", r.crashes),
            ("does not parse", r.not_parsing),
            ("changed without a finding", r.changed_without_finding),
            ("not idempotent", r.not_idempotent),
            ("ast changed outside edits", r.ast_outside_edits),
        ):
            lines.extend(f"   !! [{r.setting}] {label}: {item}" for item in items)
    if failed_all:
        lines.append("   files rnnfix reported as failed (any setting, by reason):")
        lines.extend(f"      {n:5}  {reason}" for reason, n in failed_all.most_common())
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("paths", nargs="+", type=Path, help="folders (or files) to check; never written")
    p.add_argument(
        "--settings",
        default=",".join(DEFAULT_SETTINGS),
        help=f"comma-separated, from: {', '.join(SETTINGS)}",
    )
    p.add_argument("--json", type=Path, help="also write the counts and lists here")
    p.add_argument("--jobs", type=int, default=1, help="rnnfix --jobs (default 1)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per rnnfix run")
    args = p.parse_args(argv)
    settings = args.settings.split(",")
    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        p.error(f"unknown settings: {', '.join(unknown)}")

    version = Version("installed")
    results: dict[str, list[dict[str, object]]] = {}
    problems = 0
    with temp_dir("rnnfix-robustness-") as work:
        for target in args.paths:
            pristine = work / "pristine"
            if pristine.exists():
                shutil.rmtree(pristine)
            if target.is_dir():
                copy_tree(target, pristine)
            else:
                pristine.mkdir()
                shutil.copy2(target, pristine / target.name)
            print(f"== {target}\n{HEADER}", flush=True)
            reports = []
            for s in settings:  # one row as each setting finishes: large trees take a while
                reports.append(
                    check_setting(version, pristine, work, s, jobs=args.jobs, timeout=args.timeout)
                )
                print(row(reports[-1]), flush=True)
            if details(reports):
                print(details(reports), flush=True)
            problems += sum(r.problems for r in reports)
            results[str(target)] = [asdict(r) for r in reports]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
