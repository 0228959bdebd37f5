"""RNF006: a model loaded for prediction runs in train mode and with grad enabled."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from rnnfix.analysis.modes.inferclass import class_text
from rnnfix.analysis.modes.inference import Inference, InferenceAnalysis
from rnnfix.analysis.modes.regions import find_regions
from rnnfix.analysis.syntax.names import dotted
from rnnfix.analysis.syntax.walks import FUNCTIONS, walk_tree
from rnnfix.analysis.torch.api import module_mode_switch
from rnnfix.rules.base import FileContext, Finding, Rule
from rnnfix.rules.rnf003.judge import RegionJudge, Verdict
from rnnfix.rules.rnf006.classes import class_findings
from rnnfix.rules.rnf006.fix import scope_finding, train_finding

# ``model.load_state_dict(``, ``torch.load(``, ``load_model(``, ``Net.load_from_checkpoint(``.
_LOADS = re.compile(r"load_state_dict|load_from_checkpoint|\.load\(|\bload\w*\(")
_TRAINS = re.compile(r"\.backward\(|\.zero_grad\(|\boptim\.|\.train\(")


class InferenceWithoutEval(Rule):
    code = "RNF006"
    name = "inference-without-eval"
    summary = "A model loaded for inference runs without `model.eval()` and `torch.no_grad()`"
    fix_safety = "safe"
    docs = """
## What it does
Finds models that trained weights are loaded into and that are then used
for prediction only, in train mode or with grad enabled, and adds
`model.eval()` right after the load and `torch.no_grad()` around the
inference.

A load is `model.load_state_dict(...)` (also from a checkpoint dict,
`ckpt["model"]`), a whole module from `torch.load(path)` (also
`torch.load(path)["model"]`), `Net.load_from_checkpoint(path)`, a function
of the file or of another file of the run that returns a model it loaded
(`model = load_model(path)`), or a function of the file or of another file
of the run that loads weights into the model it is given and switches no
mode (`load_checkpoint(model, path)`, `restore(path, net)`), or a method of
the model's own class named for loading that reads a file, writes the
model's parameters and switches no mode (`model.load_weights(path)` of a
Darknet that copies `np.fromfile` weights into its layers), or a library
builder asked for trained weights, which returns the model in train mode:
`torchvision.models.resnet50(weights=...)` (or `pretrained=True`; a safe
fix, torchvision's classes override neither `train` nor `eval`),
`timm.create_model(name, pretrained=True)` (its classes are not read: the
fix is unsafe); not `torch.hub.load(...)`, whose entry point decides the
mode (YOLOv5's returns an eval model). The inference
is the forwards of that model that follow the load in the same function or
script, also under a name bound to it after the load (`model =
nn.DataParallel(net)`, `model = net.to(device)`, or a feature extractor cut
from it, `nn.Sequential(*list(net.children())[:-1])`, made of its own layers;
once, and not a part of it such as `net.encoder`): direct calls,
`model.forward(x)`, a method of its class or a helper of the file that runs it
(`predict(model, x)`; also through a method of the model's class that reaches
its forward, the class of the file or of another file of the run:
`extract(loader, model)` running `model.encode(img)`), a function of another
file of the run that runs it; for a model a script loads at module level, also
the forwards of the module-level functions that read it as a global (`def
evaluate(line): return rnn(line)`).

It acts only in files that train nothing: no `backward()`, no optimizer, no
gradient use (`autograd.grad`, `requires_grad_()`), no `train()` anywhere in
the code but on a loaded model (a comment or a string that mentions them
does not count). A loaded model the file puts in train mode itself
(`model.train()` after the load, in the same function or, for a script's
model, in a module-level function) is reported without a fix: train mode
there may be a bug or the author's choice (Monte Carlo dropout, BatchNorm
on batch statistics), and the code seldom says which. Nothing is reported
when it does: a comment on or above the call that says why, forwards
repeated on one input (`for _ in range(n)`), a function named for it
(`mc_predict`). The other loaded models of the file are judged as usual.

## Why is this bad?
A module starts in train mode, and loading weights does not change that.
Predictions made in train mode have dropout active and BatchNorm normalising
with the statistics of the batch at hand (and updating its running
statistics from it): they change from run to run and with the batch size.
With grad enabled, every forward records an autograd graph that nothing
uses, which costs memory and time. For an LSTM/GRU/RNN on a GPU nothing
fails either way: cuDNN's error needs a backward, and inference has none.

## Example
```python
model = Net()
model.load_state_dict(torch.load("model.pt"))
for x in inputs:
    print(model(x).argmax(-1))
```

## Use instead
```python
model = Net()
model.load_state_dict(torch.load("model.pt"))
model.eval()
with torch.no_grad():
    for x in inputs:
        print(model(x).argmax(-1))
```

In a function, `@torch.no_grad()` goes on the function instead (a two-line
diff that re-indents nothing), as RNF003 does for evaluation functions; a
module-level function that runs a global model gets the decorator too.
`eval()` goes right after the load when every forward is in the same
block; when the load is conditional (`if args.checkpoint:`), right before
the first statement that runs the model. A model from a loader function
(`model = load_model(path)`) gets its `eval()` in the caller, after that
call: the loader is shared with training code (resuming, fine-tuning) and
is never edited. Several models loaded together
(an encoder and a decoder) each get their `eval()`, and share one
`no_grad`. Only what is missing is added: a model already in eval mode
(`model.eval()`, a helper that calls it, `Net.load(...).eval()`) gets
only `no_grad`, and forwards already under `no_grad`/`inference_mode`
(or a project decorator that applies one) get only `eval()`.

Why a rule of its own and not part of RNF003: RNF003 finds evaluation by
intent (a loop over validation data, a function named `evaluate`, a loop
after `model.eval()`) in code that also trains; RNF006 finds inference by
what happens to a model (weights loaded, then predictions and nothing
else) in scripts that never train. `--select RNF006` / `--ignore RNF006`
then choose one without the other. The two never report the same forward:
a forward inside a region RNF003 judges (an evaluation function or loop,
whether it fixes it or leaves it alone) is RNF003's, and RNF006 skips it.

Left alone:

- resuming training and fine-tuning after a load, and any file that trains
  (a training step, an optimizer, a gradient use) or calls `train()`;
- Monte Carlo dropout (dropout layers switched on one by one, a
  `train()` on anything but a loaded model: the file is left alone; a
  loaded model's own `train()`: reported, as above);
- models from `from_pretrained(...)`: transformers returns them in eval mode;
- TorchScript (`torch.jit.load`), exported programs (`torch.export.load`),
  and files that export or trace (`torch.onnx.export`, `torch.jit.trace`,
  `torch.jit.script`, `torch.export`): export sets or expects its own mode;
- a model whose mode a helper sets (`prepare(model)` that calls
  `model.eval()`, a `load_model()` that returns `model.eval()`), a model
  handed to code rnnfix cannot read (it may train it), a model on which a
  method named for training runs (`model.fit(...)`);
- a model that may be None where it runs (`refine_net = None`, built and
  loaded only under `if args.refine:`): an `eval()` outside that branch
  would fail;
- a script that turns grad off itself (`torch.set_grad_enabled(False)`),
  and a helper that runs the model under its own `no_grad`;
- forwards on tensors the code makes up (`G(torch.randn(64, 100))`, a
  `torch.zeros` warm-up): a GAN's samples are often drawn in train mode on
  purpose (BatchNorm on batch statistics), and a dry run's numbers mean
  nothing;
- a module's own methods, and tests (`test_*.py` files with test code in
  them, `test_*` functions, `Test*` and `TestCase` classes; a `test_*.py`
  script with none, `python test_image.py`, is inference code);
- a model the caller passes to an inference class (below): only reported.

Inference classes: a plain class (no `nn.Module`, no mode setters of its
own) whose `__init__` binds `self.model` once and whose other methods only
run it (`Predictor.predict`, `FIDEvaluation.calculate_inception_features`,
`encode_sentences`), in a file that trains nothing. A model the class builds
or loads itself (also in a local of `__init__` that it then keeps: `net =
Net(); net.load_state_dict(...); self.net = net.cuda()`) gets
`self.model.eval()` right after it is bound (after the
`load_state_dict` that follows, if any), unless another file of the run
reads that attribute (it may train the model through the object); safe when
rnnfix reads the model's class (or the library table knows it:
pytorch-fid's `InceptionV3`), unsafe otherwise (another library's class). A
forward in a method that an evaluation function RNF003 reports runs
(`self.calculate_inception_features(x)` in `fid_score`) is RNF003's: no
second `eval()`. A model given to the constructor is reported without a fix:
an `eval()` there would switch the caller's object, which the caller may
still train or which may be a wrapper that is no module. A model from
`from_pretrained(...)` is not reported for its mode (the library sets it).
Each method that runs the model with grad enabled gets `@torch.no_grad()`,
a safe fix, when nothing computed from the forward leaves the method with a
graph (returned, stored, handed to a callback: detached values such as
`.item()`, `.data`, `.numpy()` do not count); otherwise it is reported.
An object the class is given or gets from `from_pretrained` must look like
a model: a module method called on it (`.to(device)`, `.parameters()`), an
`nn.Module` annotation, or a model's name (`model`, `encoder`, `net`) with
its results read as tensors (`out.data`, `.argmax()`; in a file that does not
import torch, only `.data`/`.detach()`): transforms, tokenizers, score
functions are called too. Left alone: subclasses of other classes and
abstract bases (what they run the model for is decided elsewhere), files
that import TensorFlow, Keras or JAX, a model whose mode the file sets
anywhere (`predictor.model.eval()`, `model.eval()` before it is passed to
the constructor: the eval() part only), and, for the eval() part, a model
of a readable class with no Dropout, BatchNorm or `self.training` in it
(`eval()` would change nothing).

## Fix safety
The fix is safe: rnnfix adds it only where no training step follows the
load for that model (the file trains nothing and nothing the model is
handed to can train it), so `eval()` changes only the inference it is for:
dropout turns off and BatchNorm uses its running statistics, which is what
loaded weights are meant to be used with. The predictions you get will
change accordingly. `no_grad` follows RNF003's rules: it is added only
where nothing needs gradients, and in a function whose results leave it
(returned, stored on an object, passed to a callback) only when every
caller is a call in this file; otherwise the finding is reported without a
fix.

The class is read from this file or from another file of the run (a
`models.py` of module classes is read for this even when it has no mode
call); a factory function of either (`create_model(cfg)`, whose every
`return` builds one module class of its file, or of a file of the run it
imports the class from, and which switches no mode: `load_model(path)`
building `nets.Tagger`) counts as that class, and a class builds a Dropout or BatchNorm also
through a function of its file (`self.norm = select_norm(norm, dim)`). The
fix is unsafe (applied with `--unsafe-fixes`) when rnnfix cannot read
the class of the loaded object (a whole module from `torch.load`, a class
imported from outside the run): `load_state_dict` and a forward call make
it a module in practice, but rnnfix cannot prove it. It is unsafe as well
when the class is readable but rnnfix finds no dropout, BatchNorm or RNN in
it (a GAN generator of linear and convolution layers): `eval()` may change
nothing there, so it is no evidence of a bug. Reported without a fix:
a class whose `train`/`eval` is overridden in a form a call cannot go
through, a model loaded on one path and run on another, and results that
may reach callers rnnfix does not see.
"""

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        if not may_apply(ctx):
            return
        analysis = InferenceAnalysis(ctx)
        owned = _Rnf003Regions(ctx)
        found = analysis.inferences() if _loads_here(ctx) else []
        groups: dict[int, list[Inference]] = {}
        for inf in found:
            inf.forwards = [f for f in inf.forwards if not owned.covers(f.site)]
            if inf.explicit_train is not None:
                if inf.forwards:
                    reported = train_finding(ctx, inf)
                    if reported is not None:
                        yield reported
            elif inf.forwards and (inf.needs_eval or inf.needs_grad):
                groups.setdefault(id(inf.load.scope), []).append(inf)
        for group in groups.values():
            yield scope_finding(ctx, group)
        if class_text(ctx.source):
            yield from class_findings(ctx, analysis, owned)


def may_apply(ctx: FileContext) -> bool:
    """The pre-condition this rule has always had, its project part cheaper:
    a file that trains is not inference code (``_TRAINS``, a text test
    first); a finding needs a load, written here (``_LOADS``) or a call of a
    loader function of another file of the run (``_calls_loader``, which
    reads only files with loading text)."""
    source = ctx.source
    if _trains(source) and _trains_code(ctx.tree):
        return False
    return _loads_here(ctx) or class_text(source)


def _loads_here(ctx: FileContext) -> bool:
    return _loads(ctx.source) or _calls_loader(ctx)


def _trains_code(tree: ast.Module) -> bool:
    """What ``_trains`` finds in the text, in the code: a call of
    ``backward``/``zero_grad``/``train``, ``torch.autograd.backward``, or
    ``optim.<name>`` (an optimizer, a scheduler; an import of one). A comment
    or a string that mentions ``model.train()`` or ``torch.optim`` (a usage
    note, an error message) does not make an inference script a training one."""
    for node in walk_tree(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("backward", "zero_grad"):
                return True
            if isinstance(func, ast.Attribute) and func.attr == "train":
                # ``model.train()`` of a loaded model is that model's business
                # (``InferenceAnalysis.trains`` reads whose it is); a
                # ``train()`` on anything else (``get_trainer().train()``) trains.
                if dotted(func.value) is None or module_mode_switch(node) is None:
                    return True
        elif isinstance(node, ast.Attribute):
            value = node.value
            last = value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", None)
            if last == "optim":
                return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module + ".")
            if any(_TRAINS.search(n) for n in names):
                return True
    return False


# ``_TRAINS.search(s) is not None`` and ``_LOADS.search(s) is not None``, the
# literal alternatives first (a substring test is many times faster than a
# regular expression that tries every alternative at every position).
def _trains(source: str) -> bool:
    if ".backward(" in source or ".zero_grad(" in source or ".train(" in source:
        return True
    return "optim." in source and _TRAINS.search(source) is not None


def _loads(source: str) -> bool:
    if "load_state_dict" in source or "load_from_checkpoint" in source or ".load(" in source:
        return True
    if "pretrained=" in source or "weights=" in source:
        return True  # ``timm.create_model(n, pretrained=True)``, ``resnet50(weights=...)``
    return "load" in source and _LOADS.search(source) is not None


def _calls_loader(ctx: FileContext) -> bool:
    """A file that calls a loader of another file of the run need not say "load"."""
    view = ctx.facts.project
    return view is not None and view.loader_called(ctx.source)


class _Rnf003Regions:
    """The evaluation regions RNF003 judges (fixed or left alone): their
    forwards are RNF003's, so RNF006 never reports the same forward twice.
    A forward through a helper RNF003 owns (``predict(model, x)`` where
    ``predict`` is an evaluation function, or holds an evaluation loop) is
    RNF003's too."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self._nodes: list[ast.stmt] | None = None
        self._found: list[ast.stmt] = []  # the regions RNF003 reports (or fixes)

    def nodes(self) -> list[ast.stmt]:
        if self._nodes is None:
            self._nodes = []
            regions = find_regions(self.ctx)
            judge = RegionJudge(self.ctx) if regions else None
            for region in regions:
                assert judge is not None
                verdict = judge.run(region)
                if verdict is not Verdict.NOT_A_REGION:
                    self._nodes.append(region.node)
                if isinstance(verdict, Finding):
                    self._found.append(region.node)
        return self._nodes

    def covers(self, site: ast.Call) -> bool:
        nodes = self.nodes()
        if not nodes:
            return False
        ancestors = {id(a) for a in self.ctx.facts.ancestors(site)}
        if any(id(n) in ancestors for n in nodes):
            return True
        # A helper that is an evaluation function, or holds an evaluation loop.
        functions = {n.name for n in nodes if isinstance(n, FUNCTIONS)}
        for n in nodes:
            owner = next((a for a in self.ctx.facts.ancestors(n) if isinstance(a, FUNCTIONS)), None)
            if owner is not None:
                functions.add(owner.name)
        func = site.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name in functions:
            return True
        # A method of a class whose forward a region RNF003 reports runs
        # through ``self.<method>(...)`` (its judge follows it one level): its
        # finding (and fix) is about that forward. A region it leaves alone
        # may be left for reasons of its own (what it returns).
        method = next((a for a in self.ctx.facts.ancestors(site) if isinstance(a, FUNCTIONS)), None)
        return method is not None and any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == method.name
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "self"
            for node in self._found
            for n in ast.walk(node)
        )
