"""RNF006 on inference classes (issue 24.5): what counts as a held model, and
what keeps the class out. Each shape below was met on real code (the
ecosystem trees); the fixtures hold the full cases."""

from __future__ import annotations

import textwrap

from rnnfix.analysis.modes.inferclass import class_text
from rnnfix.config.settings import Settings
from rnnfix.run.engine import check_source, fix_source

PREDICTOR = """
import torch
from torch import nn


class Predictor:
    def __init__(self, path):
        self.model = nn.Sequential(nn.Linear(16, 4), nn.Dropout(0.1))
        self.model.load_state_dict(torch.load(path))

    def __call__(self, x):
        return self.model(x).argmax(-1)
"""


def _rnf006(source: str) -> list[str]:
    found = check_source(textwrap.dedent(source), Settings(select=("RNF006",)))
    return [f.message for f in found]


def test_owned_model_gets_eval_and_no_grad() -> None:
    fixed = fix_source(PREDICTOR, Settings()).fixed
    assert (
        "        self.model.load_state_dict(torch.load(path))\n        self.model.eval()\n" in fixed
    )
    assert "    @torch.no_grad()\n    def __call__" in fixed
    assert check_source(fixed, Settings()) == []
    assert class_text(PREDICTOR)


def test_rebinding_to_a_device_keeps_the_model() -> None:
    # KronosPredictor's shape: ``self.model = self.model.to(self.device)``.
    source = PREDICTOR.replace(
        "        self.model.load_state_dict(torch.load(path))\n",
        "        self.model.load_state_dict(torch.load(path))\n"
        '        self.model = self.model.to("cpu")\n',
    )
    assert len(_rnf006(source)) == 2


def test_shapes_that_keep_a_class_out() -> None:
    cases = {
        # the file trains (a fit() with an optimizer): not inference code
        "trains": PREDICTOR.replace(
            "    def __call__(self, x):",
            "    def fit(self, x, y):\n"
            "        opt = torch.optim.SGD(self.model.parameters(), 0.1)\n"
            "        loss = (self.model(x) - y).pow(2).mean()\n"
            "        loss.backward()\n"
            "        opt.step()\n\n"
            "    def __call__(self, x):",
        ),
        # reached under another name: not followed
        "alias": PREDICTOR.replace(
            "        return self.model(x).argmax(-1)",
            "        net = self.model\n        return net(x).argmax(-1)",
        ),
        # an abstract base: its subclasses, elsewhere, say what it is run for
        "abstract": PREDICTOR.replace("class Predictor:", "class Predictor(ABC):").replace(
            "import torch\n", "from abc import ABC\nimport torch\n"
        ),
        # a mode set by the author somewhere in the file
        "switched": PREDICTOR + "\n\npredictor = Predictor('m.pt')\npredictor.model.eval()\n",
        # its own mode setters: its callers choose
        "setter": PREDICTOR.replace(
            "    def __call__(self, x):",
            "    def eval(self):\n        self.model.eval()\n\n    def __call__(self, x):",
        ),
    }
    for name, source in cases.items():
        assert _rnf006(source) == [], name


def test_given_objects_must_look_like_models() -> None:
    # detr's CocoPanoptic: ``self.transforms`` is called, and is no model.
    transforms = """
    import torch

    class CocoPanoptic:
        def __init__(self, img_folder, transforms=None):
            self.transforms = transforms

        def __getitem__(self, idx):
            img, target = self.transforms(torch.load(idx), None)
            return img.view(-1), target
    """
    assert _rnf006(transforms) == []
    # A tokenizer from ``from_pretrained`` is no model either.
    tokenizer = """
    import torch
    from transformers import AutoTokenizer

    class TextProcessor:
        def __init__(self, name):
            self.tokenizer = AutoTokenizer.from_pretrained(name)

        def __call__(self, text):
            return self.tokenizer(text)["input_ids"].detach()
    """
    assert _rnf006(tokenizer) == []
    # A model's name and results read as tensors: reported (eval), and the
    # method that returns only detached values gets no_grad.
    given = """
    class Predictor:
        def __init__(self, model, vocab):
            self.model = model
            self.vocab = vocab

        def predict(self, seq):
            out = self.model([seq])
            return [self.vocab[i] for i in out.data[0]]
    """
    messages = _rnf006(given)
    assert len(messages) == 2 and "not fixed: it is the caller's object" in messages[0]
    fixed = fix_source(textwrap.dedent(given), Settings()).fixed
    assert "    @torch.no_grad()\n    def predict" in fixed and "self.model.eval()" not in fixed


def test_no_eval_for_a_readable_model_without_mode_layers() -> None:
    # diffusers' DiffusionPolicy encoders: Linear and ReLU only.
    source = PREDICTOR.replace(
        "nn.Sequential(nn.Linear(16, 4), nn.Dropout(0.1))", "nn.Linear(16, 4)"
    )
    (message,) = _rnf006(source)
    assert message.startswith("`__call__` runs `self.model` for inference with grad enabled")


def test_results_that_leave_with_a_graph_get_no_no_grad() -> None:
    source = PREDICTOR.replace("return self.model(x).argmax(-1)", "return self.model(x)")
    messages = _rnf006(source)
    assert any("not fixed: what it computes is returned" in m for m in messages)
    fixed = fix_source(source, Settings()).fixed
    assert "no_grad" not in fixed and "self.model.eval()" in fixed


def test_wrappers_of_other_frameworks_and_subclasses_stay_out() -> None:
    # TextAttack's TensorFlowModelWrapper: no torch import, a Keras model's
    # ``preds.numpy()``; and the same class as a subclass of a wrapper base.
    keras = """
    import numpy as np

    class TensorFlowModelWrapper:
        def __init__(self, model):
            self.model = model

        def __call__(self, text_input_list):
            preds = self.model(np.array(text_input_list))
            return preds.numpy()
    """
    assert _rnf006(keras) == []
    torch_wrapper = keras.replace("import numpy as np", "import numpy as np\n    import torch")
    assert len(_rnf006(torch_wrapper)) == 2
    subclass = torch_wrapper.replace(
        "class TensorFlowModelWrapper:", "class TensorFlowModelWrapper(ModelWrapper):"
    )
    assert _rnf006(subclass) == []


def test_a_model_the_file_puts_in_eval_before_passing_it_is_not_reported() -> None:
    # TextAttack's QueryHandler.load_model: ``model.eval()`` then
    # ``QueryHandler(model, ...)``; the no_grad part stays.
    source = """
    import torch

    class QueryHandler:
        def __init__(self, model, device):
            self.model = model
            self.device = device

        def try_query(self, source, hidden):
            decode, hidden = self.model(source, hidden)
            return [decode[t].sum().item() for t in range(len(decode))]

        @staticmethod
        def load_model(path, device):
            model = RNNModel("GRU", 256, dropout=0.01)
            model.load_state_dict(torch.load(path))
            model.eval()
            return QueryHandler(model, device)
    """
    (message,) = _rnf006(source)
    assert message.startswith("`try_query` runs `self.model` for inference with grad enabled")
