"""The project index: what the functions and classes of the *other* files of
one ``apply`` run do, so that the mode flow can follow a call into them.

``ProjectIndex.build(paths)`` reads every ``.py`` file of the run once, before
anything is written, and keeps for each a ``ModuleSummary`` of plain,
picklable data (worker processes get the index):

- for each module-level function and each method of a module-level class
  whose body switches modes or trains (``MODE_TOKENS``), and the functions of
  its file it calls or that call it (``_pruned``; the rest of the file is not
  analysed), the mode flow's own ``Summary`` (``modeflow.ModeFlow.summary``,
  computed with ``summaries_only=True``): which of its parameters / ``self.<attr>``
  it sets to eval or train, or restores, which it runs a forward of, whether
  it runs an optimizer step, and which models its training step uses in the
  mode the caller left them in;
- for each class: whether it is an ``nn.Module`` subclass and which cuDNN RNNs
  an instance holds (``rnns.RnnIndex.of_class``); for a module class, why
  ``train()``/``eval()`` cannot be called on an instance (an override without
  ``mode``, or that is another method; its bases' and submodules' in its file
  too) and whether it holds parameters or mode-dependent layers
  (``receivers.ClassTable``). A file that only defines ``def train(``/``def
  eval(`` passes the pre-filter for this;
- its import bindings, to follow re-exports (``from .trainer import fit`` in a
  package's ``__init__.py``).

A file that the text pre-filter rules out (none of ``.eval(``, ``.train(``,
``.backward(``, ``.step(``, ``LSTM``, ``GRU``, ``RNN``) is not parsed: it stays
in the index, so that imports of it resolve (and a run can tell it depends on
it), with no summary. Package ``__init__.py`` files are parsed for their
imports only.

Module names resolve the way Python would from the importing file: ``import
utils`` / ``from pkg.utils import f`` find ``<D>/utils.py`` or
``<D>/pkg/utils.py`` (or a package's ``__init__.py``) for the nearest folder
``D`` that is the importing file's own folder (a script run from its folder)
or one of its ancestors (a repository root on ``sys.path``); ``from .x import
y`` resolves against the importing file's package. Only the files in the
index answer: the run's files and the project files outside the run that
they import (``rnnfix.analysis.project.imported`` finds those on disk; ``--isolated``
leaves them out).

Calls between other files are followed one level deep: a summary is computed
on its own file without an index, so a helper of ``utils.py`` that calls into
``helpers.py`` is followed inside ``utils.py``'s own functions but not on into
``helpers.py``.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rnnfix.analysis.project.bindings import Binding, import_bindings, stars, statements
from rnnfix.analysis.project.callers import Callers, CallFact, CallsOut, Reader
from rnnfix.analysis.project.summaries import (
    ClassSummary,
    FunctionSummary,
    ModuleSummary,
    ReturnSummary,
    SelfUses,
)
from rnnfix.analysis.project.texts import DEFINED_NAME, IMPORT_LINE, LOAD_CODE, MAX_REEXPORTS
from rnnfix.analysis.project.view import Index, ProjectView

if TYPE_CHECKING:
    from rnnfix.analysis.context import FileContext
    from rnnfix.analysis.modes.objectuse import Order


def normalise(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.fspath(path))


_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


class LazySummaries(Mapping[str, "ModuleSummary | None"]):
    """The files of a run (absolute path -> path as given) and their summaries,
    each computed from the file on disk at its first lookup and kept. Plain
    picklable data, like the summaries: worker processes get it once and fill
    in their own lookups. Membership (``key in files``: is this module part of
    the run?) never reads a file."""

    def __init__(
        self, paths: dict[str, Path], known: dict[str, ModuleSummary | None] | None = None
    ) -> None:
        self._paths = paths
        self._known: dict[str, ModuleSummary | None] = dict(known or {})

    # A folder the worker processes of one run share (``share_in``): a
    # summary one of them computed is read back by the others instead of
    # computed again (the files most files import are summarised by every
    # worker otherwise).
    _shared: str | None = None

    def share_in(self, folder: str | None) -> None:
        self._shared = folder

    def __getitem__(self, key: str) -> ModuleSummary | None:
        if key not in self._known:
            if key not in self._paths:
                raise KeyError(key)
            if self._shared is None:
                self._known[key] = _summarise_file(self._paths[key], key)
            else:
                self._known[key] = _shared_summary(self._shared, self._paths[key], key)
        return self._known[key]

    def __contains__(self, key: object) -> bool:
        return key in self._paths or key in self._known

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(self._paths), **dict.fromkeys(self._known)})

    def __len__(self) -> int:
        return len(self._paths.keys() | self._known.keys())

    def with_changes(self, changes: dict[str, ModuleSummary | None]) -> LazySummaries:
        updated = LazySummaries(self._paths, {**self._known, **changes})
        updated._shared = self._shared  # a changed file's summary is in ``_known``: never read
        return updated

    def text_has(self, key: str, pattern: re.Pattern[bytes]) -> bool:
        """Whether the file on disk matches ``pattern`` (True when it is not
        read from disk: a summary given as data, or unreadable)."""
        if key in self._known or key not in self._paths:
            return True
        memo = self.__dict__.setdefault("_text", {})
        if (key, pattern) not in memo:
            data = _read(self._paths[key])
            memo[key, pattern] = data is None or pattern.search(data) is not None
        return bool(memo[key, pattern])

    def may_define(self, key: str, name: str, classes: bool = False) -> bool:
        """Whether the file on disk may define a function ``name`` (or, with
        ``classes``, a class): its text has ``def name`` (``class name``), the
        parts maybe split by spaces or a continued line. True when it is not
        read from disk, unreadable, or for a name other than ASCII
        (identifiers are NFKC-normalised)."""
        if key in self._known or key not in self._paths or not name.isascii():
            return True
        memo = self.__dict__.setdefault("_defined", {})
        if key not in memo:
            data = _read(self._paths[key])
            found: dict[bytes, set[str]] = {b"def": set(), b"class": set()}
            for keyword, defined in DEFINED_NAME.findall(data or b""):
                found[keyword].add(defined.decode())
            memo[key] = (
                None if data is None else (frozenset(found[b"def"]), frozenset(found[b"class"]))
            )
        names: tuple[frozenset[str], frozenset[str]] | None = memo[key]
        return names is None or name in names[0] or (classes and name in names[1])

    def defined_names(self, key: str) -> frozenset[str] | None:
        """The names the file's text shows defined by ``def`` or ``class``
        (at any depth: a necessary condition for a module-level one); None
        when it is not read from disk or is unreadable (anything may be)."""
        if key in self._known or key not in self._paths:
            return None
        self.may_define(key, "_")  # fills the memo
        names: tuple[frozenset[str], frozenset[str]] | None = self.__dict__["_defined"][key]
        return None if names is None else names[0] | names[1]

    def may_call(self, key: str, name: str) -> bool:
        """Whether ``name`` may be in the file's ``ModuleSummary.called``,
        read without summarising it: ``called`` holds the names its text
        shows called (``name(``) less the functions it defines. True when the
        file is not read from disk, is unreadable, or for a name other than
        ASCII."""
        if key in self._known or key not in self._paths or not name.isascii():
            return True
        data = _read(self._paths[key])
        if data is None:
            return True
        word = re.escape(name.encode())
        # ``\s`` of ``str`` patterns: ASCII whitespace, \x1c-\x1f, and non-ASCII.
        if re.search(rb"\b" + word + rb"(?:[\s\x1c-\x1f]|[\x80-\xff])*\(", data) is None:
            return False
        if re.search(rb"\bdef[ \t\f\\\r\n]+" + word + rb"\b", data) is None:
            return True  # defines no function of that name
        return name not in self._functions_defined(key, data)

    def _functions_defined(self, key: str, data: bytes) -> frozenset[str]:
        """The names of every function the file defines, at any depth (the
        ``defined`` that ``summarise`` takes from ``called``)."""
        memo = self.__dict__.setdefault("_functions", {})
        if key not in memo:
            try:
                tree = ast.parse(data)
            except (SyntaxError, ValueError, RecursionError):
                memo[key] = frozenset()  # summarise gives such a file no summary
            else:
                memo[key] = frozenset(
                    n.name
                    for n in statements(tree.body)
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                )
        found: frozenset[str] = memo[key]
        return found

    def bindings(self, key: str, name: str) -> dict[str, Binding] | None:
        """The import bindings of a file, for following the re-export of
        ``name``: from its summary when there is one, else parsed (never
        summarised); {} when its text does not name ``name``; None when unknown."""
        if key in self._known:
            known = self._known[key]
            return known.imports if known is not None else {}
        if key not in self._paths:
            return None
        data = _read(self._paths[key])
        if data is None:
            return None
        if name.isascii() and name.encode() not in data and b"*" not in data:
            return {}  # (``from m import *`` may bind it without naming it)
        # Most files have only plain import lines: read from the text.
        lines = self.__dict__.setdefault("_text_bindings", {})
        if key not in lines:
            from rnnfix.analysis.project.importtext import text_bindings

            lines[key] = text_bindings(data)
        read = lines[key]
        if read is not None and name not in read.ambiguous:
            text: dict[str, Binding] = read.bindings
            return text
        memo = self.__dict__.setdefault("_bindings", {})
        if key not in memo:
            try:
                memo[key] = import_bindings(ast.parse(data))
            except (SyntaxError, ValueError, RecursionError):
                memo[key] = None
        found: dict[str, Binding] | None = memo[key]
        return found


def _shared_summary(folder: str, path: Path, key: str) -> ModuleSummary | None:
    """The summary of ``key`` from ``folder`` when another process of the run
    stored it there, else computed and stored. The folder lives only as long
    as the run, whose files do not change under it: the path is the key. Any
    failure to read or write it just means computing the summary here."""
    import hashlib
    import pickle
    import tempfile

    entry = os.path.join(folder, hashlib.sha1(key.encode()).hexdigest())
    try:
        with open(entry, "rb") as f:
            known: ModuleSummary | None = pickle.load(f)
        return known
    except Exception:  # noqa: BLE001 - absent, being written, unreadable: compute it
        pass
    summary = _summarise_file(path, key)
    try:
        # Written whole under another name, then renamed: a reader sees all of it or nothing.
        fd, tmp = tempfile.mkstemp(dir=folder)
        with os.fdopen(fd, "wb") as f:
            pickle.dump(summary, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except Exception:  # noqa: BLE001 - a full disk, an unpicklable summary: not shared
        pass
    return summary


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def called_elsewhere(
    project: Index | None, path: str, name: str, consulted: set[str] | None = None
) -> bool:
    """Whether a file of the run other than ``path`` calls a function named
    ``name`` (``ModuleSummary.called``). A file whose text cannot put ``name``
    in ``called`` (no ``name(`` in it, or a ``def name`` of its own) is never
    summarised. The answer rests on every other file's text: they all go into
    ``consulted`` (an edit of any of them re-checks the asking file)."""
    if project is None:
        return False
    me = normalise(path)
    files = project.files
    others = [key for key in files if key != me]
    if consulted is not None:
        consulted.update(others)
    for key in others:
        if isinstance(files, LazySummaries) and not files.may_call(key, name):
            continue
        module = files[key]
        if module is not None and name in module.called:
            return True
    return False


def called_from_other_files(ctx: FileContext, name: str) -> bool:
    """``called_elsewhere`` for the file ``ctx`` checks, the files read
    recorded as consulted by its result."""
    view = ctx.facts.project
    return called_elsewhere(
        ctx.project, ctx.path, name, view.consulted if view is not None else None
    )


def _returns_of_file(key: str) -> ReturnSummary | None:
    from rnnfix.analysis.syntax.imports import ImportMap
    from rnnfix.analysis.torch.returns import ReturnFacts
    from rnnfix.source.files import FileProblem, read_source

    try:
        text = read_source(Path(key))[1].text
    except (FileProblem, OSError):
        return None
    try:
        tree = ast.parse(text)
        # A file without ``return`` still re-exports (a package's ``__init__.py``).
        functions = ReturnFacts(tree, ImportMap.build(tree)).summaries() if "return" in text else {}
    except (SyntaxError, ValueError, RecursionError):
        return None
    return ReturnSummary(functions, import_bindings(tree))


def _self_uses_of_file(key: str) -> SelfUses | None:
    from rnnfix.analysis.project.selfuses import self_uses
    from rnnfix.source.files import FileProblem, read_source

    try:
        return self_uses(ast.parse(read_source(Path(key))[1].text))
    except (FileProblem, OSError, SyntaxError, ValueError, RecursionError):
        return None


def _summarise_file(path: Path, key: str) -> ModuleSummary | None:
    # Imported here: ``summarise`` runs every analysis of a file, and those
    # (the mode flow among them) ask the index about other files.
    from rnnfix.analysis.project.summarise import summarise
    from rnnfix.source.files import FileProblem, read_source

    try:
        text = read_source(path)[1].text
    except FileProblem:
        return None
    return summarise(text, key)


class ProjectIndex:
    """Summaries of the files of one run, by absolute path (None: in the run,
    but nothing in it the mode flow could use)."""

    def __init__(self, files: Mapping[str, ModuleSummary | None]) -> None:
        self.files = files
        # Every folder and module name on the way to a file of the run: the
        # first part of any import that can resolve to one of them is among
        # these (any ancestor folder may be the one on ``sys.path``).
        self.names = frozenset(
            part
            for path in files
            for part in Path(path).with_suffix("").parts
            if part.isidentifier()
        )
        self._resolved: dict[tuple[str, int, tuple[str, ...]], tuple[str, tuple[str, ...]] | None]
        self._resolved = {}
        self._orders: dict[tuple[str, str], tuple[Order, frozenset[str]]] = {}
        self._returns: dict[str, ReturnSummary | None] = {}
        self._self_uses: dict[str, SelfUses | None] = {}
        self._calls_out: dict[str, CallsOut | None] = {}
        self._words: dict[str, frozenset[bytes] | None] = {}
        self._stem_set: frozenset[str] | None = None
        self._stems_known = False

    @classmethod
    def build(cls, paths: Iterable[Path]) -> ProjectIndex:
        """An index of ``paths`` whose summaries are computed when first
        looked up (``LazySummaries``): a file that nothing of the run imports
        is never read for the index, and most files of a large tree are such."""
        return cls(LazySummaries({normalise(p): p for p in paths if p.suffix == ".py"}))

    def updated(self, changes: dict[str, ModuleSummary | None]) -> ProjectIndex:
        if isinstance(self.files, LazySummaries):
            return ProjectIndex(self.files.with_changes(changes))
        return ProjectIndex({**self.files, **changes})

    def view(self, path: str, tree: ast.Module, source: str | None = None) -> ProjectView:
        """``source``: when given, a file whose import lines name nothing of
        the run is not walked for its imports at all (most files of a large tree)."""
        if source is not None and not self.may_import(source):
            return ProjectView(self, normalise(path), tree, bindings={})
        return ProjectView(self, normalise(path), tree)

    def returns_of(self, file: str) -> ReturnSummary | None:
        """What the functions of ``file`` (a file of the index) return, read
        from disk at the first question and kept."""
        if file not in self._returns:
            self._returns[file] = _returns_of_file(file) if file in self.files else None
        return self._returns[file]

    def self_uses_of(self, file: str) -> SelfUses | None:
        """What the classes of ``file`` (a file of the index) read on
        ``self``, read from disk at the first question and kept."""
        if file not in self._self_uses:
            self._self_uses[file] = _self_uses_of_file(file) if file in self.files else None
        return self._self_uses[file]

    def callers(
        self,
        file: str,
        name: str,
        read: Reader,
        consulted: set[str],
        outside: Iterable[str] = (),
    ) -> Callers:
        """Every call of the module-level function ``name`` of ``file`` in the
        other files of the run and in ``outside`` (the project's files beyond
        the run: a script that imports it, read but never fixed), the reverse
        call index of ``callers.py``. Only files whose text names ``name`` are
        read, each once for all its calls (``read``). Every file is
        consulted: a new call anywhere changes the answer."""
        files = self.files
        if not isinstance(files, LazySummaries):
            return Callers((), "the other files are known only by their summaries")
        word = re.compile(rb"\b" + re.escape(name.encode()) + rb"\b")
        found: list[CallFact] = []
        for key in dict.fromkeys([*files, *outside]):
            if key == file:
                continue
            consulted.add(key)
            if name.isascii() and not self._names(key, name, word):
                continue
            if key not in self._calls_out:
                self._calls_out[key] = read(key)
            out = self._calls_out[key]
            where = os.path.basename(key)
            if out is None:
                return Callers((), f"`{where}` names `{name}` and cannot be read")
            if name in out.unresolved:
                return Callers((), f"`{where}` calls a `{name}` rnnfix cannot follow")
            if (file, name) in out.referenced:
                return Callers((), f"`{where}` passes `{name}` on as a value")
            found.extend(out.calls.get((file, name), ()))
        return Callers(tuple(found), None)

    def _names(self, key: str, name: str, word: re.Pattern[bytes]) -> bool:
        """Whether the text of ``key`` may name ``name`` (``word``, its
        pattern): ``LazySummaries.text_has`` for a file of the index, the
        kept identifiers (``words_of``) for a project file beyond it."""
        files = self.files
        if key in files and isinstance(files, LazySummaries):
            return files.text_has(key, word)
        words = self.words_of(key)
        return words is None or name.encode() in words

    def words_of(self, path: str) -> frozenset[bytes] | None:
        """The identifiers in the text of ``path`` (a project file beyond the
        run), read once and kept: the reverse call index and the pytest
        question ask about many names of the same files. None when unreadable."""
        if path not in self._words:
            data = _read(Path(path))
            self._words[path] = None if data is None else frozenset(_IDENTIFIER.findall(data))
        return self._words[path]

    def definition(
        self, file: str, names: tuple[str, ...], consulted: set[str]
    ) -> tuple[str, tuple[str, ...]] | None:
        """Where ``names`` of ``file`` is defined, following re-exports through
        import lines as ``member`` does, never summarising; None when a
        file's imports cannot be read (it may be anything)."""
        files = self.files
        if not isinstance(files, LazySummaries):
            return None
        for _ in range(MAX_REEXPORTS + 1):
            consulted.add(file)
            if not names or files.may_define(file, names[0], classes=True):
                return file, names
            found = self._reexport(files, file, names)
            if found is True:
                return None
            if found is False:
                return file, names  # defined nowhere else of the run: not a function of it
            assert not isinstance(found, bool)
            file, names = found
        return None

    def may_import(self, source: str) -> bool:
        """A text pre-filter: an import line of ``source`` is relative or names
        a folder or module of the run."""
        for m in IMPORT_LINE.finditer(source):
            if m.group(1):
                return True
            names = m.group(2) or m.group(3)
            for name in names.split(","):
                first = name.strip().split(".")[0].split(" ")[0]
                if first in self.names:
                    return True
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProjectIndex) and self.files == other.files

    __hash__ = None  # type: ignore[assignment]

    # --- module names -> files ---------------------------------------------
    def resolve(
        self, importer: str, level: int, parts: tuple[str, ...]
    ) -> tuple[str, tuple[str, ...]] | None:
        """(file, names inside it) for the dotted ``parts`` imported by
        ``importer``: the longest prefix that is a module of the run."""
        folder = os.path.dirname(importer)
        key = (folder, level, parts)
        if key not in self._resolved:  # the files of a folder import the same names
            self._resolved[key] = self._resolve(folder, level, parts)
        return self._resolved[key]

    def _resolve(
        self, folder: str, level: int, parts: tuple[str, ...]
    ) -> tuple[str, tuple[str, ...]] | None:
        if level:
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            roots, shortest = [folder], 0
        else:
            roots, shortest = _ancestors(folder), 1
        stems = self._stems() if parts else None
        for root in roots:
            # No file of the run lies under ``root/<first part>``: only the
            # package's own ``__init__.py`` (``parts[:0]``) may answer.
            longest = len(parts)
            if stems is not None and os.path.join(root, parts[0]) not in stems:
                longest = 0
            for i in range(longest, shortest - 1, -1):
                found = self._module_file(root, parts[:i])
                if found is not None:
                    return found, parts[i:]
        return None

    def _stems(self) -> frozenset[str] | None:
        """Every path ``_module_file`` can find a file of the run under: each
        file without ``.py`` and each of its folders. None (no shortcut) when
        a path of the index is not absolute and normal (summaries given as
        data), where joining strings need not give the same text."""
        if not self._stems_known:
            self._stems_known = True
            stems: set[str] | None = set()
            for path in self.files:
                if stems is None or not os.path.isabs(path) or os.path.normpath(path) != path:
                    stems = None
                    break
                if path.endswith(".py"):
                    stems.add(path[:-3])
                folder = os.path.dirname(path)
                while folder not in stems:
                    stems.add(folder)
                    parent = os.path.dirname(folder)
                    if parent == folder:
                        break
                    folder = parent
            self._stem_set = frozenset(stems) if stems is not None else None
        return self._stem_set

    def _module_file(self, root: str, parts: tuple[str, ...]) -> str | None:
        stem = os.path.join(root, *parts)
        for candidate in (stem + ".py", os.path.join(stem, "__init__.py")) if parts else ():
            if candidate in self.files:
                return candidate
        init = os.path.join(root, "__init__.py")
        return init if not parts and init in self.files else None

    def member(
        self, file: str, names: tuple[str, ...], consulted: set[str], depth: int = 0
    ) -> FunctionSummary | ClassSummary | None:
        """``names`` (``("evaluate",)``, ``("Trainer", "fit")``) in ``file``,
        following re-exports."""
        consulted.add(file)
        module = self.files.get(file)
        if module is None or not names:
            return None
        head, rest = names[0], names[1:]
        if head in module.functions:
            return module.functions[head] if not rest else None
        if head in module.classes:
            cls = module.classes[head]
            if not rest:
                return cls
            return cls.methods.get(rest[0]) if len(rest) == 1 else None
        binding = module.imports.get(head)
        if depth >= MAX_REEXPORTS:
            return None
        if binding is None:
            # ``from .tensor import *`` in a package's ``__init__.py``: the
            # name may be any star-imported module's (the last one's first).
            for level, parts in stars(module.imports):
                found = self.resolve(file, level, parts + names)
                if found is not None and found[0] != file:
                    member = self.member(found[0], found[1], consulted, depth + 1)
                    if member is not None:
                        return member
            return None
        found = self.resolve(file, binding[0], binding[1] + rest)
        if found is None or found[0] == file:
            return None
        return self.member(found[0], found[1], consulted, depth + 1)

    def method_order(self, file: str, class_name: str) -> tuple[Order, frozenset[str]]:
        """Which methods the other files of the run call on an instance of
        ``class_name`` of ``file`` before which (``objectuse.method_order``),
        and the files that name the class. Only files whose text names the class
        are parsed; summaries given as data (no files on disk) show nothing.
        The mode flow asks this only for a class with a public method that
        may leave a model in eval and a training method called in its file."""
        key = (file, class_name)
        if key in self._orders:
            return self._orders[key]
        paths = self.files._paths if isinstance(self.files, LazySummaries) else {}
        if not any(path != file for path in paths):
            # The file alone (``rnnfix apply train.py``): no other file to
            # call anything, so its own summary is not needed either.
            self._orders[key] = (frozenset(), frozenset())
            return self._orders[key]
        module = self.files.get(file)
        cls = module.classes.get(class_name) if module is not None else None
        found: set[tuple[str, str]] = set()
        shown: set[str] = set()
        name = class_name.encode()
        for path in paths if cls is not None else ():
            if path == file:
                continue
            order = self._order_in(path, paths[path], name, cls)
            if order is not None:
                found |= order
                shown.add(path)
        self._orders[key] = (frozenset(found), frozenset(shown))
        return self._orders[key]

    def _order_in(
        self, path: str, disk: Path, name: bytes, cls: ClassSummary | None
    ) -> Order | None:
        """None for a file that never names the class (not parsed)."""
        from rnnfix.analysis.modes.objectuse import method_order
        from rnnfix.source.files import FileProblem, read_source

        try:
            if name not in disk.read_bytes():
                return None
            tree = ast.parse(read_source(disk)[1].text)
        except (OSError, FileProblem, SyntaxError, ValueError):
            return None
        view = ProjectView(self, path, tree)
        return method_order(tree, lambda expr: view.lookup(expr) is cls)

    def star_names(self, file: str, consulted: set[str]) -> frozenset[str] | None:
        """What ``from <file's module> import *`` may bind that rnnfix can
        look up: the functions and classes the file's text defines (None:
        anything, for summaries given as data or an unreadable file)."""
        consulted.add(file)
        files = self.files
        if not isinstance(files, LazySummaries):
            module = files.get(file)
            return None if module is None else frozenset([*module.functions, *module.classes])
        return files.defined_names(file)

    def may_load_from(self, file: str, name: str, consulted: set[str], depth: int = 0) -> bool:
        """A necessary condition for ``ProjectView.loader`` to find the
        module-level name ``name`` of ``file`` a loader (``_module_fact`` over
        ``ModuleSummary.loaders``), never summarising: a summary already
        computed answers as ``_module_fact`` reads it; a file on disk records
        loaders only when its text has loading text (``LOAD_TOKENS``) and
        ``def name``; else the name is followed on through the file's import
        binding, as ``_module_fact`` does."""
        files = self.files
        if not isinstance(files, LazySummaries):
            return True
        consulted.add(file)
        if file in files._known:
            module = files._known[file]
            if module is None:
                return False
            if name in module.loaders or name in module.loads_into:
                return True
        elif files.text_has(file, LOAD_CODE) and files.may_define(file, name):
            return True
        if depth >= MAX_REEXPORTS:
            return False
        bindings = files.bindings(file, name)
        if bindings is None:
            return True
        binding = bindings.get(name)
        if binding is None:
            return bool(stars(bindings))  # a star import may bind it: maybe
        found = self.resolve(file, binding[0], binding[1])
        if found is None or len(found[1]) != 1:
            return False  # (a file importing from itself is followed, as ``_module_fact`` does)
        return self.may_load_from(found[0], found[1][0], consulted, depth + 1)

    def may_member(
        self, file: str, names: tuple[str, ...], consulted: set[str], depth: int = 0
    ) -> bool:
        """A necessary condition for ``member(file, names)`` not to be None,
        never summarising: the name is a function or a class of the file
        (``ModuleSummary.functions``/``classes`` hold only those its text
        defines), or an import binding of it leads, as ``member`` follows
        re-exports, to a file for which this holds. A summary already
        computed lets it through (``member`` is cheap then)."""
        files = self.files
        if not isinstance(files, LazySummaries) or not names:
            return True
        consulted.add(file)
        if file in files._known or files.may_define(file, names[0], classes=True):
            return True
        if depth >= MAX_REEXPORTS:
            return False
        found = self._reexport(files, file, names)
        if isinstance(found, bool):
            return found
        if not found[1]:
            return False
        return self.may_member(found[0], found[1], consulted, depth + 1)

    def may_hold(
        self,
        file: str,
        names: tuple[str, ...],
        text: re.Pattern[bytes],
        consulted: set[str],
        depth: int = 0,
    ) -> bool:
        """A necessary condition for ``member(file, names)`` (or the whole
        module, for no ``names``) to be something whose summary only a file
        whose text matches ``text`` can give (a function that sets eval: a
        file without a mode call has none): the file it is defined in, after
        the re-exports ``member`` follows, matches. Reads text and import
        lines, never summarises: most imports of a large tree are of files
        without mode code, and summarising them all cost more than checking
        every file."""
        files = self.files
        if not isinstance(files, LazySummaries):
            return True
        consulted.add(file)
        if files.text_has(file, text):
            return True
        if not names or depth >= MAX_REEXPORTS:
            return False
        found = self._reexport(files, file, names)
        if isinstance(found, bool):
            return found
        return self.may_hold(found[0], found[1], text, consulted, depth + 1)

    def _reexport(
        self, files: LazySummaries, file: str, names: tuple[str, ...]
    ) -> tuple[str, tuple[str, ...]] | bool:
        """Where the import binding of ``names[0]`` in ``file`` leads, as
        ``member`` follows re-exports, read from import lines (never
        summarising): the file and the names there; True when the file's
        imports cannot be read (anything may be there), False when the
        binding leads to no other file of the run."""
        bindings = files.bindings(file, names[0])
        if bindings is None:
            return True
        binding = bindings.get(names[0])
        if binding is None:
            return bool(stars(bindings))  # a star import may bind it: anything may be there
        found = self.resolve(file, binding[0], binding[1] + names[1:])
        if found is None or found[0] == file:
            return False
        return found


def _ancestors(folder: str) -> list[str]:
    out = [folder]
    while True:
        parent = os.path.dirname(out[-1])
        if parent == out[-1]:
            return out
        out.append(parent)
