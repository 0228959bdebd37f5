"""``shows``: which parameters of a function have what they compute shown
(printed, logged, written, saved, plotted), and which functions do more than
show (train, read gradients, switch a mode, yield) and count for none."""

from __future__ import annotations

import ast
import textwrap

import pytest

from rnnfix.analysis.modes.shows import (
    call_shows,
    positional_parameters,
    receiving,
    shown_parameters,
)


def _shown(code: str) -> frozenset[str]:
    tree = ast.parse(textwrap.dedent(code))
    local = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    func = next(iter(local.values()))
    return shown_parameters(func, local, positional_parameters(func))


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("def f(model, x):\n    print(model(x).mean())", {"model"}),
        ("def f(net, z, path):\n    save_image(net.decode(z), path)", {"net"}),
        (
            "def f(model, batches):\n    acc = 0\n    for x, y in batches:\n"
            "        acc += (model(x).argmax(1) == y).sum().item()\n    logger.info(acc)",
            {"model"},
        ),
        # Only ``stream`` is shown, not ``model``; which of them is a model
        # is for the call to say (``receiving``).
        ("def f(model, stream):\n    print(stream.read(), type(model).__name__)", {"stream"}),
        ("def f(model, x):\n    print(model(x).shape)", set()),
        ("def f(self, x):\n    print(self(x))", set()),
        # A generator of another file sampled from noise it makes up.
        ("def f(gen, n):\n    z = torch.randn(n, 8)\n    save_image(gen(z), 's.png')", set()),
        # Its own list: collected, then shown.
        (
            "def f(model, xs):\n    out = []\n    for x in xs:\n        out.append(model(x))\n"
            "    print(out)",
            {"model"},
        ),
    ],
)
def test_shown_parameters(code: str, expected: set[str]) -> None:
    assert _shown(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        "def f(model, x, opt):\n    loss = model(x).sum()\n    loss.backward()\n    print(loss)",
        "def f(model, x):\n    model.train()\n    print(model(x))",
        "def f(model, x):\n    model.eval()\n    print(model(x))",
        "def f(model, x):\n    print(model(x))\n    fine_tune_epoch(model, x)",
        "def f(model, x):\n    print(torch.autograd.grad(model(x).sum(), x))",
        "def f(model, x):\n    out = model(x)\n    print(out)\n    yield out",
        "def f(model, x):\n    global last\n    last = model(x)\n    print(last)",
        # What it computes handed back through a parameter.
        "def f(model, x, results):\n    out = model(x)\n    results.append(out)\n    print(out)",
        "def f(model, x, buf):\n    out = model(x)\n    buf[0] = out\n    print(out)",
        "def f(model, x):\n    out = model(x)\n    HISTORY.append(out)\n    print(out)",
        # A function of the file it calls takes a gradient.
        "def f(model, x):\n    adapt(model, x)\n    print(model(x))\n"
        "def adapt(model, x):\n    model(x).sum().backward()",
    ],
)
def test_a_function_that_does_more_than_show_shows_nothing(code: str) -> None:
    assert _shown(code) == frozenset()


def test_receiving_binds_positional_and_keyword_arguments() -> None:
    call = ast.parse("f(images, net=model, path=p)").body[0].value  # type: ignore[attr-defined]
    assert receiving(("images", "path"), ("net",), call, {"model"}) == {"net"}
    call = ast.parse("f(model, x)").body[0].value  # type: ignore[attr-defined]
    assert receiving(("net", "x"), (), call, {"model"}) == {"net"}
    call = ast.parse("f(*args)").body[0].value  # type: ignore[attr-defined]
    assert receiving(("net", "x"), (), call, {"model"}) == set()


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        ("def f(net, images):\n    save_image(net(images), 'r.png')", True),
        # A generator sampled from noise: the author's mode and grad.
        ("def f(net, n):\n    z = torch.randn(n, 8)\n    save_image(net(z), 's.png')", False),
        (
            "def f(net, n):\n    z = Variable(FloatTensor(np.random.normal(0, 1, (n, 8))))\n"
            "    save_image(net(z).data, 's.png')",
            False,
        ),
    ],
)
def test_call_shows_leaves_a_generator_fed_noise(code: str, shown: bool) -> None:
    tree = ast.parse(code)
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    call = ast.parse("f(model, 16)").body[0].value  # type: ignore[attr-defined]
    assert call_shows(func, {"f": func}, call, {"model"}) is shown
