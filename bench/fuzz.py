"""A long property run: the tests of ``tests/test_properties.py`` with many
examples and random seeds (CI runs a few, derandomised).

    python bench/fuzz.py [EXAMPLES]      # default 2000 per test

Prints pytest's summary; a failure shows the smallest program that breaks a
property (Hypothesis shrinks it) and is kept in ``.hypothesis/`` to replay.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    examples = sys.argv[1] if len(sys.argv) > 1 else "2000"
    env = {**os.environ, "RNNFIX_FUZZ_EXAMPLES": examples}
    test = str(ROOT / "tests" / "test_properties.py")
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", test], env=env, cwd=ROOT))
