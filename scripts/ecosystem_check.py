"""Ecosystem check: what an rnnfix change does to real repositories.

Runs two versions of rnnfix (a git ref of this repository as the base, the
installed one or a second ref as the head) over every repository of a
manifest, each pinned to a commit, under several settings, and prints every
finding and every edit that differs between them, grouped by repository.
Without --base it prints everything the head version finds and edits (a
baseline to keep and compare later).

Repositories come from local snapshots (bare or non-bare git directories,
never fetched by this script and never committed): the manifest's
`github = "owner/name"` is looked up as `<mirrors>/owner+name/repo[/.git]`.
Each pinned commit is extracted once with `git archive` into the cache.

    python scripts/ecosystem_check.py --mirrors /work/.mirror --base main
    python scripts/ecosystem_check.py --mirrors DIR --settings default,strict-unsafe \
        --save /tmp/eco-baseline          # no --base: print and save everything

Exit status: 0 no difference, 1 differences (or, without --base, any edit or
finding), 2 a repository could not be prepared or an rnnfix version crashed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _rnnfix_run import (  # noqa: E402
    SETTINGS,
    Proc,
    RunResult,
    Version,
    invoke,
    parse_json,
    temp_dir,
    wanted,
)

HERE = Path(__file__).resolve().parent
DEFAULT_MANIFEST = HERE / "ecosystem.toml"
DEFAULT_SETTINGS = ("default", "strict", "rnn-only", "strict-unsafe")


@dataclass(frozen=True)
class Repo:
    name: str
    github: str  # owner/name
    commit: str
    kind: str = ""

    @property
    def short(self) -> str:
        return f"{self.github}@{self.commit[:10]}"


def load_manifest(path: Path) -> list[Repo]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    repos = [
        Repo(
            name=str(r["name"]),
            github=str(r["github"]),
            commit=str(r["commit"]),
            kind=str(r.get("kind", "")),
        )
        for r in data.get("repo", [])
    ]
    names = [r.name for r in repos]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise SystemExit(f"{path}: duplicate repository names: {', '.join(sorted(dupes))}")
    return repos


# ---------------------------------------------------------------- snapshots


def find_git_dir(mirrors: Path, github: str) -> Path | None:
    """The snapshot of `owner/name` under `mirrors`, as the `fetch` tool lays it out."""
    base = mirrors / github.replace("/", "+")
    for candidate in (base / "repo" / ".git", base / "repo", base / ".git", base):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def extract(git_dir: Path, commit: str, dest: Path) -> int:
    """Write the files rnnfix reads of `commit` into `dest`; return how many are missing.

    `git ls-tree` lists the tree and `git cat-file --batch` reads only the wanted
    blobs: a snapshot may lack its largest files (images, data), which a plain
    `git archive` would stop at. Symlinks and submodules are left out."""
    dest.mkdir(parents=True, exist_ok=True)
    listing = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--full-tree", commit],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", errors="surrogateescape")
    blobs: list[tuple[str, str]] = []  # (sha, path)
    for entry in listing.split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        mode, kind, sha = meta.split()
        if kind == "blob" and mode in ("100644", "100755") and wanted(Path(path).name):
            blobs.append((sha, path))
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for sha, _ in blobs).encode(),
        capture_output=True,
        check=True,
    )
    out = proc.stdout
    pos = 0
    missing = 0
    for _sha, path in blobs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[1] != b"blob":
            missing += 1  # "<sha> missing": a blob the snapshot does not have
            continue
        size = int(header[2])
        target = dest / path
        if ".." in Path(path).parts:
            raise RuntimeError(f"refusing path {path!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(out[pos : pos + size])
        pos += size + 1
    return missing


def prepare(repo: Repo, mirrors: Path, cache: Path) -> Path:
    """The pristine tree of `repo` at its pinned commit (extracted once per cache)."""
    tree = cache / f"{repo.name}-{repo.commit[:12]}"
    done = cache / f"{repo.name}-{repo.commit[:12]}.done"
    if done.is_file() and tree.is_dir():
        return tree
    git_dir = find_git_dir(mirrors, repo.github)
    if git_dir is None:
        raise RuntimeError(f"no snapshot of {repo.github} under {mirrors}")
    check = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{repo.commit}^{{commit}}"],
        capture_output=True,
    )
    if check.returncode != 0:
        raise RuntimeError(f"{git_dir} does not hold commit {repo.commit}")
    missing = extract(git_dir, repo.commit, tree)
    if missing:
        print(f"   note: {missing} source files absent from the snapshot", flush=True)
    done.write_text(repo.commit + "\n")
    return tree


def checkout_ref(rnnfix_repo: Path, ref: str, dest: Path) -> Path:
    """The `rnnfix` package of `ref`, extracted into `dest` (a PYTHONPATH entry)."""
    dest.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        ["git", "-C", str(rnnfix_repo), "archive", "--format=tar", ref, "--", "rnnfix"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
        tar.extractall(dest, filter="data")
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.wait() != 0:
        raise SystemExit(f"cannot check out rnnfix at {ref!r}: {err.strip()}")
    return dest


# ---------------------------------------------------------------- comparing


def finding_lines(result: RunResult) -> list[str]:
    """One line per finding (and per failed file), independent of the run's order."""
    lines = []
    for d in result.diagnostics:
        fix = d.get("fix")
        if isinstance(fix, dict):
            label = "safe fix" if fix.get("safe") else "unsafe fix"
            tail = f" [{label}: {fix.get('description')}]"
        else:
            tail = " [no fix]"
        cell = f"[cell {d['cell']}]" if d.get("cell") is not None else ""
        lines.append(
            f"{d.get('path')}{cell}:{d.get('line')}:{d.get('column')} {d.get('code')} "
            f"{d.get('message')}{tail}"
        )
    for path, error in result.failed_files():
        lines.append(f"{path}: FAILED {error}")
    return sorted(lines)


@dataclass
class EcoRun:
    """One version under one setting: `--check` JSON for the findings, `--diff` for the edits."""

    check: RunResult
    diff: Proc

    @property
    def failed(self) -> bool:
        return self.check.crashed or self.check.json_error is not None or self.diff.crashed


def run_version(
    version: Version, tree: Path, flags: Sequence[str], *, jobs: int, timeout: float
) -> EcoRun:
    # Neither run writes, so both read the pristine tree in place.
    check = invoke(
        version, tree, ["--check", "--output-format", "json", *flags], jobs=jobs, timeout=timeout
    )
    result = RunResult(returncode=check.returncode, stderr=check.stderr)
    parse_json(check, result)
    diff = invoke(version, tree, ["--diff", *flags], jobs=jobs, timeout=timeout)
    return EcoRun(result, diff)


def diff_blocks(diff: str) -> list[str]:
    """Each changed block of a unified diff as text: `path:line` and its -/+ lines.

    A block is a run of -/+ lines; it is keyed by its line in the original file,
    so an edit elsewhere in the file does not make an unchanged block look
    different, and context lines do not count. A hunk's header says how many
    lines it has, so a removed line that starts with `--` is never a header."""
    out: list[str] = []
    path = "?"
    old_line = old_left = new_left = 0
    block: list[str] = []
    start = 0

    def flush() -> None:
        if block:
            out.append(f"{path}:{start}\n" + "\n".join(block))
            block.clear()

    for line in diff.splitlines():
        if old_left <= 0 and new_left <= 0:
            flush()
            if line.startswith("+++ "):
                path = line[4:].split("\t")[0].removeprefix("b/")
            elif line.startswith("@@"):
                # @@ -a[,b] +c[,d] @@
                old_spec, new_spec = line.split()[1:3]
                old_line = int(old_spec[1:].split(",")[0])
                old_left = int(old_spec.split(",")[1]) if "," in old_spec else 1
                new_left = int(new_spec.split(",")[1]) if "," in new_spec else 1
                # an empty side starts one line later than its number says
                if old_left == 0:
                    old_line += 1
            continue
        if line.startswith(("-", "+")):
            if not block:
                start = old_line
            block.append(line)
            if line.startswith("-"):
                old_line += 1
                old_left -= 1
            else:
                new_left -= 1
        elif line.startswith("\\"):
            continue  # "\ No newline at end of file"
        else:
            flush()
            old_line += 1
            old_left -= 1
            new_left -= 1
    flush()
    return out


def only_in(a: Iterable[str], b: Iterable[str]) -> list[str]:
    """Items of `a` not in `b`, counting duplicates (a multiset difference)."""
    rest = list(b)
    out = []
    for item in a:
        if item in rest:
            rest.remove(item)
        else:
            out.append(item)
    return out


def indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def describe_crash(label: str, run: EcoRun) -> str:
    proc = run.diff if run.diff.crashed else Proc(run.check.returncode, "", run.check.stderr)
    tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
    why = run.check.json_error or ""
    return f"   !! {label} exited {proc.returncode} {why}\n{indent(tail, '      ')}"


def compare(setting: str, base: EcoRun | None, head: EcoRun) -> tuple[list[str], int]:
    """Report lines for one repository and setting, and the number of differences."""
    lines: list[str] = []
    for label, run in (("base", base), ("head", head)):
        if run is not None and run.failed:
            lines.append(describe_crash(label, run))
    head_f, head_e = finding_lines(head.check), diff_blocks(head.diff.stdout)
    if base is None:
        diffs = [("  ", "finding", f) for f in head_f] + [("  ", "edit", e) for e in head_e]
        counts = f"{len(head_f)} findings, {len(head_e)} edits"
    else:
        base_f, base_e = finding_lines(base.check), diff_blocks(base.diff.stdout)
        diffs = (
            [("- ", "finding", f) for f in only_in(base_f, head_f)]
            + [("+ ", "finding", f) for f in only_in(head_f, base_f)]
            + [("- ", "edit", e) for e in only_in(base_e, head_e)]
            + [("+ ", "edit", e) for e in only_in(head_e, base_e)]
        )
        counts = (
            f"base {len(base_f)} findings, {len(base_e)} edits; "
            f"head {len(head_f)} findings, {len(head_e)} edits"
        )
    if not diffs and not lines:
        return [], 0
    lines.insert(0, f"-- {setting}: {counts}")
    for sign, kind, text in diffs:
        first, _, rest = text.partition("\n")
        lines.append(f"   {sign}{kind:8} {first}")
        if rest:
            lines.append(indent(rest, "              "))
    crashed = sum(1 for r in (base, head) if r is not None and r.failed)
    return lines, len(diffs) + crashed


def save(dest: Path, repo: Repo, setting: str, label: str, run: EcoRun) -> None:
    folder = dest / setting
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{repo.name}.{label}"
    (folder / f"{stem}.diff").write_text(
        run.diff.stdout, encoding="utf-8", errors="surrogateescape"
    )
    result = run.check
    record = {
        "repo": repo.github,
        "commit": repo.commit,
        "setting": setting,
        "args": list(SETTINGS[setting]),
        "returncode": result.returncode,
        "stderr": result.stderr,
        "diagnostics": result.diagnostics,
        # A --check run leaves every file "unchanged"; "would_change" says
        # which a write would change (older versions said "changed").
        "files": [
            f for f in result.files if f.get("outcome") != "unchanged" or f.get("would_change")
        ],
    }
    (folder / f"{stem}.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def load_saved(dest: Path, repo: Repo, setting: str, label: str = "head") -> EcoRun | None:
    """A run written by `save` (a baseline kept from an earlier --save), or None."""
    folder = dest / setting
    data_path = folder / f"{repo.name}.{label}.json"
    diff_path = folder / f"{repo.name}.{label}.diff"
    if not data_path.is_file() or not diff_path.is_file():
        return None
    data = json.loads(data_path.read_text(encoding="utf-8"))
    if data.get("commit") != repo.commit:
        return None  # saved for another pin
    check = RunResult(returncode=int(data["returncode"]), stderr=str(data["stderr"]))
    check.diagnostics = list(data["diagnostics"])
    check.files = list(data["files"])
    diff = diff_path.read_text(encoding="utf-8", errors="surrogateescape")
    return EcoRun(check, Proc(check.returncode, diff, ""))


# ---------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    p.add_argument(
        "--mirrors",
        type=Path,
        default=os.environ.get("RNNFIX_ECO_MIRRORS"),
        help="folder of git snapshots, owner+name/repo (env RNNFIX_ECO_MIRRORS)",
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=os.environ.get("RNNFIX_ECO_CACHE"),
        help="keep extracted trees here between runs (env RNNFIX_ECO_CACHE; default: temporary)",
    )
    p.add_argument("--base", help="git ref of rnnfix to compare against (omit: report everything)")
    p.add_argument("--head", help="git ref of rnnfix to test (default: the installed rnnfix)")
    p.add_argument(
        "--rnnfix-repo",
        type=Path,
        default=HERE.parent,
        help="the rnnfix git repository the refs name (default: this script's)",
    )
    p.add_argument(
        "--settings",
        default=",".join(DEFAULT_SETTINGS),
        help=f"comma-separated, from: {', '.join(SETTINGS)}",
    )
    p.add_argument(
        "--against",
        type=Path,
        help="compare with runs saved earlier by --save in this folder, instead of --base",
    )
    p.add_argument("--repo", action="append", default=[], help="only this manifest name (repeat)")
    p.add_argument(
        "--save", type=Path, help="write each run's full diff and JSON under this folder"
    )
    p.add_argument("--jobs", type=int, default=1, help="rnnfix --jobs (default 1)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per rnnfix run")
    args = p.parse_args(argv)
    if args.mirrors is None:
        p.error("--mirrors (or RNNFIX_ECO_MIRRORS) is required")
    if args.base and args.against:
        p.error("--base and --against are exclusive")
    unknown = [s for s in args.settings.split(",") if s not in SETTINGS]
    if unknown:
        p.error(f"unknown settings: {', '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    repos = load_manifest(args.manifest)
    if args.repo:
        missing = set(args.repo) - {r.name for r in repos}
        if missing:
            raise SystemExit(f"not in the manifest: {', '.join(sorted(missing))}")
        by_name = {r.name: r for r in repos}
        repos = [by_name[name] for name in dict.fromkeys(args.repo)]  # in the order given
    settings = args.settings.split(",")
    total_diffs = 0
    errors = 0
    summary: list[str] = []
    with (
        temp_dir("rnnfix-eco-cache-", args.cache) as cache,
        temp_dir("rnnfix-eco-work-") as work,
    ):
        head = (
            Version("head", checkout_ref(args.rnnfix_repo, args.head, work / "head-src"))
            if args.head
            else Version("head")
        )
        base = (
            Version("base", checkout_ref(args.rnnfix_repo, args.base, work / "base-src"))
            if args.base
            else None
        )
        for repo in repos:
            print(f"== {repo.name}  {repo.short}  [{repo.kind}]", flush=True)
            try:
                tree = prepare(repo, args.mirrors, cache)
            except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
                print(f"   !! skipped: {exc}", flush=True)
                summary.append(f"{repo.name:28} SKIPPED ({exc})")
                errors += 1
                continue
            repo_diffs = 0
            for setting in settings:
                flags = SETTINGS[setting]
                runs: dict[str, EcoRun] = {}
                for version in (base, head):
                    if version is None:
                        continue
                    run = run_version(version, tree, flags, jobs=args.jobs, timeout=args.timeout)
                    runs[version.label] = run
                    if args.save:
                        save(args.save, repo, setting, version.label, run)
                    if run.failed:
                        errors += 1
                if args.against:
                    saved = load_saved(args.against, repo, setting)
                    if saved is None:
                        print(f"   !! nothing saved for {setting} in {args.against}", flush=True)
                        errors += 1
                        continue
                    runs["base"] = saved
                lines, n = compare(setting, runs.get("base"), runs["head"])
                repo_diffs += n
                for line in lines:
                    print(line, flush=True)
            total_diffs += repo_diffs
            comparing = base is not None or args.against is not None
            summary.append(f"{repo.name:28} {repo_diffs} {'differences' if comparing else 'items'}")
    print("\n== summary")
    print("\n".join(summary))
    what = "differences" if base or args.against else "findings and edits"
    print(f"{len(repos)} repositories, {total_diffs} {what}, {errors} errors")
    if errors:
        return 2
    return 1 if total_diffs else 0


if __name__ == "__main__":
    sys.exit(main())
