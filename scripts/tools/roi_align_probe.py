"""Mask R-CNN's ROIAlign forward and backward at the box pooler's shape, each way side by side: torchvision's kernel
as the model calls it under amp (each FPN level cast to float32 and NCHW first; its backward adds float32 atomics into
that copy), and ROIAlign as gathers from the channels-last float16 level (each sampled point's four corners as rows of
C contiguous channels, so a backward adds whole rows), eager and compiled by Inductor. Milliseconds a forward and
backward by CUDA events, and each way's largest difference from torchvision's (pooled values and the level's
gradient, relative to their largest entry). Whether the gathers are faster decides whether they are built into the
model (docs/benchmarks/gpu_check_2026-12-07.md, eighth lease: torchvision's backward 8.5-9.2 ms a step).

    python scripts/tools/roi_align_probe.py                       # P2 of 800x1216 at batch 8: 200 x 304, 256 channels
    python scripts/tools/roi_align_probe.py --size 100 152 --rois 1024 --output 14

The gathered ROIAlign is torchvision's arithmetic with aligned=False and a fixed sampling ratio, the model's settings:
the same sample points, the same bilinear weights and edge rules, summed in another order. On a GPU only for the
timings; `gathered_roi_align` itself runs anywhere (tests/scripts/test_roi_align_probe.py holds it to torchvision's on
a CPU).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, for the usage and the timing helpers

from harness.usage import module_doc  # noqa: E402
from scripts.tools.attention_backends import forward_backward, positive, time_call  # noqa: E402


def _axis(coord: Tensor, size: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """torchvision's bilinear_interpolate along one axis: (low index, high index, low weight, high weight), the
    weights zero where the point falls outside [-1, size]."""
    inside = (coord >= -1.0) & (coord <= size)
    c = coord.clamp(min=0.0)
    low = c.floor().long()
    last = low >= size - 1
    low = torch.where(last, size - 1, low)
    high = torch.where(last, size - 1, low + 1)
    c = torch.where(last, low.to(c.dtype), c)
    frac = c - low.to(c.dtype)
    return low, high, (1.0 - frac) * inside, frac * inside


def gathered_roi_align(x: Tensor, rois: Tensor, output_size: int, spatial_scale: float, sampling_ratio: int) -> Tensor:
    """torchvision.ops.roi_align(x, rois, output_size, spatial_scale, sampling_ratio, aligned=False) for a
    sampling_ratio > 0, as gathers of channel rows: x [B, C, H, W] (channels-last memory reads best), rois [R, 5]
    (batch index, x1, y1, x2, y2) -> [R, C, output_size, output_size] in float32 (float64 for a float64 level)."""
    if sampling_ratio < 1:
        raise ValueError(f"sampling_ratio {sampling_ratio}: the gathered ROIAlign takes a fixed ratio (the model's 2)")
    b, c, h, w = x.shape
    rows = x.permute(0, 2, 3, 1).reshape(b * h * w, c)
    rows = rows if rows.dtype == torch.float64 else rows.float()  # float16 levels summed in float32, as under autocast
    r, side, g = rois.shape[0], output_size, sampling_ratio
    start_x, start_y = rois[:, 1] * spatial_scale, rois[:, 2] * spatial_scale
    bin_w = (rois[:, 3] * spatial_scale - start_x).clamp(min=1.0) / side
    bin_h = (rois[:, 4] * spatial_scale - start_y).clamp(min=1.0) / side
    points = torch.arange(side * g, device=x.device)
    bins, sub = (points // g).to(rois.dtype), (points % g).to(rois.dtype)
    # torchvision's order of operations: start + bin * bin_size + (sub + 0.5) * bin_size / grid
    ys = start_y[:, None] + bins * bin_h[:, None] + (sub + 0.5) * bin_h[:, None] / g
    xs = start_x[:, None] + bins * bin_w[:, None] + (sub + 0.5) * bin_w[:, None] / g
    y_lo, y_hi, wy_lo, wy_hi = _axis(ys, h)
    x_lo, x_hi, wx_lo, wx_hi = _axis(xs, w)
    base = rois[:, 0].long()[:, None, None] * (h * w)
    out = None
    for yi, wy in ((y_lo, wy_lo), (y_hi, wy_hi)):
        for xi, wx in ((x_lo, wx_lo), (x_hi, wx_hi)):
            index = base + yi[:, :, None] * w + xi[:, None, :]  # [R, side * g, side * g]
            weight = (wy[:, :, None] * wx[:, None, :]).to(rows.dtype)
            term = rows.index_select(0, index.reshape(-1)).view(r, side * g, side * g, c) * weight[..., None]
            out = term if out is None else out + term
    assert out is not None
    pooled = out.view(r, side, g, side, g, c).sum(dim=(2, 4)) / (g * g)
    return pooled.permute(0, 3, 1, 2)


def random_rois(n: int, batch: int, height: int, width: int, scale: float, generator: torch.Generator,
                device: torch.device) -> Tensor:
    """n boxes in image coordinates (the level's size over `scale`), some reaching past the edges, as the
    proposals a pooler gets: [n, 5] with the image index first."""
    size = torch.tensor([width, height], dtype=torch.float32) / scale
    xy = torch.rand(n, 2, generator=generator) * size * 1.05 - size * 0.025
    wh = torch.rand(n, 2, generator=generator) * size * 0.4 + 2.0
    image = torch.randint(0, batch, (n, 1), generator=generator).float()
    return torch.cat([image, xy, xy + wh], dim=1).to(device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).split("\n\n")[0])
    parser.add_argument("--batch", type=positive, default=8)
    parser.add_argument("--channels", type=positive, default=256)
    parser.add_argument("--size", type=positive, nargs=2, default=[200, 304], metavar=("HEIGHT", "WIDTH"),
                        help="the level's size (P2 of an 800 x 1216 batch: 200 x 304)")
    parser.add_argument("--scale", type=float, default=0.25, help="the level's spatial scale (P2: 1/4)")
    parser.add_argument("--rois", type=positive, default=2048, help="ROIs on this level (the box pooler's 4,096 a "
                        "batch of 8 spread over P2-P5)")
    parser.add_argument("--output", type=positive, default=7, help="7: the box pooler; 14: the mask pooler")
    parser.add_argument("--sampling-ratio", type=positive, default=2)
    parser.add_argument("--repeats", type=positive, default=30)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: the timings are a GPU's: run this on a GPU (gathered_roi_align itself runs anywhere)",
              file=sys.stderr)
        return 2
    from torchvision.ops import roi_align

    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(0)
    h, w = args.size
    level = torch.randn(args.batch, args.channels, h, w, generator=g).to(dev, torch.float16)
    level = level.contiguous(memory_format=torch.channels_last).requires_grad_()
    rois = random_rois(args.rois, args.batch, h, w, args.scale, g, dev)
    grad = torch.randn(args.rois, args.channels, args.output, args.output, generator=g).to(dev)

    def torchvision_way(x: Tensor) -> Tensor:  # as the model's pooler calls it under amp (roi_heads.pooling_inputs)
        return roi_align(x.float().contiguous(), rois, args.output, args.scale, args.sampling_ratio)

    def gathered(x: Tensor) -> Tensor:
        return gathered_roi_align(x, rois, args.output, args.scale, args.sampling_ratio)

    ways = {"torchvision, float32 NCHW copy (the model's)": forward_backward(torchvision_way, level, grad),
            "gathered rows, eager": forward_backward(gathered, level, grad),
            "gathered rows, compiled": forward_backward(torch.compile(gathered), level, grad)}
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: level {args.batch} x {args.channels} x {h} x {w} "
          f"float16 NHWC, {args.rois} ROIs, {args.output} x {args.output} bins, sampling ratio {args.sampling_ratio}")
    expected = [t.detach().clone() for t in ways["torchvision, float32 NCHW copy (the model's)"]()]
    base_ms = None
    for name, way in ways.items():
        try:
            ms = time_call(way, args.repeats)
        except torch.OutOfMemoryError as err:
            print(f"  {name:46s} out of memory ({str(err).splitlines()[0][:80]})")
            torch.cuda.empty_cache()
            continue
        base_ms = base_ms or ms
        worst = max(float((a.float() - e.float()).abs().max() / e.float().abs().max()) for a, e in zip(way(), expected))
        print(f"  {name:46s} {ms:8.3f} ms  {base_ms / ms:5.2f}x  largest difference {worst:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
