"""The library table and the model knowledge read from it (issue 36.1/36.2):
rows, pass-throughs, loaders, forward methods computed from a class, loops
over written-out containers, paths through constant subscripts, star
re-exports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rnnfix.analysis.modes.elements import Elements
from rnnfix.analysis.project.bindings import import_bindings, stars
from rnnfix.analysis.project.index import ProjectIndex
from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted, is_below, parent_path, root_name
from rnnfix.analysis.torch import library
from rnnfix.analysis.torch.api import DATA_PARALLEL, WRAPPERS
from rnnfix.analysis.torch.forwards import forward_methods
from rnnfix.analysis.torch.models import library_forwards, loaded
from rnnfix.analysis.torch.passthrough import passed_back, rewraps, unwrapped


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def test_wrapper_sets_are_the_tables() -> None:
    assert "torch.nn.DataParallel" in DATA_PARALLEL
    assert "torch.compile" in WRAPPERS and "torch.compile" not in DATA_PARALLEL
    assert library.row("torch.nn.parallel.DistributedDataParallel") is not None


@pytest.mark.parametrize(
    ("qualname", "layer"),
    [("torch.nn.Dropout", True), ("torch.nn.BatchNorm2d", True), ("torch.nn.Linear", False)],
)
def test_mode_layers(qualname: str, layer: bool) -> None:
    assert library.mode_layer(qualname) is layer


@pytest.mark.parametrize(
    ("method", "receiver", "qualname", "kind"),
    [
        ("prepare", "accelerator", None, "passthrough"),
        ("prepare", "self.strategy", None, "passthrough"),
        ("setup", "fabric", None, "passthrough"),
        ("setup", "self.fabric", None, "passthrough"),
        ("setup", "runner", None, None),  # ``setup`` alone is too common a name
        ("unwrap_model", "accelerator", None, "unwrapper"),
        ("from_pretrained", "AutoModel", "transformers.AutoModel", "factory"),
        ("from_pretrained", "AutoTokenizer", "transformers.AutoTokenizer", None),
        ("from_pretrained", "StableDiffusionPipeline", "diffusers.StableDiffusionPipeline", None),
        ("from_pretrained", "DDPMScheduler", "diffusers.DDPMScheduler", None),
        ("from_pretrained", "MyNet", None, "factory"),
    ],
)
def test_method_rows(method: str, receiver: str, qualname: str | None, kind: str | None) -> None:
    found = library.method_row(method, receiver, qualname)
    assert (found.kind if found is not None else None) == kind


def test_only_transformers_from_pretrained_returns_eval() -> None:
    hf = library.method_row("from_pretrained", "AutoModel", "transformers.AutoModel")
    other = library.method_row("from_pretrained", "MyNet", "mylib.MyNet")
    assert hf is not None and hf.returns == "eval" and "generate" in hf.forward_methods
    assert other is not None and other.returns == "unknown" and other.needs_use


@pytest.mark.parametrize(
    ("source", "name", "expected"),
    [
        ("model, opt = fabric.setup(model, opt)", "model", True),
        ("model = fabric.setup_module(model)", "model", True),
        ("model = runner.setup(model)", "model", False),
        ("model = get_peft_model(model, config)", "model", True),
    ],
)
def test_pass_throughs_read_from_the_table(source: str, name: str, expected: bool) -> None:
    stmt = ast.parse(source).body[0]
    assert isinstance(stmt, ast.Assign)
    target = stmt.targets[0]
    if isinstance(target, ast.Tuple):
        elt = next(e for e in target.elts if isinstance(e, ast.Name) and e.id == name)
        assert passed_back(stmt.value, name, str, (target.elts, elt)) is expected
    else:
        assert passed_back(stmt.value, name, str) is expected


def test_unwrapped_and_rewraps() -> None:
    inner = unwrapped(_expr("accelerator.unwrap_model(model)"))
    assert isinstance(inner, ast.Name) and inner.id == "model"
    assert rewraps(ast.parse("model = prepare_pippy(model, split)").body[0], "model")
    assert not rewraps(ast.parse("other = prepare_pippy(model)").body[0], "model")


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("torch.load(f)", True),
        ("torch.hub.load('repo', 'name').to(device)", True),
        ("Net.from_pretrained(path)", True),
        ("AutoTokenizer.from_pretrained(path)", False),
        ("torch.jit.load(f)", False),  # a ScriptModule: built, not a loader needing use
        ("json.load(f)", False),
    ],
)
def test_loaders_needing_use(source: str, found: bool) -> None:
    tree = ast.parse("import torch\nimport json\nfrom transformers import AutoTokenizer\n")
    assert (loaded(_expr(source), ImportMap.build(tree)) is not None) is found


def test_library_forwards_of_a_transformers_model() -> None:
    tree = ast.parse("from transformers import AutoModelForSeq2SeqLM\n")
    call = _expr("AutoModelForSeq2SeqLM.from_pretrained('t5-small')")
    assert isinstance(call, ast.Call)
    assert library_forwards(call, ImportMap.build(tree)) == {"generate"}


_CLASS = """
class Net(nn.Module):
    def forward(self, x):
        return self.body(x)

    def scores(self, x):
        return self(x).softmax(1)

    def predict(self, x):
        return self.scores(x).argmax(1)

    def logits(self, x):
        return self.forward(x)

    def sample(self, x):
        self.eval()
        return self(x)

    @torch.no_grad()
    def generate(self, x):
        return self(x)

    def fit(self, x, opt):
        self(x).sum().backward()
        opt.step()

    def helper(self, x):
        return x + 1
"""


def test_forward_methods_are_computed_from_the_class() -> None:
    cls = ast.parse(_CLASS).body[0]
    assert isinstance(cls, ast.ClassDef)
    # ``sample`` switches the mode, ``generate`` is decorated, ``fit`` trains:
    # none is a plain forward of its caller's.
    assert forward_methods(cls) == {"scores", "predict", "logits"}


def _loop_elements(source: str) -> tuple[str, ...] | None:
    tree = ast.parse(source)
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    loop = next(n for n in ast.walk(tree) if isinstance(n, ast.For))
    return Elements(tree, parents).of_loop(loop)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("for m in (enc, dec):\n    m.eval()", ("enc", "dec")),
        ("models = [enc, dec]\nfor m in models:\n    m.eval()", ("enc", "dec")),
        ("nets = {'G': G, 'D': D}\nfor n in nets.values():\n    n.eval()", ("G", "D")),
        ("nets = {'G': G}\nfor n in nets:\n    n.eval()", None),  # the keys
        ("models = [enc]\nmodels.append(dec)\nfor m in models:\n    m.eval()", None),
        ("models = [enc]\nmodels += [dec]\nfor m in models:\n    m.eval()", None),
        ("models = [f(x) for x in xs]\nfor m in models:\n    m.eval()", None),
        ("for m in []:\n    m.eval()", None),
    ],
)
def test_loop_elements_written_out(source: str, expected: tuple[str, ...] | None) -> None:
    assert _loop_elements(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("nets['G']", 'nets["G"]'),
        ('self.models["gen"].encoder', 'self.models["gen"].encoder'),
        ("module_list[-1]", "module_list[-1]"),
        ("nets[key]", None),
        ("nets['a.b']", None),
        ("nets[True]", None),
        ("f(x)[0]", None),
    ],
)
def test_paths_through_constant_subscripts(source: str, expected: str | None) -> None:
    assert dotted(_expr(source)) == expected


def test_subscript_paths_are_parts_of_their_container() -> None:
    assert parent_path('self.nets["G"]') == "self.nets"
    assert parent_path('nets["G"].encoder') == 'nets["G"]'
    assert is_below('nets["G"]', "nets") and not is_below("netsG", "nets")
    assert root_name('nets["G"].encoder') == "nets"


def test_star_reexports_are_followed(tmp_path: Path) -> None:
    pkg = tmp_path / "utils"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .tensor import *\n")
    helper = "import torch\n\n\ndef predict(model, x):\n    return model(x)\n"
    (pkg / "tensor.py").write_text(helper)
    main = tmp_path / "train.py"
    main.write_text("import utils\n")
    bindings = import_bindings(ast.parse("from .tensor import *\nfrom a import b\n"))
    assert stars(bindings) == [(1, ("tensor",))]
    index = ProjectIndex.build([main, pkg / "__init__.py", pkg / "tensor.py"])
    view = index.view(str(main), ast.parse(main.read_text()))
    found = view.lookup(_expr("utils.predict"))
    assert found is not None and found.summary.forwards == ("model",)  # type: ignore[union-attr]


_PIECES = """
class AutoEncoder(nn.Module):
    def __init__(self, encoder, tokenizer):
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.blocks = nn.ModuleList([nn.Linear(4, 4)])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.encode(self.mask(x)))

    def encode(self, x):
        return self.encoder(x)

    def mask(self, x):
        return x * (x != 0)

    def features(self, x):
        return self.head(x)

    def block(self, x, i):
        return self.blocks[i](x)

    def tokens(self, text):
        return self.tokenizer(text)

    def size(self):
        return sum(p.numel() for p in self.parameters())
"""


def test_forward_methods_include_the_pieces_of_the_forward() -> None:
    cls = ast.parse(_PIECES).body[0]
    assert isinstance(cls, ast.ClassDef)
    # ``encode``: called by ``forward``, runs an attribute the class assigns;
    # ``features``/``block``: run a submodule (``submodules``, the caller's).
    # ``mask`` (reached, calls no attribute), ``tokens`` (a plain callable
    # ``forward`` never reaches) and ``size`` (an inherited method) run nothing.
    assert forward_methods(cls, frozenset({"blocks", "head"})) == {"encode", "features", "block"}
    # Without the caller's submodules: ``encode`` as above, and ``features``,
    # which calls ``self.head``, an attribute ``forward`` itself runs.
    assert forward_methods(cls) == {"encode", "features"}


_FORWARD_PARTS = """
class Transformer(nn.Module):
    def __init__(self, encoder=None, decoder=None):
        super().__init__()
        self.encoder = encoder if encoder is not None else Encoder()
        self.decoder = decoder if decoder is not None else Decoder()
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x, lengths, y):
        enc = self.encoder(x, lengths)
        return self.criterion(self.decoder(y, enc), y)

    def recognize(self, x, lengths, beam):
        enc = self.encoder(x.unsqueeze(0), lengths)
        return self.decoder.recognize_beam(enc[0], beam)

    def loss(self, logits, y):
        return self.criterion(logits, y)
"""


def test_forward_methods_include_methods_running_the_forwards_parts() -> None:
    # Speech-Transformer's ``recognize``: the encoder the forward runs, of a
    # class another file defines (no submodules known). ``loss`` runs only the
    # stateless criterion the forward runs too: no part of the model.
    cls = ast.parse(_FORWARD_PARTS).body[0]
    assert isinstance(cls, ast.ClassDef)
    assert forward_methods(cls) == {"recognize"}
