"""Holds ``sitecustomize.py``, which the runner puts on ``PYTHONPATH``.

This directory (not the package) is what goes on the path, so that every
Python process the verified command starts (torchrun workers, ``mp.spawn``
children) imports the sitecustomize and installs the sanitizer.
"""
