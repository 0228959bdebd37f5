"""Installs the rnnfix mode sanitizer in every Python process of a verified run.

``rnnfix verify`` puts this file's directory on ``PYTHONPATH`` and sets
``RNNFIX_VERIFY_MODE`` (``raise``/``record``), ``RNNFIX_VERIFY_REPORT`` (a
directory for per-process JSON reports) and ``RNNFIX_VERIFY_UNTIL_CLEAN_CYCLE``.
The environment reaches processes that torchrun or ``mp.spawn`` start, which a
runner using ``runpy`` in one process would not.

It stays cheap for processes that never use torch: the sanitizer installs
right after ``import torch`` finishes, through a one-shot import hook. Any
``sitecustomize`` this one shadows is found further down ``sys.path`` and run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

_HERE = os.path.dirname(os.path.abspath(__file__))
# bootstrap/ -> verify/ -> rnnfix/ -> the directory that holds the package
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))


def _load_rnnfix() -> bool:
    """Import what the sanitizer needs now, so the path entries used for it can
    be removed again: the user's ``sys.path`` stays as ``python`` makes it."""
    added = False
    try:
        import rnnfix.verify.sanitizer  # noqa: F401
    except ImportError:
        sys.path.append(_PACKAGE_ROOT)
        added = True
        try:
            import rnnfix.verify.sanitizer  # noqa: F401
        except ImportError:
            return False
    finally:
        if added and _PACKAGE_ROOT in sys.path:
            sys.path.remove(_PACKAGE_ROOT)
    return True


def _install() -> None:
    from rnnfix.verify import sanitizer

    mode = os.environ.get("RNNFIX_VERIFY_MODE", "raise")
    cycle = os.environ.get("RNNFIX_VERIFY_UNTIL_CLEAN_CYCLE")
    try:
        sanitizer.install(
            "record" if mode == "record" else "raise",
            report_dir=os.environ.get("RNNFIX_VERIFY_REPORT") or None,
            until_clean_cycle=cycle in ("1", "seen"),
            stop_when_seen=cycle == "seen",
        )
    except Exception:  # noqa: BLE001 - report, never break the user's program
        _report_failure()


def _report_failure() -> None:
    sys.stderr.write("rnnfix verify: the sanitizer failed to install:\n")
    traceback.print_exc()
    directory = os.environ.get("RNNFIX_VERIFY_REPORT")
    if not directory:
        return
    try:
        from pathlib import Path

        from rnnfix.verify.records import (
            SANITIZER_ERROR,
            ProcessReport,
            Record,
            write_process_report,
        )

        error = Record(SANITIZER_ERROR, "error", f"sanitizer failed: {sys.exc_info()[1]!r}")
        report = ProcessReport(os.getpid(), list(sys.argv), "", records=[error])
        write_process_report(Path(directory), report)
    except Exception:  # noqa: BLE001
        pass


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Finds ``torch`` through the other finders and runs the install right
    after its module body has executed."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_torch = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            exec_torch(module)
            _install()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _chain_shadowed_sitecustomize() -> None:
    others = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _main() -> None:
    if _HERE in sys.path:
        sys.path.remove(_HERE)
    try:
        _chain_shadowed_sitecustomize()
    finally:
        if os.environ.get("RNNFIX_VERIFY_MODE") and _load_rnnfix():
            if "torch" in sys.modules:
                _install()
            else:
                sys.meta_path.insert(0, _AfterTorchImport())


_main()
