"""ResNet's stem max-pool (3x3, stride 2, padding 1) forward and backward at one shape, each way side by side:
torch's pool eager, torch's pool compiled by Inductor (the compiled default's), and model.stem_pool=triton's
kernels (reference_models/resnet/stem_pool_kernels.py), eager and inside a compiled function. The input is
ReLU's output, as in the stem (ties at zero decided as torch decides them). Milliseconds a forward and
backward by CUDA events, and each way's largest difference from eager torch (pooled values and the input's
gradient, relative to their largest entry).

    python scripts/tools/stem_pool_bench.py                          # b256, 64 channels, 112 x 112, NHWC, fp16
    python scripts/tools/stem_pool_bench.py --batch 128 --layout nchw --dtype bfloat16

On a GPU only (the kernels compared are compiled for CUDA).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: the kernels timed are its own

from harness.usage import module_doc  # noqa: E402
from reference_models.resnet.stem_pool import stem_pool  # noqa: E402
from scripts.tools.attention_backends import forward_backward, positive, time_call  # noqa: E402


def torch_pool(x: torch.Tensor) -> torch.Tensor:
    return F.max_pool2d(torch.relu(x), 3, 2, 1)


def triton_pool(x: torch.Tensor) -> torch.Tensor:
    return stem_pool(torch.relu(x))[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).split("\n\n")[0])
    parser.add_argument("--batch", type=positive, default=256)
    parser.add_argument("--channels", type=positive, default=64)
    parser.add_argument("--size", type=positive, default=112, help="the pool's input side (the stem's: 112)")
    parser.add_argument("--layout", choices=["nhwc", "nchw"], default="nhwc")
    parser.add_argument("--dtype", choices=["float16", "bfloat16", "float32"], default="float16")
    parser.add_argument("--repeats", type=positive, default=50)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: the kernels compared are compiled for CUDA: run this on a GPU", file=sys.stderr)
        return 2
    fmt = torch.channels_last if args.layout == "nhwc" else torch.contiguous_format
    g = torch.Generator(device="cuda").manual_seed(0)
    shape = (args.batch, args.channels, args.size, args.size)
    x = torch.randn(*shape, generator=g, device="cuda").to(getattr(torch, args.dtype)).contiguous(memory_format=fmt)
    x.requires_grad_()
    out_side = (args.size - 1) // 2 + 1
    grad = torch.randn(args.batch, args.channels, out_side, out_side, generator=g, device="cuda").to(x.dtype)
    grad = grad.contiguous(memory_format=fmt)

    ways = {"torch, eager": forward_backward(torch_pool, x, grad),
            "torch, compiled (the default's)": forward_backward(torch.compile(torch_pool), x, grad),
            "stem_pool=triton, eager": forward_backward(triton_pool, x, grad),
            "stem_pool=triton, compiled": forward_backward(torch.compile(triton_pool), x, grad)}
    moved = 2 * x.numel() * x.element_size() + 2 * grad.numel() * (grad.element_size() + 1)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: {args.batch} x {args.channels} x {args.size} x "
          f"{args.size} {args.layout} {args.dtype}; at least {moved / 1e6:.0f} MB read and written a forward and "
          "backward (input, its gradient, the output and its gradient, one tap byte each)")
    expected = [t.detach().clone() for t in ways["torch, eager"]()]
    base_ms = None
    for name, way in ways.items():
        ms = time_call(way, args.repeats)
        base_ms = base_ms or ms
        worst = max(float((a.float() - e.float()).abs().max() / e.float().abs().max()) for a, e in zip(way(), expected))
        print(f"  {name:34s} {ms:7.3f} ms  {base_ms / ms:5.2f}x  {moved / ms / 1e6:6.0f} GB/s  largest difference "
              f"{worst:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
