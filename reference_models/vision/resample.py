"""PIL's bilinear resampling of a batch's crops, as matrices, on the images' device.

    python -c "from reference_models.vision.resample import crop_resize; help(crop_resize)"

`crop_resize` is PIL's bilinear resampling (the filter `Image.resize(..., box=...)` applies: a
triangle whose support grows with the downscale factor, taps clipped to the image, weights
normalised) written as two batched matrix products, horizontal pass first as PIL does: the 256
crops of a batch cost a dozen kernels, not three per image. PIL rounds to uint8 between and after
its two passes; this rounds once, at the end, so a pixel differs from PIL's by at most one level
(tests/reference_models/vision/test_resample.py states and checks the tolerance on the CPU; on an
H200, scripts/tools/pipeline_decoders.py measured the hardware decoder's crops against PIL's: mean
0.18 levels, none more than 1, docs/benchmarks/pipeline_2026-12-01.md). On CUDA both passes are
gather_resize.py's kernels, reading the uint8 images in place of the canvases below (on an H200
the horizontal kernel halved the crop's GPU time a batch, and on an H100 the vertical one, with the
rounding and affine folded in, took it from 1.14 to 0.63 ms; its crops as close to PIL's: mean
0.173 levels, none more than 1: docs/benchmarks/gpu_check_2026-12-06.md, its last section, and
gpu_check_2026-12-07.md).
"""
from __future__ import annotations

from typing import Iterator, Optional, Sequence

import numpy as np
import torch

__all__ = ["crop_resize", "filter_taps", "size_groups", "to_device"]


def filter_taps(start: torch.Tensor, length: torch.Tensor, lo: torch.Tensor, hi: torch.Tensor, flip: torch.Tensor,
                out_size: int, taps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """PIL's bilinear filter for resampling the span [start, start + length) of each of B images to
    out_size pixels, with taps only on input pixels lo <= i < hi (PIL's image bounds: the whole image
    for `resize(box=...)`, the crop for `crop(...).resize(...)`), output rows reversed where `flip`:
    ((B, out_size, taps) first-tap-onward input indices, their weights). PIL (libImaging/Resample.c,
    precompute_coeffs): scale = length / out_size, support = max(scale, 1); tap i of output o weighs
    max(0, 1 - |i + 0.5 - centre| / support) with centre = start + (o + 0.5) scale, each row then
    normalised to sum 1; no more than 2 support + 1 taps are nonzero, from floor(centre - support + 0.5)."""
    dev = start.device
    start, length, lo, hi = (t.to(torch.float32).view(-1, 1, 1) for t in (start, length, lo, hi))
    scale = length / out_size
    support = scale.clamp(min=1.0)
    o = torch.arange(out_size, device=dev, dtype=torch.float32).view(1, -1, 1)
    o = torch.where(flip.view(-1, 1, 1), out_size - 1 - o, o)  # a mirrored output: its rows reversed
    centres = start + (o + 0.5) * scale
    index = torch.floor(centres - support + 0.5) + torch.arange(taps, device=dev, dtype=torch.float32).view(1, 1, -1)
    w = (1 - (index + 0.5 - centres).abs() / support).clamp_(min=0) * ((index >= lo) & (index < hi))
    return index, w / w.sum(dim=2, keepdim=True).clamp_(min=1e-12)


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A small host tensor on `device` without stopping the calling thread: through pinned memory,
    so the copy is queued on the current stream (from pageable memory CUDA would first wait for
    everything queued on it: the batch's own decode)."""
    if device.type != "cuda":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


def size_groups(sizes: Sequence[tuple[int, int]], slack: float = 1.5) -> list[list[int]]:
    """Indices of images (height, width) that share one padded canvas, or of crops (rows, taps) that
    share one launch of gather_resize.py's passes: sorted by size, a group closes when its canvas
    (count x tallest x widest) would exceed `slack` times the pixels it holds, so one large image
    never makes the whole batch's canvas large (ImageNet has a few of several thousand pixels a side)."""
    order = sorted(range(len(sizes)), key=lambda i: (sizes[i][0] * sizes[i][1], sizes[i]))
    groups: list[list[int]] = []
    current: list[int] = []
    area = mh = mw = 0
    for i in order:
        h, w = sizes[i]
        nh, nw = max(mh, h), max(mw, w)
        if current and (len(current) + 1) * nh * nw > slack * (area + h * w):
            groups.append(current)
            current, area, nh, nw = [], 0, h, w
        current.append(i)
        area += h * w
        mh, mw = nh, nw
    if current:
        groups.append(current)
    return groups


def crop_resize(images: Sequence[torch.Tensor], boxes: torch.Tensor, flips: torch.Tensor, size: int,
                clips: Optional[torch.Tensor] = None, memory_format: torch.memory_format = torch.contiguous_format,
                affine: Optional[tuple[torch.Tensor, torch.Tensor]] = None, out: Optional[torch.Tensor] = None
                ) -> torch.Tensor:
    """(B, 3, size, size) float32 pixel values 0..255 (rounded, as PIL's uint8) of each image's box
    (top, left, height, width) resized to size x size as PIL's `Image.resize(BILINEAR, box=...)`,
    mirrored where `flips`; `affine` (scale, shift), (1, 3, 1, 1) each, maps them on in the same
    pass (the normalisation). `images` are planar uint8 (3, H, W) tensors on one device; `boxes`,
    `flips` and `clips` (top, left, bottom, right: the filter's bounds, default each whole image) are
    host tensors. On CUDA gather_resize.py's kernels make both passes from the uint8 images
    themselves, the horizontal one storing float16 rows (pixels 0..255 are exact in it; weights to
    1e-3 relative) and the vertical one rounding, clamping and normalising as it writes `out`; elsewhere the canvases below, in float32 (float16 on a GPU whose torch has no Triton).
    `out`, a float32 (B, 3, size, size) tensor on the images' device (rows of a larger batch, in any
    memory format), receives the crops in place of a new tensor (ImageNetBatches: the GPU's rows of a
    batch whose other rows the workers made).

    The host work is per batch and per canvas, not per image (_canvases): the boxes, bounds and flips
    of the whole batch reach the device in one copy, in the canvases' order, and the crops go back
    to the batch's order in one indexed copy at the end."""
    dev = images[0].device
    n = len(images)
    if out is None:
        out = torch.empty((n, 3, size, size), dtype=torch.float32, device=dev, memory_format=memory_format)
    elif out.shape != (n, 3, size, size) or out.dtype != torch.float32 or out.device != dev:
        raise ValueError(f"crop_resize: out is {out.dtype} {tuple(out.shape)} on {out.device}, "
                         f"not float32 {(n, 3, size, size)} on {dev}")
    sizes = [(int(im.shape[1]), int(im.shape[2])) for im in images]
    clips = torch.tensor([[0, 0, h, w] for h, w in sizes]) if clips is None else clips
    if dev.type == "cuda":  # the taps gathered from the uint8 images: no canvases (gather_resize.py)
        try:
            from reference_models.vision.gather_resize import gathered_crop_resize
        except ImportError:  # a torch build without Triton: the canvases below, on the GPU
            pass
        else:
            return gathered_crop_resize(images, boxes, flips, size, clips, out, affine)
    dtype = torch.float16 if dev.type == "cuda" else torch.float32
    groups = size_groups(sizes)
    order = [i for members in groups for i in members]
    natural = order == list(range(n))
    meta = torch.cat([boxes.float(), clips.float(), flips.float().view(-1, 1)], dim=1)  # host: (B, 9)
    if not natural:
        meta = meta[torch.tensor(order)]
    host = meta.numpy()  # each canvas's widest and tallest box, read here: no device round trip
    device_meta = to_device(meta, dev)
    dest = out if natural else torch.empty_like(out)
    a = 0
    for members, canvas in zip(groups, _canvases(images, groups, sizes)):
        m, (hmax, wmax) = len(members), canvas.shape[2:]
        b = a + m
        taps_x = int(np.ceil(2 * max(1.0, float(host[a:b, 3].max()) / size))) + 2
        taps_y = int(np.ceil(2 * max(1.0, float(host[a:b, 2].max()) / size))) + 2
        geo = device_meta[a:b]
        flip = geo[:, 8] > 0.5
        wx = _dense(*filter_taps(geo[:, 1], geo[:, 3], geo[:, 5], geo[:, 7], flip, size, taps_x), wmax, dtype)
        wy = _dense(*filter_taps(geo[:, 0], geo[:, 2], geo[:, 4], geo[:, 6], torch.zeros_like(flip), size, taps_y),
                    hmax, dtype)
        pixels = torch.bmm(canvas.reshape(m, 3 * hmax, wmax).to(dtype), wx.transpose(1, 2))  # (m, 3 H, size)
        pixels = pixels.view(m, 3, hmax, size).permute(0, 2, 1, 3).reshape(m, hmax, 3 * size)
        both = torch.bmm(wy, pixels).round_().clamp_(0, 255)  # (m, size, 3 size): rows, then channel and column
        pixels = both.view(m, size, 3, size).permute(0, 2, 1, 3)  # (m, 3, size, size)
        target = dest[a:b]
        if affine is None:
            target.copy_(pixels)
        else:
            torch.addcmul(affine[1], pixels, affine[0], out=target)
        a = b
    if not natural:
        out.index_copy_(0, to_device(torch.tensor(order), dev), dest)
    return out


def _canvases(images: Sequence[torch.Tensor], groups: list[list[int]], sizes: Sequence[tuple[int, int]]
              ) -> Iterator[torch.Tensor]:
    """Each group's images as one (m, 3, tallest, widest) uint8 canvas, group after group, made without
    a copy per image: the images are laid end to end in one buffer in the groups' order (one
    concatenation); a group of one size is a view of it, a group of several sizes is cut from it by
    one gather of rows. A canvas row past an image's width or height holds other pixels: taps outside
    an image weigh 0, so they add nothing (the per-image copies this replaces left it uninitialised)."""
    dev = images[0].device
    order = [i for members in groups for i in members]
    hw = np.array([sizes[i] for i in order], dtype=np.int64).reshape(-1, 2)
    starts = np.concatenate(([0], np.cumsum(3 * hw[:, 0] * hw[:, 1])))  # each image's place in `flat`
    bounds = np.cumsum([0] + [len(members) for members in groups])
    several = [len({sizes[i] for i in members}) > 1 for members in groups]
    widest = int(hw[:, 1].max())
    # a row cut near the end of the buffer reads up to `widest` pixels past it: padding, never weighed
    pad = [torch.empty(widest, dtype=torch.uint8, device=dev)] if any(several) else []
    flat = torch.cat([images[i].reshape(-1) for i in order] + pad)
    if any(several):  # (start, height, width) of each image, for the rows' places, in one copy
        geometry = to_device(torch.from_numpy(np.concatenate([starts[:-1, None], hw], axis=1)), dev)
        rows = torch.arange(int(hw[:, 0].max()), device=dev).view(1, 1, -1)
        channels = torch.arange(3, device=dev).view(1, 3, 1)
    for g, mixed in enumerate(several):
        a, b = int(bounds[g]), int(bounds[g + 1])
        m, hmax, wmax = b - a, int(hw[a:b, 0].max()), int(hw[a:b, 1].max())
        if not mixed:  # the group's images are already a (m, 3, h, w) block of `flat`
            yield flat[int(starts[a]): int(starts[b])].view(m, 3, hmax, wmax)
            continue
        # row r of channel c of image j starts at start_j + (c h_j + min(r, h_j - 1)) w_j
        start, h, w = geometry[a:b].view(m, 3, 1).unbind(1)
        start, h, w = start.view(m, 1, 1), h.view(m, 1, 1), w.view(m, 1, 1)
        first = start + (channels * h + torch.minimum(rows[..., :hmax], h - 1)) * w  # (m, 3, hmax)
        windows = flat.as_strided((flat.numel() - wmax + 1, wmax), (1, 1))  # windows[s] = flat[s : s + wmax]
        yield windows.index_select(0, first.view(-1)).view(m, 3, hmax, wmax)


def _dense(index: torch.Tensor, w: torch.Tensor, in_size: int, dtype: torch.dtype) -> torch.Tensor:
    dense = torch.zeros((index.shape[0], index.shape[1], in_size), dtype=dtype, device=index.device)
    # taps beyond the image weigh 0: clamped onto its edge, they add nothing there
    return dense.scatter_add_(2, index.clamp_(0, in_size - 1).long(), w.to(dtype))

