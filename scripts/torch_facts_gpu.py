"""Check TORCH_FACTS.md's claims about cuDNN on a real GPU (run by hand, on a lent GPU).

Each check runs a small LSTM/GRU/RNN program on CUDA and records what happened:
whether the backward raised cuDNN's "can only be called in training mode" error.
It prints one line per check (`claim: expected / seen`) and, with `--json`, writes
them all to a file. It asserts nothing and exits 0 when every observation matches
the claim, 1 otherwise, 2 when there is no CUDA device.

    python scripts/torch_facts_gpu.py --json facts.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import nn

CUDNN_ERROR = "backward can only be called in training mode"


@dataclass
class Observation:
    claim: str
    expected_error: bool
    seen_error: bool
    detail: str = ""

    @property
    def matches(self) -> bool:
        return self.expected_error == self.seen_error


def raises_cudnn(fn: Callable[[], None]) -> tuple[bool, str]:
    try:
        fn()
    except RuntimeError as e:
        if CUDNN_ERROR in str(e):
            return True, str(e).splitlines()[0]
        return False, f"other error: {str(e).splitlines()[0]}"
    return False, ""


def eval_step(
    make: Callable[[], nn.Module], shape: tuple[int, ...] = (4, 5, 8)
) -> Callable[[], None]:
    def step() -> None:
        m = make().cuda().eval()
        x = torch.randn(*shape, device="cuda")
        out = m(x)
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()

    return step


def checks() -> list[Observation]:
    obs: list[Observation] = []

    def add(claim: str, expected: bool, fn: Callable[[], None]) -> None:
        seen, detail = raises_cudnn(fn)
        obs.append(Observation(claim, expected, seen, detail))

    # Affected modules and configurations.
    add("LSTM eval forward + backward fails", True, eval_step(lambda: nn.LSTM(8, 16)))
    add("GRU eval forward + backward fails", True, eval_step(lambda: nn.GRU(8, 16)))
    add("RNN tanh eval + backward fails", True, eval_step(lambda: nn.RNN(8, 16)))
    add(
        "RNN relu eval + backward fails",
        True,
        eval_step(lambda: nn.RNN(8, 16, nonlinearity="relu")),
    )
    add(
        "LSTM batch_first, bidirectional, 2 layers, dropout 0 fails",
        True,
        eval_step(lambda: nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)),
    )
    add("LSTM proj_size fails", True, eval_step(lambda: nn.LSTM(8, 16, proj_size=4)))

    def packed() -> None:
        m = nn.LSTM(8, 16).cuda().eval()
        x = torch.randn(5, 3, 8, device="cuda")
        p = nn.utils.rnn.pack_padded_sequence(x, [5, 4, 2])
        out, _ = m(p)
        out.data.sum().backward()

    add("packed-sequence LSTM fails", True, packed)

    # Not affected: cells, CPU, train mode.
    add("LSTMCell eval + backward succeeds", False, eval_step(lambda: nn.LSTMCell(8, 16), (4, 8)))
    add("GRUCell eval + backward succeeds", False, eval_step(lambda: nn.GRUCell(8, 16), (4, 8)))

    def on_cpu() -> None:
        m = nn.LSTM(8, 16).eval()
        m(torch.randn(4, 5, 8))[0].sum().backward()

    add("LSTM eval on the CPU succeeds", False, on_cpu)

    def train_mode() -> None:
        m = nn.LSTM(8, 16).cuda().train()
        m(torch.randn(4, 5, 8, device="cuda"))[0].sum().backward()

    add("LSTM train mode succeeds", False, train_mode)

    # The flag is decided at forward time.
    def forward_succeeds() -> None:
        m = nn.LSTM(8, 16).cuda().eval()
        m(torch.randn(4, 5, 8, device="cuda"))

    add("eval forward with grad on succeeds (no backward)", False, forward_succeeds)

    def train_between() -> None:
        m = nn.LSTM(8, 16).cuda().eval()
        out, _ = m(torch.randn(4, 5, 8, device="cuda"))
        m.train()
        out.sum().backward()

    add("train() between forward and backward does not help", True, train_between)

    def through_h_n() -> None:
        m = nn.LSTM(8, 16).cuda().eval()
        _, (h, _) = m(torch.randn(4, 5, 8, device="cuda"))
        h.sum().backward()

    add("a loss through h_n alone fails", True, through_h_n)

    def grad_wrt_output() -> None:
        m = nn.LSTM(8, 16).cuda().eval()
        out, _ = m(torch.randn(4, 5, 8, device="cuda"))
        torch.autograd.grad((out**2).sum(), out)

    add("autograd.grad(loss, rnn_out) does not reach the RNN node", False, grad_wrt_output)

    # Workarounds.
    def flags_around_forward() -> None:
        m = nn.LSTM(8, 16).cuda().eval()
        with torch.backends.cudnn.flags(enabled=False):
            out, _ = m(torch.randn(4, 5, 8, device="cuda"))
        out.sum().backward()

    add("cudnn.flags(enabled=False) around the forward works", False, flags_around_forward)

    def flags_around_backward() -> None:
        m = nn.LSTM(8, 16).cuda().eval()
        out, _ = m(torch.randn(4, 5, 8, device="cuda"))
        with torch.backends.cudnn.flags(enabled=False):
            out.sum().backward()

    add("cudnn.flags(enabled=False) around backward only does nothing", True, flags_around_backward)

    class Net(nn.Module):
        def __init__(self, layers: int, dropout: float) -> None:
            super().__init__()
            self.rnn = nn.LSTM(8, 16, num_layers=layers, dropout=dropout)
            self.drop = nn.Dropout(0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.drop(self.rnn(x)[0])

    def rnn_only_train() -> None:
        torch.manual_seed(0)
        net = Net(1, 0.0).cuda().eval()
        x = torch.randn(4, 5, 8, device="cuda")
        with torch.no_grad():
            ref = net(x)
        net.rnn.train()
        out = net(x)
        out.sum().backward()
        if not torch.equal(out.detach(), ref):
            raise AssertionError("RNN-only train mode changed a one-layer, dropout-0 output")

    add(
        "eval(); rnn.train(): backward works, 1-layer output bit-identical to eval",
        False,
        rnn_only_train,
    )

    def autocast() -> None:
        m = nn.LSTM(8, 16).cuda().eval()
        with torch.autocast("cuda", dtype=torch.float16):
            out, _ = m(torch.randn(4, 5, 8, device="cuda"))
        out.float().sum().backward()

    add("AMP autocast (fp16): same failure", True, autocast)

    def compiled() -> None:
        m = nn.LSTM(8, 16).cuda().eval()
        f = torch.compile(m)
        out, _ = f(torch.randn(4, 5, 8, device="cuda"))
        out.sum().backward()

    add("torch.compile (default): same failure", True, compiled)

    def data_parallel_module_train() -> None:
        net = Net(2, 0.3).cuda()
        dp = nn.DataParallel(net)
        dp.eval()
        dp.module.train()
        if dp.training:
            raise AssertionError("wrapper flag changed")
        out = dp(torch.randn(4, 5, 8, device="cuda"))
        out.sum().backward()

    add(
        "DataParallel: wrapper.module.train() is functionally train mode (no error)",
        False,
        data_parallel_module_train,
    )
    return obs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="write the observations to this file")
    args = p.parse_args()
    if not (torch.cuda.is_available() and torch.backends.cudnn.is_available()):
        print("no CUDA device with cuDNN", file=sys.stderr)
        return 2
    header = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device": torch.cuda.get_device_name(0),
        "capability": list(torch.cuda.get_device_capability(0)),
    }
    print(json.dumps(header))

    def bf16() -> None:
        m = nn.LSTM(8, 16).cuda().bfloat16().eval()
        out, _ = m(torch.randn(4, 5, 8, device="cuda", dtype=torch.bfloat16))
        out.float().sum().backward()

    # bf16 uses cuDNN only with cuDNN >= 9.13 on sm80+: then it fails like fp32.
    cudnn = torch.backends.cudnn.version() or 0
    expect_bf16 = cudnn >= 91300 and torch.cuda.get_device_capability(0)[0] >= 8
    seen, detail = raises_cudnn(bf16)
    obs = [*checks(), Observation("bf16 LSTM (cuDNN >= 9.13, sm80+)", expect_bf16, seen, detail)]
    for o in obs:
        mark = "ok  " if o.matches else "DIFF"
        print(f"{mark} {o.claim}: expected error={o.expected_error} seen={o.seen_error} {o.detail}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({**header, "checks": [asdict(o) for o in obs]}, f, indent=2)
    return 0 if all(o.matches for o in obs) else 1


if __name__ == "__main__":
    sys.exit(main())
