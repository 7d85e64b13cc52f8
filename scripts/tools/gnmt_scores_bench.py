"""GNMT's attention-score gradients at one shape, each way side by side: the two compiled reductions
(reference_models/gnmt/scores.py, tanh recomputed in each: model.attention_grads=reductions) and the fast path's
one-pass Triton kernel (scores_grads.py, model.attention_grads=one_pass) at 16 and 32 keys a pass. Milliseconds a call by CUDA events,
and each way's largest difference from the reductions' gradients (relative to their largest entry).

    python scripts/tools/gnmt_scores_bench.py                          # b2048, 30 x 30 tokens, 1,024 units, fp16
    python scripts/tools/gnmt_scores_bench.py --batch 512 --queries 50 --keys 50

On a GPU only (Inductor's reductions and the Triton kernel are compiled for CUDA).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: the kernels timed are its own

from harness.usage import module_doc  # noqa: E402
from reference_models.gnmt.scores import compiled_kernels  # noqa: E402
from reference_models.gnmt.scores_grads import one_pass_grads  # noqa: E402
from scripts.tools.attention_backends import positive, time_call  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).split("\n\n")[0])
    parser.add_argument("--batch", type=positive, default=2048)
    parser.add_argument("--queries", type=positive, default=30, help="target tokens (the decoder's steps)")
    parser.add_argument("--keys", type=positive, default=30, help="source tokens")
    parser.add_argument("--units", type=positive, default=1024)
    parser.add_argument("--repeats", type=positive, default=20)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: the kernels compared are compiled for CUDA: run this on a GPU", file=sys.stderr)
        return 2
    b, tq, tk, n = args.batch, args.queries, args.keys, args.units
    g = torch.Generator(device="cuda").manual_seed(0)

    def draw(*shape: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
        return torch.randn(*shape, generator=g, device="cuda").to(dtype)

    # the model's layout: projections (T, B, units) seen as (B, T, units); fp16 as under autocast
    q, k = draw(tq, b, n).transpose(0, 1), draw(tk, b, n).transpose(0, 1)
    bias, v, grad = draw(n, dtype=torch.float32), draw(n, dtype=torch.float32), draw(b, tq, tk)
    reductions = compiled_kernels()

    def by_reductions() -> tuple[torch.Tensor, ...]:
        return (*reductions.query_grads(q, k, bias, v, grad), reductions.key_grads(q, k, bias, v, grad))

    ways = {"reductions": by_reductions}
    for keys in (16, 32):
        ways[f"one pass, {keys} keys a pass"] = lambda keys=keys: one_pass_grads(q, k, bias, v, grad, max_keys=keys)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: batch {b}, {tq} queries x {tk} keys, {n} units, "
          f"fp16 inputs ({b * tq * tk * n / 1e9:.2f} G tanh a pass)")
    expected = by_reductions()
    base_ms = None
    for name, way in ways.items():
        ms = time_call(way, args.repeats)
        base_ms = base_ms or ms
        worst = max(float((a - e).abs().max() / e.abs().max()) for a, e in zip(way(), expected))
        print(f"  {name:26s} {ms:7.3f} ms a call  {base_ms / ms:5.2f}x  largest difference {worst:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
