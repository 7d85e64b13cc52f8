"""torch's scaled_dot_product_attention backends side by side at one shape: forward and backward per call, in
microseconds and in model TFLOP/s (4*b*h*s*s*d a forward, three times that with the backward), each backend
alone (`torch.nn.attention.sdpa_kernel`) and the math path compiled by Inductor. Which backend a model's
attention gets is torch's choice; this says whether another would be faster at the model's shape.

    python scripts/tools/attention_backends.py                                   # BERT-large SQuAD: 32 x 16 heads x 384 x 64
    python scripts/tools/attention_backends.py --batch 8 --heads 16 --seq 512 --head-dim 64 --dropout 0.1 0.0 --causal

On a GPU only (the fused kernels are CUDA's).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# the checkout, for harness/usage.py alone (standard library: the usage under python -OO); what is timed
# uses nothing of the harness
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.usage import module_doc  # noqa: E402

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def math_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: float, causal: bool) -> torch.Tensor:
    """Attention as its formula: the scores materialized, for Inductor to fuse the scale, mask, softmax and dropout."""
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    if causal:
        s = q.shape[-2]
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return F.dropout(torch.softmax(scores, -1), p) @ v



def time_call(step: Callable[[], None], repeats: int) -> float:
    """Milliseconds a call, by CUDA events around `repeats` calls after five warm ones (compilation, tuning)."""
    for _ in range(5):
        step()
    torch.cuda.synchronize()  # the warm calls finish before the timed ones start
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        step()
    end.record()
    torch.cuda.synchronize()  # the events' times are read once the calls have run
    return start.elapsed_time(end) / repeats


def forward_backward(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, grad: torch.Tensor
                     ) -> Callable[[], tuple[torch.Tensor, torch.Tensor]]:
    """A timed call for time_call: fn's forward from x (a leaf that requires its gradient) and its backward of
    grad, returning (output, x's gradient) for the comparison with another way's."""
    def step() -> tuple[torch.Tensor, torch.Tensor]:
        x.grad = None
        out = fn(x)
        out.backward(grad)
        assert x.grad is not None
        return out, x.grad
    return step


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive whole number")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).split("\n\n")[0])
    parser.add_argument("--batch", type=positive, default=32)
    parser.add_argument("--heads", type=positive, default=16)
    parser.add_argument("--seq", type=positive, default=384)
    parser.add_argument("--head-dim", type=positive, default=64)
    parser.add_argument("--dtype", choices=["float16", "bfloat16"], default="float16")
    parser.add_argument("--dropout", type=float, nargs="+", default=[0.1, 0.0])
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--repeats", type=positive, default=50)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: the attention backends are CUDA kernels: run this on a GPU", file=sys.stderr)
        return 2
    b, h, s, d = args.batch, args.heads, args.seq, args.head_dim
    dtype = getattr(torch, args.dtype)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
    grad = torch.randn(b, h, s, d, device="cuda", dtype=dtype)
    flops = 3 * 4 * b * h * s * s * d / (2 if args.causal else 1)
    compiled = torch.compile(math_attention)  # here, not at import: --help without loading Inductor (seconds)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}: "
          f"batch {b}, {h} heads, {s} tokens, {d} a head, {args.dtype}{', causal' if args.causal else ''}")
    for p in args.dropout:
        for name, backend in BACKENDS.items():
            def fused(backend: SDPBackend = backend, p: float = p) -> None:
                with sdpa_kernel([backend]):
                    F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=args.causal).backward(grad)
            try:
                ms = time_call(fused, args.repeats)
            except RuntimeError as err:  # a backend that does not take this shape, dtype or dropout says so
                print(f"  {name:10s} dropout {p}: not available ({str(err).splitlines()[0][:120]})")
                continue
            print(f"  {name:10s} dropout {p}: {ms * 1e3:8.1f} us forward+backward, {flops / ms / 1e9:6.1f} TFLOP/s")
        def compiled_step(p: float = p) -> None:
            compiled(q, k, v, p, args.causal).backward(grad)
        ms = time_call(compiled_step, args.repeats)
        print(f"  {'compiled':10s} dropout {p}: {ms * 1e3:8.1f} us forward+backward, {flops / ms / 1e9:6.1f} TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
