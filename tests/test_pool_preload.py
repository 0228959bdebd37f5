"""The worker pool imports the engine and the rules before it forks its
workers: each worker inherits them instead of importing them again at its
first file (with two workers, the import was paid three times a run)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from rnnfix.config.settings import Settings
    from rnnfix.run.pool import FilePool
    from rnnfix.run.process import FileResult, Outcome


    def work(path, settings, write, project):
        # What this worker had before its first file's work imported anything.
        inherited = "rnnfix.run.engine" in sys.modules and "rnnfix.rules" in sys.modules
        return FileResult(str(path), Outcome.UNCHANGED, notes=[str(inherited)])


    paths = [Path(p) for p in sys.argv[1:]]
    with FilePool(work, Settings(), None, 2) as pool:
        print(",".join(r.notes[0] for r in pool.map(paths, False)))
    """
)


def test_workers_inherit_the_engine_and_rules(tmp_path: Path) -> None:
    paths = []
    for i in range(4):
        p = tmp_path / f"m{i}.py"
        p.write_text("x = 1\n")
        paths.append(str(p))
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *paths],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    assert done.stdout.strip() == "True,True,True,True", done.stderr
