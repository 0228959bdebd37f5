"""``rnnfix verify``: run training code under the runtime mode sanitizer.

The sanitizer reproduces cuDNN's "cudnn RNN backward can only be called in
training mode" check on any machine, and records other train/eval mode bugs.
Nothing here imports torch at import time; :func:`install` does.

In-process use::

    from rnnfix import verify
    verify.install(mode="record")
    ...  # train
    for record in verify.records():
        print(record.where(), record.message)
"""

from __future__ import annotations

from rnnfix.verify.records import ProcessReport, Record, Site
from rnnfix.verify.sanitizer import (
    clear_records,
    install,
    is_installed,
    records,
    sweep_unreached,
    uninstall,
)

__all__ = [
    "ProcessReport",
    "Record",
    "Site",
    "clear_records",
    "install",
    "is_installed",
    "records",
    "sweep_unreached",
    "uninstall",
]
