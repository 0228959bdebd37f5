"""Run one rnnfix version over a copy of a folder and collect what it did.

Shared by `ecosystem_check.py` and `robustness.py`. A run always works on a
fresh copy of a pristine tree, in write mode with `--output-format json`: the
JSON gives the findings, and the edits are the difference between the copy and
the pristine tree afterwards. That is the same result `--diff` prints, from one
process instead of two.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

# Settings that write, by name; every script names a subset of these.
SETTINGS: dict[str, tuple[str, ...]] = {
    "default": (),
    "strict": ("--strict",),
    "rnn-only": ("--rnn-only",),
    "unsafe": ("--unsafe-fixes",),
    "strict-unsafe": ("--strict", "--unsafe-fixes"),
    "rnn-only-unsafe": ("--rnn-only", "--unsafe-fixes"),
    "rnn-only-cudnn-off": ("--rnn-only", "--rnn-only-strategy", "cudnn-off"),
    "all": ("--strict", "--unsafe-fixes", "--rnn-only"),
    "rnf006-unsafe": ("--select", "RNF006", "--unsafe-fixes"),
}

# Files rnnfix may edit, and the files its discovery and configuration read:
# a copy keeps only these (a research repository's data and images stay behind).
EDITABLE_SUFFIXES = (".py", ".pyi", ".ipynb")
CONFIG_NAMES = frozenset({".gitignore", "pyproject.toml", "pyvenv.cfg"})


def wanted(name: str) -> bool:
    return name.endswith(EDITABLE_SUFFIXES) or name in CONFIG_NAMES


@dataclass(frozen=True)
class Version:
    """How to start one rnnfix: `python -m rnnfix` with an optional PYTHONPATH."""

    label: str
    pythonpath: Path | None = None  # None: whatever `import rnnfix` finds in this interpreter

    def command(self) -> list[str]:
        # -P keeps the target folder (the cwd) off sys.path, so a repository
        # with its own `rnnfix` folder cannot shadow the version under test.
        flags = ["-P"] if sys.version_info >= (3, 11) else []
        return [sys.executable, *flags, "-m", "rnnfix"]

    def supports(self, option: str) -> bool:
        """Whether this version's `apply` knows `option` (versions differ: --no-cache is newer)."""
        if option not in _HELP_CACHE.setdefault(self, {}):
            proc = subprocess.run(
                [*self.command(), "apply", "--help"],
                env=self.env(),
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
            )
            _HELP_CACHE[self][option] = option in proc.stdout
        return _HELP_CACHE[self][option]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        if self.pythonpath is not None:
            env["PYTHONPATH"] = str(self.pythonpath)
        return env


_HELP_CACHE: dict[Version, dict[str, bool]] = {}


@dataclass
class RunResult:
    """What one rnnfix process did to one tree."""

    returncode: int
    stderr: str
    diagnostics: list[dict[str, object]] = field(default_factory=list)
    files: list[dict[str, object]] = field(default_factory=list)
    # path (relative, '/'-separated) -> (old text, new text) for every file that changed
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    json_error: str | None = None

    @property
    def crashed(self) -> bool:
        return Proc(self.returncode, "", self.stderr).crashed

    def failed_files(self) -> list[tuple[str, str]]:
        return [
            (str(f.get("path")), str(f.get("error")))
            for f in self.files
            if f.get("outcome") == "failed"
        ]


def copy_tree(src: Path, dst: Path) -> None:
    """Copy the files rnnfix reads, without following symlinks (a link stays a link)."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        base = Path(folder)
        return {n for n in names if not (base / n).is_dir() or (base / n).is_symlink()} - {
            n for n in names if wanted(n)
        }

    shutil.copytree(src, dst, symlinks=True, ignore=ignore)


def read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def changed_files(pristine: Path, edited: Path) -> dict[str, tuple[str, str]]:
    """Files under `edited` whose bytes differ from `pristine` (rnnfix adds no files)."""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(edited.rglob("*")):
        if path.is_symlink() or not path.is_file() or not path.name.endswith(EDITABLE_SUFFIXES):
            continue
        rel = path.relative_to(edited)
        before = pristine / rel
        new = path.read_bytes()
        old = before.read_bytes() if before.is_file() else b""
        if new != old:
            out[rel.as_posix()] = (
                old.decode("utf-8", errors="surrogateescape"),
                new.decode("utf-8", errors="surrogateescape"),
            )
    return out


@dataclass
class Proc:
    returncode: int
    stdout: str
    stderr: str

    @property
    def crashed(self) -> bool:
        """rnnfix itself failed: an internal error, a traceback, killed or timed out.

        Exit 2 alone is not a crash: rnnfix also exits 2 when a file could not be
        read or parsed, which it reports per file."""
        return (
            self.returncode not in (0, 1, 2)
            or "Traceback (most recent call last)" in self.stderr
            or "rnnfix: internal error" in self.stderr
        )


def invoke(
    version: Version, cwd: Path, args: Sequence[str], *, jobs: int = 1, timeout: float = 1800.0
) -> Proc:
    """`rnnfix apply --quiet --jobs N ARGS .` in `cwd`."""
    # A result cache would let one run answer from another's results (and write
    # into the tree): every run here starts cold.
    no_cache = ["--no-cache"] if version.supports("--no-cache") else []
    cmd = [*version.command(), "apply", "--quiet", "--jobs", str(jobs), *no_cache, *args, "."]
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=version.env(),
            capture_output=True,
            text=True,
            errors="surrogateescape",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return Proc(returncode=-1, stdout="", stderr=f"timed out after {timeout:.0f}s")
    return Proc(proc.returncode, proc.stdout, proc.stderr)


def parse_json(proc: Proc, result: RunResult) -> None:
    try:
        data = json.loads(proc.stdout) if proc.stdout.strip() else {}
        result.diagnostics = list(data.get("diagnostics", []))
        result.files = list(data.get("files", []))
    except (json.JSONDecodeError, AttributeError) as exc:
        result.json_error = f"{type(exc).__name__}: {exc}"


def run_rnnfix(
    version: Version,
    pristine: Path,
    workdir: Path,
    args: Sequence[str],
    *,
    jobs: int = 1,
    timeout: float = 1800.0,
) -> RunResult:
    """Copy `pristine` to `workdir`, run `rnnfix apply` there in write mode, collect the result.

    In write mode the JSON lists the files and the findings left; the edits are
    read back from the copy."""
    if workdir.exists():
        shutil.rmtree(workdir)
    copy_tree(pristine, workdir)
    proc = invoke(version, workdir, ["--output-format", "json", *args], jobs=jobs, timeout=timeout)
    result = RunResult(returncode=proc.returncode, stderr=proc.stderr)
    parse_json(proc, result)
    result.changed = changed_files(pristine, workdir)
    return result


def unified(path: str, old: str, new: str, context: int = 3) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
            n=context,
        )
    )


def full_diff(changed: dict[str, tuple[str, str]]) -> str:
    return "".join(unified(path, old, new) for path, (old, new) in sorted(changed.items()))


@contextmanager
def temp_dir(prefix: str, keep: Path | None = None) -> Iterator[Path]:
    """A scratch folder: `keep` if given (created, left in place), else a temporary one."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)
