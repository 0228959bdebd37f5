"""RNF001 end to end on the CPU: every runnable fixing fixture of RNF001 is run
as written and as fixed by rnnfix (RNF001 only). A global forward hook records
each module's ``training`` flag for every forward with grad enabled, and an
optimizer step pre-hook collects them per step (with LBFGS the closure's
forwards land in the next step's list, which is as good for this check).

The original must run some training step with an eval-mode module in its
forwards; the fixed script must run none.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from rnnfix.config.settings import Settings
from rnnfix.run.engine import fix_source

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "RNF001"
# One per family; fixtures that need other libraries, files or a GPU are not run.
FAMILIES = [
    "epoch_loop_validate_at_end",
    "validate_helper_function",
    "train_function_called_after_evaluate",
    "trainer_class_self_model",
    "while_loop_eval_every_n_steps",
    "step_loop_periodic_evaluation",
    "evaluate_then_train",
    "gan_generator_and_discriminator",
    "encoder_decoder_seq2seq",
    "actor_critic_agent_methods",
    "gradient_accumulation",
    "amp_grad_scaler",
    "alias_import_torch_as_th",
    "train_mode_false_keyword",
    "tabs_indentation",
    "nested_train_step_function",
    "dqn_qnet_evaluated_for_acting",
    "checkpoint_evaluator_two_levels",
    "torch_autograd_backward",
    "lbfgs_closure_eval_in_loop",
    "eval_inside_try_in_loop",
    "early_stopping_continue",
    "lstm_language_model_sample_each_epoch",
]


def _run(source: str, name: str, cwd: Path) -> list[list[bool]]:
    """Run ``source`` as ``__main__``; per optimizer step, the ``training``
    flags of the modules that ran forward with grad enabled since the last step."""
    steps: list[list[bool]] = []
    pending: list[bool] = []

    def on_forward(module: object, args: object, output: object) -> None:
        if torch.is_grad_enabled():
            pending.append(bool(module.training))  # type: ignore[attr-defined]

    def on_step(optimizer: object, args: object, kwargs: object) -> None:
        steps.append(list(pending))
        pending.clear()

    optimizer_module = importlib.import_module("torch.optim.optimizer")
    forward = torch.nn.modules.module.register_module_forward_hook(on_forward)
    step = optimizer_module.register_optimizer_step_pre_hook(on_step)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        torch.manual_seed(0)
        exec(compile(source, name, "exec"), {"__name__": "__main__", "__file__": name})
    finally:
        os.chdir(old)
        forward.remove()
        step.remove()
    return steps


@pytest.mark.parametrize("case", FAMILIES)
def test_fixed_script_trains_in_train_mode(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = FIXTURES / f"{case}.py"
    source = path.read_text(encoding="utf-8")
    result = fix_source(source, Settings(select=("RNF001",)), path.name)
    assert result.changed, "RNF001 did not fix the fixture"

    before = _run(source, path.name, tmp_path)
    assert before, "the original script ran no optimizer step"
    assert any(not all(flags) for flags in before), (
        "the original script never trained in eval mode: the fixture does not show the bug"
    )

    after = _run(result.fixed, path.name, tmp_path)
    assert len(after) == len(before)
    bad = [i for i, flags in enumerate(after) if not all(flags)]
    assert not bad, f"optimizer steps {bad} still follow eval-mode forwards"
