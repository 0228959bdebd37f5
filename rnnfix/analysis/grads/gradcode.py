"""Gradient code on inputs: attribution, adversarial examples, saliency.

What RNF004 needs to tell a gradient taken *on purpose* while a model is in
eval mode (the gradient is the result) from a training step:

- captum's gradient-based attribution, ``Saliency(model).attribute(x)`` or
  ``ig = IntegratedGradients(model)`` ... ``ig.attribute(x)``: the forward
  and the backward both run inside ``attribute``. The class is resolved
  through the file's imports (``captum.attr`` or one of its submodules), never
  by its name alone; perturbation methods (``Occlusion``, ``FeatureAblation``,
  ``Lime``, ``KernelShap``...) take no gradient and do not count;
- evidence that a backward is about an input: the input is made to require
  grad (``x.requires_grad_()``, ``requires_grad=True``), its ``.grad`` is read,
  or ``torch.autograd.grad`` is taken with respect to something that is not a
  parameter. Gradients of parameters (``p.grad`` in a loop over
  ``parameters()``, manual SGD) are training, not gradient code on inputs.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rnnfix.analysis.syntax.imports import ImportMap
from rnnfix.analysis.syntax.names import dotted

# captum.attr classes whose ``attribute`` backpropagates through the model.
CAPTUM_GRADIENT = frozenset(
    {
        "Saliency",
        "IntegratedGradients",
        "DeepLift",
        "DeepLiftShap",
        "GradientShap",
        "InputXGradient",
        "GuidedBackprop",
        "GuidedGradCam",
        "Deconvolution",
        "LRP",
        "LayerGradCam",
        "LayerIntegratedGradients",
        "LayerConductance",
        "LayerDeepLift",
        "LayerDeepLiftShap",
        "LayerGradientShap",
        "LayerGradientXActivation",
        "LayerLRP",
        "InternalInfluence",
        "NeuronGradient",
        "NeuronIntegratedGradients",
        "NeuronConductance",
        "NeuronDeepLift",
        "NeuronDeepLiftShap",
        "NeuronGradientShap",
        "NeuronGuidedBackprop",
        "NeuronDeconvolution",
    }
)
_WRAPPERS = frozenset({"NoiseTunnel"})  # ``NoiseTunnel(IntegratedGradients(model))``
AUTOGRAD_GRAD = "torch.autograd.grad"
Values = Callable[[str, ast.AST], list[ast.expr]]


@dataclass(frozen=True)
class Attribution:
    """``<captum gradient method>(forward_func, ...).attribute(...)``."""

    call: ast.Call  # the ``.attribute(...)`` call: forward and backward run here
    forward_func: ast.expr  # what the method was built with


def captum_method(imports: ImportMap, func: ast.expr) -> str | None:
    """The captum.attr class ``func`` names (``Saliency``), resolved through imports."""
    qual = imports.qualname(func) or ""
    if not (qual == "captum.attr" or qual.startswith("captum.attr.")):
        return None
    name = qual.rsplit(".", 1)[-1]
    return name if name in CAPTUM_GRADIENT or name in _WRAPPERS else None


def attribution(call: ast.Call, imports: ImportMap, values: Values) -> Attribution | None:
    """``call`` as a captum gradient attribution; ``values(name, use)`` gives the
    values assigned to a dotted name where it is used (``ig`` -> ``IntegratedGradients(m)``)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "attribute"):
        return None
    forward = _built_with(func.value, call, imports, values, 0)
    return Attribution(call, forward) if forward is not None else None


def _built_with(
    expr: ast.expr, use: ast.AST, imports: ImportMap, values: Values, depth: int
) -> ast.expr | None:
    if depth > 3:
        return None
    if isinstance(expr, ast.Call):
        name = captum_method(imports, expr.func)
        if name is None:
            return None
        first = expr.args[0] if expr.args and not isinstance(expr.args[0], ast.Starred) else None
        for k in expr.keywords:
            if k.arg in ("forward_func", "model", "attribution_method"):
                first = k.value
        if first is None:
            return None
        if name in _WRAPPERS:
            return _built_with(first, use, imports, values, depth + 1)
        return first
    text = dotted(expr)
    if text is None:
        return None
    found = [_built_with(v, use, imports, values, depth + 1) for v in values(text, use)]
    # One consistent construction, or we do not know what it attributes.
    if len(found) != 1 or found[0] is None:
        return None
    return found[0]


def forward_model(
    forward_func: ast.expr,
    is_model: Callable[[str], bool],
    function: Callable[[str], ast.FunctionDef | ast.AsyncFunctionDef | None],
) -> str | None:
    """The model a captum method runs: ``model``, ``model.forward``, or the one
    model a ``lambda`` or a function of the file (``def forward_fn(x): return
    model(x)[0]``, found by ``function(name)``) calls."""
    text = dotted(forward_func)
    if text is not None:
        if text.endswith(".forward"):
            text = text[: -len(".forward")]
        if is_model(text):
            return text
        found = function(text) if "." not in text else None
        return _one_model(found.body, is_model) if found is not None else None
    if isinstance(forward_func, ast.Lambda):
        return _one_model([forward_func.body], is_model)
    return None


def _one_model(body: Iterable[ast.AST], is_model: Callable[[str], bool]) -> str | None:
    """The one model the code of ``body`` calls; None for none or several."""
    models = {
        text
        for node in body
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and (text := dotted(n.func)) is not None and is_model(text)
    }
    return models.pop() if len(models) == 1 else None


def input_gradient(
    nodes: Iterable[ast.AST], sink: ast.Call, imports: ImportMap, is_param: Callable[[str], bool]
) -> bool:
    """Whether the gradient code of ``sink`` is about an input: ``nodes`` (its
    scope's own nodes) make a non-parameter require grad, read its ``.grad``,
    or ``sink`` is ``torch.autograd.grad`` with respect to a non-parameter."""
    if imports.qualname(sink.func) == AUTOGRAD_GRAD:
        inputs = sink.args[1] if len(sink.args) > 1 else None
        for k in sink.keywords:
            if k.arg == "inputs":
                inputs = k.value
        return inputs is not None and not _parameters(inputs, is_param)
    for node in nodes:
        target: ast.expr | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "requires_grad_" and not (
                node.args and isinstance(node.args[0], ast.Constant) and not node.args[0].value
            ):
                target = node.func.value
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets
        ):
            if isinstance(node.value, ast.Constant) and node.value.value is True:
                target = next(
                    t.value
                    for t in node.targets
                    if isinstance(t, ast.Attribute) and t.attr == "requires_grad"
                )
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "grad"
            and isinstance(node.ctx, ast.Load)
            and (node.lineno, node.col_offset) > (sink.lineno, sink.col_offset)
        ):
            target = node.value
        if target is not None and not _parameters(target, is_param):
            return True
    return False


def _parameters(expr: ast.expr, is_param: Callable[[str], bool]) -> bool:
    """``model.parameters()``, ``p`` from a loop over them, ``net.fc.weight``,
    a name that says it holds parameters: not an input."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("parameters", "named_parameters"):
                return True
    text = dotted(expr)
    if text is None:
        return False
    last = text.rsplit(".", 1)[-1].lower()
    return is_param(text) or "param" in last or "weight" in last or last == "bias"


def parameter_names(nodes: list[ast.AST]) -> set[str]:
    """Names a loop binds to parameters: ``for p in model.parameters()``,
    ``for name, p in net.named_parameters()``."""
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            it = node.iter
            if (
                isinstance(it, ast.Call)
                and isinstance(it.func, ast.Attribute)
                and it.func.attr in ("parameters", "named_parameters")
            ):
                out.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return out
