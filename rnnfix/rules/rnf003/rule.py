"""RNF003: validation, test and inference code not under ``model.eval()`` and
``torch.no_grad()``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from rnnfix.analysis.modes.regions import find_regions
from rnnfix.analysis.modes.regiontext import may_have_regions
from rnnfix.analysis.project.testcode import test_case_classes
from rnnfix.analysis.syntax.walks import FUNCTIONS, body_without_docstring
from rnnfix.rules.base import FileContext, Finding, Rule
from rnnfix.rules.rnf003.callers import may_have_caller_models
from rnnfix.rules.rnf003.gate import ModelEvidence
from rnnfix.rules.rnf003.judge import RegionJudge, Verdict
from rnnfix.rules.rnf003.models import ModelIndex
from rnnfix.rules.rnf003.periodic import may_have_periodic, periodic_findings

# Evaluation words, or a training step (the *after-training* signal).
_PREFILTER = re.compile(r"val|test|eval|predict|infer|dev|holdout|backward|step", re.IGNORECASE)


class EvalWithoutNoGrad(Rule):
    code = "RNF003"
    name = "eval-without-no-grad"
    summary = "Validation/test/inference code not under `model.eval()` and `torch.no_grad()`"
    fix_safety = "safe"
    docs = """
## What it does
Finds *evaluation regions* that may run a model in train mode, or with grad
enabled, or both, and puts them under `model.eval()` and `torch.no_grad()`.

A region is evaluation by intent when it is

- a loop over data named like `val`, `valid`, `dev`, `test`, `eval`, `holdout`
  (`val_loader`, `testloader`, `loaders["val"]`);
- the body of a function or method named like `evaluate`, `validate`, `test`,
  `eval_*`, `predict`, `inference`, or an estimator's evaluation hook
  (`validation_step`, `evaluation_step`, `predict_step`: `step` beside an
  evaluation word is no training step);
- a loop that follows `model.eval()` in the same block and calls that model;
- a plain statement (an assignment or an expression) that follows
  `model.eval()` in the same block and calls that model, where every training
  step of its function (or of the module) comes before it: the validation
  forward after the step of a full-batch training function (`model.eval();
  output = model(features, adj)`), or after the batch loop of an epoch loop.
  What it computes must reach no later gradient use (the next iteration's
  loss included), and must not be returned or kept on an object: then it is
  training code, left alone;
- a plain statement or a loop after the code that trains a model (a loop
  running its training steps, a call of a function of the file that runs
  them, or a call of a method of the file's classes that does, on an
  object: a Keras-like module's `clf.fit(X, y)`), where every training
  step of its function (or of the module) comes before it, that runs that
  model and whose results are printed, logged, written, saved or plotted:
  nanoGPT's lecture script ends with
  `print(decode(m.generate(context, max_new_tokens=500)[0].tolist()))` after
  its training loop; a char-RNN samples and prints text after each epoch's
  batch loop. Also a call that hands the trained model to a function, of
  the file or of another file of the run, that prints, logs, writes, saves
  or plots what it computes with it and trains nothing, reads no gradient,
  switches no mode and yields nothing (`get_scores(model, test_batches)`
  printing an accuracy, `save_reconstructions(ae, images, path)` from the
  project's `visualize.py`; `show(images)` running the script's global
  model), or a method of the caller's class that does so with a model it
  holds (a trainer's `self.visualize_results(epoch)` saving what `self.ae`
  reconstructs; `recon = self.reconstruct(images)` then saved): `eval()`
  goes before the call and `no_grad` around it. Consecutive such
  statements share one `eval()` and one `with`. A forward whose results go
  nowhere a person reads (BatchNorm statistics recomputed) or only say what
  shape they have is not one, nor one after the author switches the model
  back to train mode, nor a generator sampled from noise (made up in the
  helper, by its caller, or held on the trainer: `self.fixed_z =
  torch.randn(...)`), whose mode and grad are the author's;
- a loop over data (`for x, y in data:`, or a counted loop that draws a
  fresh batch at each turn: `for k in range(n): X, Y = get_batch(split)`,
  `x, y = next(it)`) under `no_grad`
  (a `with torch.no_grad():` around it or around its whole body, or a
  `@torch.no_grad()` function) in a function, whatever its name and the
  data's, that makes no training call and no mode call and keeps what it
  computes (adds it up, appends it, stores it in a table, prints it): the
  author turned grad off
  because nothing there learns (gradient blending's `getloss(model, data)`
  over the training and validation sets), in a file that trains (one that
  trains nothing is inference code: RNF006). Not one whose forwards keep
  nothing (BatchNorm statistics recomputed), repeat on the same data (a
  `for _ in range(n):` anywhere in the function: Monte Carlo), or sit in a
  function or class named for a train-mode technique or a rollout
  (`mc_predict`, `update_bn`, `init_actnorm`, `sample`, `rollout`,
  `MCDropoutModel`) or beside a helper named for setting modes
  (`_enable_only_dropout_layers(model)`); not a module's own method;
- the body of a function, whatever its name (`get_scores`, `sample_text`),
  that switches a model to eval itself among its own statements and then
  runs it, and runs no training step; what it computes must not be kept
  on an object or handed to a callback (a policy's `saved_log_probs`):
  that is reported, never fixed. Not a module's own method that switches
  the module itself (a vocoder's `forward`, a model's `generate`): its
  caller owns the grad mode;
- a method, whatever its name, of a class that is not a module and whose
  `__init__` holds a model in eval mode for good (`self.model.eval()`,
  `self.net = net.to(device).eval()`; no `train()`, training call or
  gradient code anywhere in the class) that runs that model: an inference
  object (img2vec's `Img2Vec.get_vec`). Fixed only when nothing with a graph
  leaves it (features returned for a perceptual loss do); forward hooks it
  registers must keep only `o.data`/`o.detach()`;

and it calls a model (a name or attribute path that has `.eval()`/`.train()`
called on it in the file, is built from an `nn.Module` class, or is a
parameter annotated as one) and runs no training step.

A model runs when it is called (`model(x)`, `model.forward(x)`), through a
submodule its class assigns (`model.decoder(z)`, the class in this file or
another file of the run), through the module a wrapper holds
(`model.module(x)`), through `nn.parallel.data_parallel(netG, inputs, gpus)`,
and through a method of its class that reaches its forward (`model.encode(x)`
calling `self.encoder`, `model.generate(idx)` calling `self(idx)`), the class
known from where the model is built: a constructor, a factory of the file
(`test_model = make_model(...)`), or a library's table (transformers'
`generate`). A method that switches a mode, decides grad itself (a
`with torch.no_grad():` inside), or trains (`backward`, `step`) is no plain
forward: its callers are not judged on what it manages. One decorated
`@torch.no_grad()`/`@torch.inference_mode()` (nanoGPT's `generate`) is a
forward of the region that calls it with its grad settled: only the mode
is asked (`model.eval()`, no `no_grad`); a helper that calls it builds no
graph.

Not when the project holds modules that train in their own `forward`
(test-time adaptation: Tent, CoTTA, a `backward()` and an optimizer step
inside `forward`) and the region's model may be one of them: built from
such a class, a parameter of the region's function, or bound again by a
call rnnfix cannot read (`model = registry.init(args.mode, model)`).
`no_grad` would break their first backward, `eval()` undo the adaptation's
train mode.

The call may go through a helper of the same file, at any depth: a function
the model is passed to (`pred = greedy_decode(model, src)`), or a method of
the region's own class that runs `self.model` (`pred, true =
self._process_one_batch(x, y)`), as the mode flow's summary of the helper
records its forwards. Only a helper that just runs the model counts: one
that switches a mode, takes a gradient, trains, or decides grad itself (a
decorator, a `with torch.no_grad():` inside) manages what its callers would
be judged on. The fix goes on the region, where the author decides mode and
grad; a helper that is an evaluation region itself and gets a fix of its own
covers its forwards for every caller, and its callers get none. For a
method, every base of the class must leave the calling to the author's code:
`object`, classes of the file, or classes of another file of the run whose
code (with their bases there) never reads `self.<region method>` (Informer's
`Exp_Basic`). A base class of a library, or a framework's that calls its
subclasses' hooks (speechbrain's `Brain.fit` runs `evaluate_batch` under its
own `no_grad`), leaves the region alone.

An evaluation function by its name that training code calls between its
steps (`test(model, dev_iter)` every N batches) is evaluation too when
nothing it computes through a model leaves it with a graph: it returns only
`.item()` sums, accuracies or strings, and keeps nothing on an object, a
parameter or a global. It gets `torch.no_grad()`, and an `eval()` it needs is
put back to the caller's mode before it returns (reported, not fixed, when a
`return` computes its value after that point).

A test batch run every N steps inside the training loop (`if step % 50 ==
0:` whose forward reads evaluation data such as `test_x`, a batch drawn from
it, `next(iter(val_loader))` or `sample_random_batch(test_dset, 8)`, or what
is computed from those, and that prints, logs or saves as images what it
computes) is evaluation too, though it runs in the iteration of a training
step: its forward gets `with torch.no_grad():` when grad is on there (and
the author has not set the grad mode there), nothing it computes is stored
on an attribute or in a subscript, returned, or used by a gradient later, and
it calls no training step. A model there that holds Dropout or BatchNorm (the
file shows it, or its class in another file of the run builds one), in train
mode (only) before the block, whose mode the block does not set, gets
`model.eval()` before the statements that run it and `model.train()` after
them: the mode it had, so the training after the block is unchanged (the
fix upstream made to GLCIC-PyTorch's `train.py`).

A function shared by training and evaluation through a flag (`def
iteration(self, epoch, loader, train=True)`, or `def run_epoch(model,
loader, optimizer, mode)` with `if mode == "train":`) whose training step
runs only under the flag, and that a call in the file turns off (`train=False`,
`"valid"`, or the caller's own flag when its callers pass it off:
`self._run_batch(x, y, train)` inside `_run_epoch(..., train=False)`; the
guard may name several training modes, `mode == "train" or mode ==
"train+log"`, `mode in ("train", "train+log")`), is evaluation on that
path. When it sets no mode, it gets `self.model.train(train)` at its start
and `torch.set_grad_enabled(train)` around the statements that run the
forward, for a model the file builds and gives to an optimizer. When it
sets the modes itself from the flag (`if mode == "train": model.train()
else: model.eval()`), or the file sets the model's mode anywhere else
(around the calls: that mode is left to the author), only
`torch.set_grad_enabled(<flag>)` is added, where grad is not set yet.
When the forwards sit in several blocks (one branch per model family) so
that no one `with` can hold them, and the file sets the mode around the
calls, the file's calls that turn the flag off get `torch.no_grad()`
instead (`loss, y_pred = backprop(..., training=False)`), each a plain
statement whose results reach no gradient use and leave no function.
When its own body calls `model.train()` whatever the flag (a plain
statement of the function, not under an `if` or a loop), that call takes
the flag: `model.train(mode == "train")`. A flag named for evaluation
counts too (`def _run_one_epoch(self, epoch, cross_valid=False)` with the
step under `if not cross_valid:`, turned off by a call passing `True`): the
fix uses `not cross_valid`. So does an optional argument the step needs
(`def run_epoch(model, loader, epoch, optimizer=None)` with the step under
`if optimizer:` or `if optimizer is not None:`, called without it for the
test pass): the fix uses `optimizer is not None`. So does the model's own mode (`if
model.training:` around every training step, and code of the function that
runs only in eval mode: `"Train" if model.training else "Valid"`): the
caller's `eval()` picks the evaluation path, so only
`torch.set_grad_enabled(model.training)` is added, and it is reported
instead when a value the forward computes leaves the function with its
graph (a caller may differentiate it).

It also finds `train()` left inside evaluation code, with a message of its
own: a validation/test function or loop whose forward runs right after a
plain `model.train()` of its own (a leftover copied from the training
function), and a loop shared by the phases (`for phase in ("train", "val"):`)
that calls `model.train()` unconditionally, so the evaluation phase runs in
train mode too. A phase loop that sets no mode at all, whose training steps
all run only in the training phase (under `if phase == "train":`), and
whose models no `eval()` reaches (one before the loop is the author's:
frozen BatchNorm), runs its evaluation phase in train mode and with grad
on: it gets `model.train(phase == "train")` at the head of each phase and
the grad switch below.

## Why is this bad?
Without `eval()`, dropout stays active and BatchNorm normalises with batch
statistics and updates its running statistics from validation data: the
metrics are noisy and the model is changed by evaluating it. Without
`no_grad()`, every forward builds an autograd graph that is never used, which
costs memory and time. `Variable(x, volatile=True)` no longer helps: it has
done nothing since PyTorch 0.4.

## Example
```python
def evaluate(model, loader):
    total = 0.0
    for x, y in loader:
        total += criterion(model(x), y).item()
    return total

for x, y in val_loader:
    correct += (model(x).argmax(1) == y).sum().item()
```

## Use instead
```python
@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        total += criterion(model(x), y).item()
    return total

model.eval()
with torch.no_grad():
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
```

What is added depends on what is missing: only `model.eval()`, only
`no_grad`, or both. A whole evaluation function gets `@torch.no_grad()` and
`model.eval()` as its first statement (after the docstring; right before the
first statement that calls the model when the function builds or loads the
model itself): a two-line diff that re-indents nothing. A loop gets
`model.eval()` before it and is wrapped in `with torch.no_grad():`, except
a loop that `yield`s: a `with` around a `yield` stays entered while the
generator is paused, turning grad off in its caller, so the generator
function gets `@torch.no_grad()` instead (torch re-enters it at each
resume) when nothing else in the function needs gradients or hands out
what a forward computed; otherwise it is reported.
`torch.no_grad()` is used, not `torch.inference_mode()`: tensors created under
inference mode cannot be saved for backward later (a hidden state carried into
the next training step, a lazily built cache). `import torch` is added when
the module lacks it; an alias (`import torch as th`) is used when it has one.

Putting the model in eval mode means the next training step needs
`model.train()` again: RNF001 then adds it where the training step runs.

`train()` inside evaluation is fixed where it is when it contradicts the
evaluation's own `eval()` (an `eval()` of the model earlier in the same
function, or in the script's code for a loop at module level): the leftover
`model.train()` becomes `model.eval()`. When the `train()` is the
evaluation's only mode call, train mode may be chosen on purpose (BatchNorm
normalising with batch statistics at a small batch size, Monte Carlo
dropout): it is reported, not fixed. In a shared phase loop it becomes
`model.train(phase == "train")`, and the statement that runs the forward is
wrapped in `torch.set_grad_enabled(phase == "train")` unless grad is already
set there:

```python
for phase in ["train", "val"]:
    model.train(phase == "train")
    for x, y in loaders[phase]:
        with torch.set_grad_enabled(phase == "train"):
            loss = criterion(model(x), y)
        if phase == "train":
            loss.backward()
            optimizer.step()
```

`eval()` goes only on the outermost model whose forward runs in the region
(`model`, not also `model.encoder`), never on a module without parameters
or a mode (`softmax = nn.Softmax(dim=1)`, activations, pooling, a
`Sequential` of them); losses and metrics are not models.

Left alone: regions already under `eval()` and `no_grad`/`inference_mode`
(including through every caller in the file), evaluators that need gradients
(`torch.autograd.grad`, `requires_grad_()`, `backward()` inside), sampling loops
that run in the same iteration as a training step, code whose results flow
into a later `backward()`, functions called from inside a training step,
pytest tests (a `test_*` method counts as one only in a class that may be a
unittest `TestCase`, and a module-level `test_*` function only when no code
of the file or of another file of the run calls it: `Processor.test_epoch`
of a trainer class is an evaluation), Lightning modules (the framework sets
the mode), and code that is evaluation by no signal above. Also left alone:

- code under a decorator or context manager that already does the job, read
  from its definition in the file or in another file of the run: a
  project's `@smart_inference_mode()` that applies `inference_mode`/`no_grad`,
  an `inference_context(model)` that switches to eval and restores the mode
  (`stack.enter_context(...)` counts). A wrapper rnnfix cannot read (imported
  from outside the run, `with ema.average_parameters():`) may manage mode and
  grad itself: the region is unknown and nothing is added. A `with` of
  another library, or of a method of an object that is not a model, whose
  names say nothing of grad or modes (no word such as `grad`, `eval`,
  `inference`, `train`, `mode`, `freeze`, `bn`, `ema`, `average`, `scope`)
  holds a resource instead (`with h5py.File(path) as f:`, `with
  env.begin(write=True) as txn:`, `with Progress() as p:`) and counts as
  nothing; decorators rnnfix cannot read never do;
- a module's own methods (a method of an `nn.Module` subclass, or of a class
  that defines `forward`): no `self.decoder.eval()`/`self.lstm.eval()` is
  inserted there, a partial switch that would outlive the call; the
  module's user sets its mode (`no_grad` is still judged as below). Except
  a method that trains the module itself (`self.train()` in its own body and
  a training step, a Keras-like `fit`): its validation runs `self` like any
  model and gets `self.eval()`, fixed when a training step of the method is
  seen running `self` (RNF001 then puts `self.train()` back at the loop
  head), reported otherwise;
- a region that switches a model to eval itself (`model.eval()` inside the
  loop): the author manages the modes there;
- `self.<model>` in a method of a plain class that has its own mode setter
  for it (`def eval(self): self.net.eval()`, with no forward and no training
  step): its callers call `agent.eval()` first, and an `eval()` inside the
  method would outlive the call (`no_grad` is still judged);
- a call of a parameter that holds a function (annotated `Callable`, or
  handed to `functools.wraps` by a decorator inside): a test decorator's
  `fn(self, **kwargs)` is no forward, and `no_grad` would run every test it
  wraps without gradients;
- a loop of a function that already ran the same model before the loop, in
  the mode it still has, and trains nothing before it (`expected =
  module(x)`, then each layout compared with it): the loop is part of what
  the whole function does, and a switch there would land between forwards
  it compares;
- `train()` that looks deliberate: Monte Carlo dropout (forwards repeated
  in `for _ in range(n)`, or a function named for sampling, uncertainty,
  dropout, BatchNorm statistics or adaptation), or a comment on it or right
  above it that says why (`# MC dropout`, `# use batch statistics`, `#
  test-time adaptation`); this holds for a `train()` inside the region and
  for the author's `train()` before it that the region's forwards run in
  (a loaded model put in train mode on purpose). A model that a loader of
  the file puts in train mode explicitly before returning it (sgan's
  `get_generator`: `generator.train(); return generator`) is reported, not
  switched, and left alone when the evaluation samples the same input
  several times. An evaluation function
  named for a train-mode technique (`mc_predict`, `bayesian_eval`,
  `adapt_bn`, `swa_evaluate`) keeps its mode whatever its callers do: only
  `no_grad` is judged;
- forwards on tensors the code makes up itself (`torch.randn(...)`,
  `torch.zeros(...)`): a shape probe or a dry run, whose numbers mean nothing,
  or a generator sampled from noise, whose mode and grad are the author's;
- `no_grad` for a model whose parameters the author froze on every path to
  the forward (`for p in net.parameters(): p.requires_grad = False` before
  it, or `model.requires_grad_(False)` before every call that passes it in),
  and both parts for a module that holds no parameter, submodule or mode
  (a box decoder, a loss that picks its parts with a flag or keeps a plain
  function, read from its class in another file): it records no graph, and
  `eval()` changes nothing;
- `eval()` for a model whose classes, read across the files of the run,
  compute the same in both modes: Linear, convolution, embedding and
  LayerNorm layers and activations only, no Dropout, BatchNorm, RNN or
  `self.training` (a constructor argument counts only where the class never
  runs it); `no_grad` is still added where grad is on;
- `eval()` the author already made through another name of the same model:
  a parameter every call binds to the global model the function runs
  (`def val(net): net.eval(); ... crnn(x)` called as `val(crnn)`), the model
  a global `nn.DataParallel` wrapper wraps at every binding, or, in a nested
  function nothing in the file calls (handed to a UI), the enclosing
  function's model switched to eval before the definition and not after.

A forward in a function or lambda nested in the region (`def forward_func(x):
return model(x)` handed to an attribution helper) runs when the region
calls it: the decorator and `eval()` the fix adds cover it, and a second run
finds nothing to add.

## Fix safety
The `no_grad` part is safe: it is only offered when nothing in the region
calls `backward`, `torch.autograd.grad`, `requires_grad_` or a training step,
directly or through a helper defined in the file, and when no value computed
in the region reaches a gradient use later in the same function. When a helper
needs gradients, the region is reported and not fixed.

Names are never evidence on their own: `evaluate_actions`, `predict_values`
or `score` are training code in RL and ranking libraries (a PPO policy's
`evaluate_actions` returns the log-probabilities its caller's loss is built
from). So when what the region computes can leave its function with a graph
attached (returned, yielded, stored on `self`, on a parameter or a global or
in a container held by one, or passed to a callback; `.item()`, `.detach()`,
`argmax`, comparisons and the like drop the graph), the region is fixed only
if every caller is a call in this file that rnnfix reads (no other file of
the run calls a function of its name, and it is not passed around as a
value) and none
of them trains on the result or passes it on. Otherwise it is reported
without a fix, and the message says how the result leaves and why the
callers are unknown. The same holds for the `eval()` part there: switching
the mode of a model whose outputs feed a loss would change training.

The `train()`-inside-evaluation fixes are safe under the same conditions.

Reported without a fix, and the message says which applies:

- what the region computes can leave its function to callers rnnfix does
  not see or that train on it (above);
- it calls a helper of the file that needs gradients (`no_grad` would break
  the helper);
- it switches the model to train mode itself in a way that is not a plain
  leftover (under a condition, from a flag, after some of its forwards): an
  `eval()` before it could not hold;
- the model is rebound inside it: an `eval()` before it would miss the new
  object;
- a shared phase loop runs its training step in every phase (not only
  under an `if` on the phase): it trains on the evaluation data, and
  switching the mode would not make that right.

No `eval()` is added for a model whose only mode-dependent layers are
BatchNorm layers built with `momentum=1` or `track_running_stats=False`:
they keep no statistics meant for evaluation, and few-shot learners
(Relation Networks, MAML ports) evaluate in train mode, with each episode's
own statistics, on purpose. Only `no_grad` is added there.

Adding `eval()` changes outputs: dropout turns off and BatchNorm uses (and
stops updating) its running statistics. That is the intended fix for
evaluation, but the numbers you report will change. `eval()` also stays in
effect after the region, as it would after any hand-written `model.eval()`;
training code that follows needs `model.train()` (RNF001).

Except for an evaluation function under its own `@torch.no_grad()` (or
`inference_mode`) that training code calls in its iterations and that cannot
feed a training step (no call's result reaches a gradient use): GPT-style
`estimate_loss()`. There the fix saves and restores the caller's mode:
`was_training = model.training` and `model.eval()` at the start,
`model.train(was_training)` before every `return` and at the end. A restore
before each `return`, rather than a `try:/finally:` around the body, keeps
the author's code as written; an exception that leaves the function skips it,
and ends the training step the mode was for. Reported without a fix when a
`return` computes its value with anything that may run the model (the model
or `self`, a method call, a function of the file: it would run after the
restore; `np.mean(accuracies)` or `correct / len(loader)` cannot), the
function is a generator, or the name `was_training` is taken.

An evaluation function of another file than the training loop
(`utils.py: def test_seg(model, loader)`, called from `train_semseg.py`
with the network it trains) whose own file never shows what `model` is:
its parameter is a model when every call of the function rnnfix sees (the
other files of the run, and the project's files beyond it, read but never
fixed, with what they import) passes a torch module whose mode matters by
its caller's own evidence (built from a module class with Dropout or
BatchNorm, or switched with `train()`/`eval()` there), and there is at least
one such call. A call that passes anything else (a plain function, an
estimator), a file that names the function without calling it (a
callback), an import rnnfix cannot follow, or a caller that trains on the
result or passes it on, leaves it alone. When a call runs between its
caller's training steps (in a loop of a function that trains), the fix
saves and restores the caller's mode as above: the caller may be outside
the run, where no `train()` of RNF001's would follow. A model whose class is in
another file of the run counts only when that class holds Dropout or
BatchNorm layers (or reads `self.training`): then `eval()` changes what it
computes.

Reported without a fix: an evaluation inside a loop that also runs an object
the model was handed to (`svi = SVI(vae.model, vae.guide, optim)` then
`svi.step(x)`, `trainer = Trainer(net)` then `trainer.fit_epoch()`). That
object may train the model in the loop's next iteration, in steps RNF001
cannot see, so nothing would put `train()` back after an inserted `eval()`.
"""

    def check(self, ctx: FileContext) -> Iterator[Finding]:
        if not _PREFILTER.search(ctx.source):
            return
        judge: RegionJudge | None = None  # built at the first region that needs it

        def fixes_itself(call: ast.Call) -> bool:
            nonlocal judge
            if judge is None:
                judge = RegionJudge(ctx)
            return judge.fixes_itself(call)

        if may_have_periodic(ctx.source):
            yield from periodic_findings(
                ctx, lambda: ModelIndex(ctx, extra=ctx.facts.modes.models), fixes_itself
            )
        if not may_have_regions(ctx.source):
            return
        regions = find_regions(ctx)
        if not regions:
            return
        evidence: ModelEvidence | None = None
        tests: list[tuple[int, int]] | None = None
        claimed: set[ast.AST] = set()  # evaluation functions taken as regions
        for region in regions:
            if not region.is_function and any(
                a in claimed for a in ctx.facts.ancestors(region.node)
            ):
                continue
            if tests is None:
                tests = _test_class_lines(ctx)
            if any(first <= region.node.lineno <= last for first, last in tests):
                continue  # the engine drops its finding: not judged at all
            if evidence is None:
                evidence = ModelEvidence(ctx.tree, ctx.facts.project)
            if not evidence.may_call_model(
                _judged_code(region.node)
            ) and not may_have_caller_models(ctx, region.node):
                continue  # calls no model: the judge's NOT_A_REGION, without building it
            if judge is None:
                judge = RegionJudge(ctx)
            verdict = judge.run(region)
            if verdict is Verdict.NOT_A_REGION:
                continue
            if isinstance(region.node, FUNCTIONS):
                claimed.add(region.node)
            if isinstance(verdict, Finding):
                yield verdict


def _judged_code(node: ast.stmt) -> list[ast.stmt]:
    """The statements ``RegionJudge.run`` looks for model calls in (a
    coroutine is never a region: nothing to look at)."""
    if isinstance(node, ast.AsyncFunctionDef):
        return []
    if isinstance(node, ast.FunctionDef):
        return body_without_docstring(node)
    return [node]


def _test_class_lines(ctx: FileContext) -> list[tuple[int, int]]:
    """The lines of ``TestCase`` classes whose findings the engine drops
    (``rnnfix.analysis.project.testcode.outside_test_classes``, unless tests are
    included): those it finds without the imports or the project index, a
    subset of its own, behind the same text test."""
    text = ctx.source
    if ctx.settings.include_tests or (
        "TestCase" not in text and "class Test" not in text and ctx.project is None
    ):
        return []
    return [
        (min([c.lineno, *(d.lineno for d in c.decorator_list)]), c.end_lineno or c.lineno)
        for c in test_case_classes(ctx.tree)
    ]
