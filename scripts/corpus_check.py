"""Corpus check: rnnfix against hand-labelled functions of real repositories.

`scripts/corpus.toml` labels functions (or module-level line ranges) of the
repositories in `scripts/ecosystem.toml`, each at one commit of the snapshot:
`bug` (a train/eval mode bug, usually the parent of an upstream fix commit) or
`correct` (the fix itself, or code whose mode calls are deliberate). For each
case this script extracts the repository at the case's commit (cached), runs
rnnfix on the case's file from the tree's root (so the files it imports are
read, as in a real run), once with `--diff` and once with `--check
--output-format json`, and sorts the case into one outcome per setting:

    bug      fixed      an edit inside the function (or one of its `also` functions)
             reported   a finding there, no edit
             missed     neither
    correct  left-alone no edit there (findings without an edit are listed, not counted)
             edited     an edit there: a wrong edit

Totals: recall (fixed bugs / bugs) and precision of edits (fixed bugs /
(fixed bugs + wrong edits)).

    python scripts/corpus_check.py --mirrors /work/.mirror
    python scripts/corpus_check.py --mirrors DIR --case ncsn --settings strict -v
    python scripts/corpus_check.py --mirrors DIR --ref main   # an rnnfix git ref

Exit status: 0 done, 2 a case could not be prepared or rnnfix crashed on it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rnnfix_run import SETTINGS, Proc, Version, temp_dir  # noqa: E402
from ecosystem_check import (  # noqa: E402
    DEFAULT_MANIFEST,
    Repo,
    checkout_ref,
    diff_blocks,
    load_manifest,
    prepare,
)

HERE = Path(__file__).resolve().parent
# The development part and the held-back part live in files of their own, so a
# reader changing the analysis can study one without ever opening the other.
DEFAULT_CORPUS = (HERE / "corpus.toml", HERE / "corpus-held.toml")
# The corpus's repositories that the ecosystem check does not run.
CORPUS_MANIFEST = HERE / "corpus-repos.toml"
LABELS = ("bug", "correct")
PARTS = ("dev", "held")
RULES = ("RNF001", "RNF002", "RNF003", "RNF004", "RNF005", "RNF006", "none")


@dataclass(frozen=True)
class Case:
    repo: str  # manifest name
    commit: str
    path: str
    function: str  # qualname, or "<module>" with `lines`
    line: int
    label: str
    klass: str
    rule: str
    reason: str
    lines: tuple[int, int] | None = None
    also: tuple[str, ...] = ()
    part: str = "dev"  # "dev": the analysis may be tuned to it; "held": never looked at

    @property
    def ident(self) -> str:
        # Module-level cases are line ranges: one file at one commit may hold
        # several (TranAD's training phase and its testing phase).
        where = f"<module>:{self.line}" if self.function == "<module>" else self.function
        return f"{self.repo}:{self.path}:{where}@{self.commit[:8]}"


def load_corpus(path: Path, repos: dict[str, Repo]) -> list[Case]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    cases = []
    for i, raw in enumerate(data.get("case", []), 1):
        where = f"{path}: case {i}"
        span = raw.get("lines")
        case = Case(
            repo=str(raw["repo"]),
            commit=str(raw["commit"]),
            path=str(raw["path"]),
            function=str(raw["function"]),
            line=int(raw["line"]),
            label=str(raw["label"]),
            klass=str(raw["class"]),
            rule=str(raw["rule"]),
            reason=str(raw["reason"]),
            lines=(int(span[0]), int(span[1])) if span else None,
            also=tuple(str(a) for a in raw.get("also", [])),
            part=str(raw.get("part", "dev")),
        )
        if case.repo not in repos:
            raise SystemExit(f"{where}: repo {case.repo!r} is not in the manifest")
        if case.label not in LABELS or case.rule not in RULES or len(case.commit) != 40:
            raise SystemExit(f"{where}: bad label, rule or commit in {case.ident}")
        if case.part not in PARTS:
            raise SystemExit(f"{where}: part must be one of {', '.join(PARTS)}")
        if (case.function == "<module>") != (case.lines is not None):
            raise SystemExit(f"{where}: `lines` goes with function = '<module>', and only there")
        cases.append(case)
    return cases


# ---------------------------------------------------------------- spans


def find_def(tree: ast.AST, qualname: str) -> ast.AST | None:
    node: ast.AST | None = tree
    for part in qualname.split("."):
        assert node is not None
        node = next(
            (
                child
                for child in ast.iter_child_nodes(node)
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and child.name == part
            ),
            None,
        )
        if node is None:
            return None
    return node


@dataclass(frozen=True)
class Span:
    start: int  # first line (the first decorator's, for a def)
    end: int  # last line
    indent: int  # column of the `def`; -1 for a module range


def spans(case: Case, source: str) -> list[Span]:
    """The lines an edit or finding must fall in to belong to the case."""
    tree = ast.parse(source)
    out = []
    names: tuple[str, ...] = (case.function, *case.also)
    if case.lines is not None:
        # A module range, and the functions where an edit also counts.
        out.append(Span(case.lines[0], case.lines[1], -1))
        names = case.also
    for name in names:
        node = find_def(tree, name)
        if node is None:
            raise RuntimeError(f"{case.path} has no {name} at {case.commit[:10]}")
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        out.append(Span(first, node.end_lineno or node.lineno, node.col_offset))
    if out[0].start > case.line or out[0].end < case.line:
        raise RuntimeError(f"{case.ident}: line {case.line} is not in {case.function}")
    return out


def block_in(block: str, span: Span) -> bool:
    """Whether a `diff_blocks` block edits inside `span`.

    A block starts at its line in the original file; a pure insertion there
    goes before that line, so one right after the span's last line belongs to
    the function only when it is indented deeper than the `def`."""
    head, *body = block.splitlines()
    start = int(head.rsplit(":", 1)[1])
    if span.start <= start <= span.end:
        return True
    if start == span.end + 1 and span.indent >= 0 and not any(b.startswith("-") for b in body):
        added = [b[1:] for b in body if b.startswith("+") and b[1:].strip()]
        return bool(added) and all(len(a) - len(a.lstrip()) > span.indent for a in added)
    return False


# ---------------------------------------------------------------- running


@dataclass
class Outcome:
    case: Case
    setting: str
    verdict: str  # fixed | reported | missed | left-alone | edited | error
    codes: list[str] = field(default_factory=list)  # rules of the findings in the span
    edits: list[str] = field(default_factory=list)  # diff blocks in the span
    error: str = ""


def run(version: Version, tree: Path, args: Sequence[str], timeout: float) -> Proc:
    no_cache = ["--no-cache"] if version.supports("--no-cache") else []
    cmd = [*version.command(), "apply", "--quiet", *no_cache, *args]
    try:
        proc = subprocess.run(
            cmd,
            cwd=tree,
            env=version.env(),
            capture_output=True,
            text=True,
            errors="surrogateescape",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return Proc(-1, "", f"timed out after {timeout:.0f}s")
    return Proc(proc.returncode, proc.stdout, proc.stderr)


def same_path(reported: object, path: str) -> bool:
    return Path(str(reported)).as_posix().removeprefix("./") == path


def judge(case: Case, setting: str, source: str, diff: Proc, check: Proc) -> Outcome:
    for proc in (diff, check):
        if proc.crashed:
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            return Outcome(case, setting, "error", error=f"exit {proc.returncode}: {tail}")
    try:
        data = json.loads(check.stdout) if check.stdout.strip() else {}
    except json.JSONDecodeError as exc:
        return Outcome(case, setting, "error", error=f"bad JSON: {exc}")
    for f in data.get("files", []):
        if f.get("outcome") == "failed" and same_path(f.get("path"), case.path):
            return Outcome(case, setting, "error", error=f"file failed: {f.get('error')}")
    where = spans(case, source)
    codes = sorted(
        {
            str(d.get("code"))
            for d in data.get("diagnostics", [])
            if same_path(d.get("path"), case.path)
            and any(s.start <= int(d.get("line") or 0) <= s.end for s in where)
        }
    )
    edits = [
        b
        for b in diff_blocks(diff.stdout)
        if b.split(":", 1)[0] == case.path and any(block_in(b, s) for s in where)
    ]
    if case.label == "bug":
        verdict = "fixed" if edits else "reported" if codes else "missed"
    else:
        verdict = "edited" if edits else "left-alone"
    return Outcome(case, setting, verdict, codes, edits)


# rnnfix's output for one file of one tree: the cases of a repository run in one
# thread, and several functions of one file at one commit share their runs.
RunKey = tuple[Path, tuple[str, ...]]


def check_case(
    case: Case,
    repo: Repo,
    settings: Sequence[str],
    args: argparse.Namespace,
    version: Version,
    memo: dict[RunKey, Proc] | None = None,
) -> list[Outcome]:
    runs = {} if memo is None else memo

    def once(tree: Path, cmd: list[str]) -> Proc:
        key = (tree, tuple(cmd))
        if key not in runs:
            runs[key] = run(version, tree, cmd, args.timeout)
        return runs[key]

    try:
        tree = prepare(Repo(repo.name, repo.github, case.commit), args.mirrors, args.cache)
        source = (tree / case.path).read_text(encoding="utf-8", errors="surrogateescape")
        spans(case, source)  # a label that no longer points at its function fails here
    except (RuntimeError, OSError, SyntaxError, subprocess.CalledProcessError) as exc:
        return [Outcome(case, s, "error", error=str(exc)) for s in settings]
    out = []
    for setting in settings:
        flags = list(SETTINGS[setting])
        diff = once(tree, ["--diff", *flags, case.path])
        check = once(tree, ["--check", "--output-format", "json", *flags, case.path])
        out.append(judge(case, setting, source, diff, check))
    return out


# ---------------------------------------------------------------- report


def totals(outcomes: Sequence[Outcome]) -> str:
    n = Counter(o.verdict for o in outcomes)
    bugs = n["fixed"] + n["reported"] + n["missed"]
    edits = n["fixed"] + n["edited"]
    correct = n["left-alone"] + n["edited"]
    recall = f"{n['fixed'] / bugs:.0%}" if bugs else "n/a"
    precision = f"{n['fixed'] / edits:.0%}" if edits else "n/a"
    touched = f"{n['edited'] / correct:.0%}" if correct else "n/a"
    repos = len({o.case.repo for o in outcomes})
    return (
        f"{repos} repositories; "
        f"bugs {bugs}: fixed {n['fixed']}, reported only {n['reported']}, missed {n['missed']}; "
        f"correct {correct}: left alone {n['left-alone']}, "
        f"wrongly edited {n['edited']}; errors {n['error']}; "
        f"recall {recall}, precision of edits {precision}, negatives touched {touched}"
    )


def print_outcome(o: Outcome, verbose: bool) -> None:
    codes = ",".join(o.codes) or "-"
    print(f"  {o.verdict:10} {o.case.ident}:{o.case.line}  findings {codes}  [{o.case.klass}]")
    if o.error:
        print(f"             {o.error}")
    if verbose or o.verdict in ("edited", "missed"):
        print(f"             {o.case.reason}")
    if verbose:
        for block in o.edits:
            for line in block.splitlines():
                print(f"             | {line}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--corpus",
        type=Path,
        action="append",
        help="a corpus file (repeat; default: corpus.toml and corpus-held.toml)",
    )
    p.add_argument(
        "--manifest",
        type=Path,
        action="append",
        help="a manifest of repositories (repeat; default: ecosystem.toml and corpus-repos.toml)",
    )
    p.add_argument(
        "--mirrors",
        type=Path,
        default=os.environ.get("RNNFIX_ECO_MIRRORS"),
        help="folder of git snapshots, owner+name/repo (env RNNFIX_ECO_MIRRORS)",
    )
    p.add_argument("--cache", type=Path, default=Path("/tmp/corpus-cache"))
    p.add_argument("--ref", help="git ref of rnnfix to run (default: the installed rnnfix)")
    p.add_argument("--rnnfix-repo", type=Path, default=HERE.parent)
    p.add_argument("--settings", default="default,strict")
    p.add_argument(
        "--case", action="append", default=[], help="only cases whose id contains this (repeat)"
    )
    p.add_argument(
        "--part",
        choices=("all", *PARTS),
        default="all",
        help="which part of the corpus to run (split by repository; default: all)",
    )
    p.add_argument(
        "--show-held",
        action="store_true",
        help="also list the held-back part's cases (by default only its totals are printed:"
        " it is the honest figure, so nobody tunes the analysis to its cases)",
    )
    p.add_argument(
        "--label", choices=("all", *LABELS), default="all", help="only cases with this label"
    )
    p.add_argument("-j", "--jobs", type=int, default=1, help="cases run at once")
    p.add_argument("--json", type=Path, help="write every outcome here")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per rnnfix run")
    p.add_argument("-v", "--verbose", action="store_true", help="print reasons and edits")
    args = p.parse_args(argv)
    if args.mirrors is None:
        p.error("--mirrors (or RNNFIX_ECO_MIRRORS) is required")
    unknown = [s for s in args.settings.split(",") if s not in SETTINGS]
    if unknown:
        p.error(f"unknown settings: {', '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    manifests = args.manifest or [DEFAULT_MANIFEST, CORPUS_MANIFEST]
    repos = {r.name: r for m in manifests if m.is_file() for r in load_manifest(m)}
    corpora = args.corpus or [c for c in DEFAULT_CORPUS if c.is_file()]
    cases = [case for c in corpora for case in load_corpus(c, repos)]
    if args.case:
        cases = [c for c in cases if any(f in c.ident for f in args.case)]
    if args.part != "all":
        cases = [c for c in cases if c.part == args.part]
    if args.label != "all":
        cases = [c for c in cases if c.label == args.label]
    settings = args.settings.split(",")
    outcomes: list[Outcome] = []
    with temp_dir("rnnfix-corpus-") as work:
        version = (
            Version("ref", checkout_ref(args.rnnfix_repo, args.ref, work / "src"))
            if args.ref
            else Version("installed")
        )
        # Each repository's cases in one thread: they share its extracted trees.
        by_repo: dict[str, list[Case]] = {}
        for case in cases:
            by_repo.setdefault(case.repo, []).append(case)

        def run_repo(group: list[Case]) -> list[Outcome]:
            return [o for c in group for o in check_case(c, repos[c.repo], settings, args, version)]

        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = dict(zip(by_repo, pool.map(run_repo, by_repo.values()), strict=True))
        outcomes = [o for case in cases for o in results[case.repo] if o.case is case]
    for setting in settings:
        mine = [o for o in outcomes if o.setting == setting]
        print(f"== {setting}")
        for o in mine:
            if o.case.part == "dev" or args.show_held:
                print_outcome(o, args.verbose)
        for part in PARTS:
            of_part = [o for o in mine if o.case.part == part]
            if of_part:
                print(f"-- {setting} [{part}]: {totals(of_part)}")
        print(f"-- {setting} [all]: {totals(mine)}")
    if args.json:
        records = [
            {
                "case": o.case.ident,
                "line": o.case.line,
                "label": o.case.label,
                "class": o.case.klass,
                "part": o.case.part,
                "setting": o.setting,
                "verdict": o.verdict,
                "findings": o.codes,
                "edits": o.edits,
                "error": o.error,
            }
            for o in outcomes
        ]
        args.json.write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")
    return 2 if any(o.verdict == "error" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
