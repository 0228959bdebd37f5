"""Return-value summaries (``rnnfix.analysis.torch.returns``): what RNF002's proof
that a name holds a data-parallel wrapper may rely on."""

from __future__ import annotations

import ast
import pickle
import textwrap
from pathlib import Path

from rnnfix.analysis.project.index import ProjectIndex
from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.torch.returns import ReturnFacts, Returns

HEADER = """
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
"""


def _summaries(body: str) -> dict[str, Returns]:
    tree = ast.parse(HEADER + textwrap.dedent(body))
    return ReturnFacts(tree, ImportMap.build(tree)).summaries()


def test_returns_its_argument_through_self_returning_methods() -> None:
    found = _summaries(
        """
        def to_cuda(m):
            if torch.cuda.is_available():
                return m.cuda()
            return m

        def to_device(m, device):
            return m.to(device).float()
        """
    )
    assert found == {
        "to_cuda": Returns("function", param=0),
        "to_device": Returns("function", param=0),
    }


def test_returns_a_wrapper_on_every_path() -> None:
    found = _summaries(
        """
        def build(net):
            model = net.cuda()
            model = nn.DataParallel(model)
            return model

        def build_ddp(net, rank):
            with torch.no_grad():
                wrapped = DDP(net.to(rank), device_ids=[rank])
            return wrapped.to(rank)

        def moved(net):
            return to_cuda(build(net))

        def to_cuda(m):
            return m.cuda()
        """
    )
    assert found["build"] == Returns("function", wrapper=True)
    assert found["build_ddp"] == Returns("function", wrapper=True)
    assert found["moved"] == Returns("function", wrapper=True)


def test_a_wrapper_on_some_paths_only_is_unknown() -> None:
    found = _summaries(
        """
        def maybe(model, n):
            if n > 1:
                model = nn.DataParallel(model)
            return model

        def early(model, n):
            if n > 1:
                return nn.DataParallel(model)
            return model

        def falls_off(model, ok):
            if ok:
                return nn.DataParallel(model)

        def in_loop(models):
            for m in models:
                w = nn.DataParallel(m)
            return w

        def in_try(model):
            try:
                model = nn.DataParallel(model)
            except RuntimeError:
                pass
            return model

        def generator(model):
            yield nn.DataParallel(model)

        def compiled(model):
            return torch.compile(nn.DataParallel(model))

        def recursive(model):
            return recursive(model)

        def unwrap(model):
            return model.module

        def reassigned(model, other):
            model = other
            return model
        """
    )
    # ``reassigned`` returns its second parameter, whatever it is.
    assert found == {"reassigned": Returns("function", param=1)}


def test_methods_by_kind_and_bases_of_the_file() -> None:
    found = _summaries(
        """
        class Base:
            def prepared(self):
                return self.cuda()

        class Trainer(Base):
            @staticmethod
            def load(path):
                return DDP(torch.load(path))

            @classmethod
            def build(cls, net):
                return cls.wrap(net)

            @staticmethod
            def wrap(net):
                return nn.DataParallel(net)

            def moved(self, net):
                return net.cuda()
        """
    )
    assert found["Trainer.load"] == Returns("staticmethod", wrapper=True)
    assert found["Trainer.build"] == Returns("classmethod", wrapper=True)
    assert found["Trainer.moved"] == Returns("method", param=1)
    assert found["Trainer.prepared"] == Returns("method", param=0)
    assert found["Base.prepared"] == Returns("method", param=0)


def test_is_wrapper_binds_arguments_and_receivers() -> None:
    tree = ast.parse(
        HEADER
        + textwrap.dedent(
            """
            def pick(a, b):
                return b

            class Holder(nn.Module):
                def to_gpu(self):
                    return self.cuda()

            x = pick(nn.Linear(2, 2), nn.DataParallel(net))
            y = pick(nn.DataParallel(net), nn.Linear(2, 2))
            z = pick(*args)
            """
        )
    )
    facts = ReturnFacts(tree, ImportMap.build(tree))
    values = {
        t.targets[0].id: t.value  # type: ignore[attr-defined]
        for t in tree.body
        if isinstance(t, ast.Assign)
    }
    assert facts.is_wrapper(values["x"])
    assert not facts.is_wrapper(values["y"])
    assert not facts.is_wrapper(values["z"])


def test_project_returns_are_read_lazily_and_pickle(tmp_path: Path) -> None:
    (tmp_path / "factory.py").write_text(
        "import torch.nn as nn\n\ndef make(net):\n    return nn.DataParallel(net).cuda()\n"
    )
    (tmp_path / "train.py").write_text("from factory import make\nmodel = make(net)\n")
    index = ProjectIndex.build([tmp_path / "factory.py", tmp_path / "train.py"])
    tree = ast.parse((tmp_path / "train.py").read_text())
    view = index.view(str(tmp_path / "train.py"), tree)
    call = tree.body[1].value  # type: ignore[attr-defined]
    assert view.returns(call.func) == Returns("function", wrapper=True)
    assert str(tmp_path / "factory.py") in view.consulted
    copy = pickle.loads(pickle.dumps(index))
    assert copy.returns_of(str(tmp_path / "factory.py")) == index.returns_of(
        str(tmp_path / "factory.py")
    )


def test_tuples_say_which_element_is_a_wrapper() -> None:
    found = _summaries(
        """
        def setup(net, lr):
            model = nn.DataParallel(net)
            return model, torch.optim.SGD(model.parameters(), lr=lr)

        def sometimes(net, n):
            if n > 1:
                return nn.DataParallel(net), n
            return net, n
        """
    )
    assert found == {"setup": Returns("function", items=(True, False))}
