"""May a fix call ``train()``/``eval()`` on an object? (``analysis.receivers``)"""

from __future__ import annotations

import ast
import textwrap

import pytest

from rnnfix.analysis.modes.receivers import ReceiverCheck
from rnnfix.analysis.project.summarise import summarise
from rnnfix.analysis.torch.api import is_stateless_torch_module
from rnnfix.rules.base import FileContext

CLASSES = """
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.loss import ComputeLoss


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)

    def train(self):
        super().train()
        self.bn.eval()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = nn.Linear(8, 2)


class Finetune(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def train(self, mode=True):
        super().train(mode)
        return self


class FrozenBN(nn.BatchNorm2d):
    def train(self, mode=False):
        self.training = False
        return self


class Learner(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def train(self, data, epochs):
        for _ in range(epochs):
            pass


class Calculator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def eval(self, expr):
        return expr


class Focal(nn.Module):
    def __init__(self, gamma=2.0, weight=None):
        super().__init__()
        self.gamma = gamma
        self.weight = weight


class Holder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model


class Noisy(nn.Module):
    def forward(self, x):
        return x + torch.randn_like(x) if self.training else x


class Plain:
    def __call__(self, x):
        return x


net = Net()
parallel = nn.DataParallel(Backbone()).cuda()
finetune = Finetune().cuda()
ddp = DDP(finetune)
frozen = FrozenBN(8)
learner = Learner()
calc = Calculator()
softmax = nn.Softmax(dim=1)
criterion = nn.CrossEntropyLoss()
focal = Focal()
holder = Holder(net)
noisy = Noisy()
plain = Plain()
compute_loss = ComputeLoss(net)
drop = nn.Dropout(0.1)


def fit(m: nn.Module, other, tagger: Backbone):
    other.eval()
"""


def check(key: str, method: str = "train", source: str = CLASSES) -> ReceiverCheck:
    source = textwrap.dedent(source)
    ctx = FileContext(source=source, tree=ast.parse(source))
    return ctx.facts.receivers.check(key, method)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "key", ["finetune", "ddp", "ddp.module", "frozen", "drop", "net.head", "holder", "noisy", "m"]
)
def test_provable_modules_whose_mode_matters(key: str) -> None:
    found = check(key)
    assert found.reason is None and found.provable, found


@pytest.mark.parametrize("key", ["net", "net.backbone", "parallel", "parallel.module", "tagger"])
@pytest.mark.parametrize("method", ["train", "eval"])
def test_train_without_mode_blocks_both_calls_through_children_and_wrappers(
    key: str, method: str
) -> None:
    found = check(key, method)
    assert found.override and "`Backbone.train`" in (found.reason or "")
    assert "does not accept `mode`" in (found.reason or "")


def test_train_that_is_a_training_loop() -> None:
    found = check("learner", "eval")  # ``Module.eval`` calls ``self.train(False)``
    assert found.override and "requires `data`, `epochs`" in (found.reason or "")


def test_eval_that_is_another_method_blocks_eval_only() -> None:
    assert check("calc", "eval").override
    assert check("calc", "train").reason is None


@pytest.mark.parametrize("key", ["softmax", "criterion", "focal"])
def test_stateless_modules_are_not_the_model(key: str) -> None:
    found = check(key)
    assert found.kind == "stateless" and not found.provable


def test_plain_objects_and_unknown_ones() -> None:
    assert check("plain").kind == "not_module"
    unknown = check("compute_loss")  # imported, no project index: unknown, not refused
    assert unknown.kind == "unknown" and unknown.reason is None and not unknown.provable
    assert check("other").provable  # the file switches it itself


def test_stateless_torch_classes() -> None:
    assert is_stateless_torch_module("torch.nn.ReLU")
    assert is_stateless_torch_module("torch.nn.AdaptiveAvgPool2d")
    assert is_stateless_torch_module("torch.nn.BCEWithLogitsLoss")
    assert is_stateless_torch_module("torch.nn.NLLLoss2d")  # deprecated, in old FCN code
    assert not is_stateless_torch_module("torch.nn.Dropout")
    assert not is_stateless_torch_module("torch.nn.PReLU")  # has a parameter
    assert not is_stateless_torch_module("torch.nn.BatchNorm1d")


def test_project_summary_keeps_overrides_and_state() -> None:
    summary = summarise(textwrap.dedent(CLASSES), "/p/models.py")
    assert summary is not None
    assert "models.py line" in summary.classes["Backbone"].mode_overrides["train"]
    assert "Backbone.train" in summary.classes["Net"].mode_overrides["eval"]
    assert not summary.classes["Finetune"].mode_overrides
    assert not summary.classes["Focal"].holds_state
    assert summary.classes["Holder"].holds_state


def test_summary_of_a_file_with_only_an_override() -> None:
    source = """
    import torch.nn as nn


    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def train(self):
            pass
    """
    summary = summarise(textwrap.dedent(source), "/p/tagger.py")
    assert summary is not None and "train" in summary.classes["Tagger"].mode_overrides


def test_a_copy_has_the_class_of_what_it_copies() -> None:
    source = (
        CLASSES
        + "\nimport copy\nema = copy.deepcopy(parallel)\nsnapshot = copy.deepcopy(finetune)\n"
    )
    assert check("ema", source=source).override
    assert check("snapshot", source=source).provable


def test_containers_are_stateless_only_when_every_element_is() -> None:
    source = CLASSES + (
        "\nacts = nn.Sequential(nn.ReLU(), nn.Flatten())"
        "\nlayers = [nn.Linear(2, 2)]\nstack = nn.Sequential(*layers)"
        "\nblocks = nn.ModuleList([Backbone() for _ in range(2)])\n"
    )
    assert check("acts", source=source).kind == "stateless"
    assert check("stack", source=source).provable
    assert check("blocks", source=source).override


SWITCHED_LOSSES = """
import torch.nn as nn


def error_rate(preds, targets):
    return (preds != targets).float().mean()


class Picked(nn.Module):
    def __init__(self, eval_mode=False, train=True):
        super().__init__()
        self.loss = error_rate if eval_mode else nn.CrossEntropyLoss()
        self.train = train


class PickedLayer(nn.Module):
    def __init__(self, eval_mode=False):
        super().__init__()
        self.loss = error_rate if eval_mode else nn.Linear(2, 2)


class Rebound(nn.Module):
    def __init__(self):
        super().__init__()
        error_rate = nn.Linear(2, 2)
        self.loss = error_rate


class Flagged(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.train = True


picked = Picked()
flagged = Flagged()
layer = PickedLayer()
rebound = Rebound()
"""


def test_a_conditional_choice_of_parameter_free_parts_holds_no_state() -> None:
    summary = summarise(textwrap.dedent(SWITCHED_LOSSES), "/p/losses.py")
    assert summary is not None
    assert not summary.classes["Picked"].holds_state
    assert summary.classes["PickedLayer"].holds_state  # one branch has parameters
    assert summary.classes["Rebound"].holds_state  # the name is a local, not the function


@pytest.mark.parametrize("method", ["train", "eval"])
def test_an_instance_attribute_named_train_hides_the_mode_switch(method: str) -> None:
    summary = summarise(textwrap.dedent(SWITCHED_LOSSES), "/p/losses.py")
    assert summary is not None
    why = summary.classes["Picked"].mode_overrides["train"]
    assert "assigns `self.train`" in why
    found = check("flagged", method, source=SWITCHED_LOSSES)
    assert found.override and "hides the `train` method" in (found.reason or "")


MODE_FREE = """
import torch.nn as nn
import torch.nn.functional as F
from blocks import Block


class Plain:
    pass


class Head(nn.Module):
    def __init__(self, width, std):
        super().__init__()
        self.std = std
        self.plain = Plain()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(2)])

    def forward(self, x):
        return self.layers[1](F.relu(self.layers[0](x))) * self.std


class Net(nn.Module):
    def __init__(self, width, std):
        super().__init__()
        self.head = Head(width, std)
        self.body = Block(width)


class Dropping(Head):
    def __init__(self, width, std):
        super().__init__(width, std)
        self.layers.append(nn.Dropout(0.1))


class Flagged(nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.5, self.training)


class Runs(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, x):
        return self.encoder(x)
"""


def test_mode_free_classes_and_what_they_need_from_other_files() -> None:
    summary = summarise(textwrap.dedent(MODE_FREE), "/p/models.py")
    assert summary is not None
    needs = {name: cls.mode_free_needs for name, cls in summary.classes.items()}
    assert needs["Head"] == ()  # a number the caller passes, read as one
    assert needs["Net"] == ("Block",)  # the other file's class decides
    assert needs["Dropping"] is None  # a Dropout added to the inherited list
    assert needs["Flagged"] is None  # reads ``self.training``
    assert needs["Runs"] is None  # runs a module the caller passes
