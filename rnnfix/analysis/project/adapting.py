"""Module classes of a project that train in their own ``forward``.

Test-time adaptation (Tent, CoTTA, RPL, EATA and their copies) wraps a
network in a module whose ``forward`` computes a loss on the test batch,
calls ``backward()`` and steps an optimizer, then returns the outputs:

    class Tent(nn.Module):
        def forward(self, x):
            outputs = self.model(x)
            softmax_entropy(outputs).mean(0).backward()
            self.optimizer.step()
            return outputs

The evaluation loop that calls such a model (``output = model(images)``)
must run with grad enabled and in the mode the method chose: ``no_grad``
there breaks the first ``backward`` ("element 0 of tensors does not require
grad"), ``eval()`` undoes the adaptation's train mode. Which class a loop's
``model`` is often shows only at run time (``registery.init(args.mode,
model)``), so RNF003 asks whether the project holds any such class at all
(``adapting_classes``) before it edits a loop whose model it cannot place.

Read from the text of the project's files (the ones a run of the file could
import: ``tree.project_python_files``), not from the run's index: the
classes are typically registered by a package ``__init__`` the evaluation
script never names. A file is parsed only when its text holds ``def
forward``, ``backward(`` and ``.step(``; a class counts when its
``forward``, or a method or module-level function of its file that the
forward calls by name, calls both a ``backward`` and a ``step``.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from rnnfix.analysis.project.tree import project_python_files
from rnnfix.analysis.syntax.walks import FUNCTIONS
from rnnfix.source.files import FileProblem, read_source

# path -> ((modification time, size), the adapting classes of that file)
_SEEN: dict[str, tuple[tuple[int, int], frozenset[str]]] = {}


def adapting_classes(path: str, source: str, whole_project: bool) -> frozenset[str]:
    """Names of the module classes that train in their ``forward``, in the
    file at ``path`` (its ``source``) and, with ``whole_project``, in the
    other files of its project."""
    found = set(classes_in(source))
    if not whole_project:
        return frozenset(found)
    files = project_python_files(os.path.dirname(os.path.abspath(path)))
    if not files:
        return frozenset(found)
    project = _PROJECTS.get(files)
    if project is None:
        # Once per project and process (the file list is itself cached so),
        # not once per file of a large tree.
        project = _PROJECTS[files] = frozenset().union(*map(_file_classes, files))
    # The file's own text as the run reads it, not as it is on disk.
    others = project - _file_classes(os.path.abspath(path))
    return frozenset(found | others)


# The project's files (``tree.project_python_files``' answer) -> their classes.
_PROJECTS: dict[tuple[str, ...], frozenset[str]] = {}


def _file_classes(path: str) -> frozenset[str]:
    try:
        st = os.stat(path)
    except OSError:
        return frozenset()
    stamp = (st.st_mtime_ns, st.st_size)
    known = _SEEN.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        _raw, decoded = read_source(Path(path))
        found = classes_in(decoded.text)
    except (FileProblem, OSError, ValueError):
        found = frozenset()
    _SEEN[path] = (stamp, found)
    return found


def classes_in(source: str) -> frozenset[str]:
    if "def forward" not in source or "backward(" not in source or ".step(" not in source:
        return frozenset()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    functions = {s.name: s for s in tree.body if isinstance(s, FUNCTIONS)}
    out: set[str] = set()
    for cls in (s for s in ast.walk(tree) if isinstance(s, ast.ClassDef)):
        methods = {s.name: s for s in cls.body if isinstance(s, FUNCTIONS)}
        forward = methods.get("forward")
        if forward is None:
            continue
        bodies: list[ast.AST] = [forward]
        for n in ast.walk(forward):
            if isinstance(n, ast.Call):
                func = n.func
                if isinstance(func, ast.Name) and func.id in functions:
                    bodies.append(functions[func.id])
                elif (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == "self"
                    and func.attr in methods
                ):
                    bodies.append(methods[func.attr])
        called = {
            n.func.attr
            for body in bodies
            for n in ast.walk(body)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        }
        if "backward" in called and "step" in called:
            out.add(cls.name)
    return frozenset(out)
