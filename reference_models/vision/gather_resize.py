"""resample.crop_resize on CUDA: the horizontal pass gathers its taps from the decoded uint8 images.

    python -m pytest tests/reference_models/vision/test_gather_resize.py   # interpreted on a CPU, compiled on a GPU

The matrices' path (resample.py) lays a batch's images on padded canvases, copies them to float16
and multiplies each canvas by a dense (width x 224) matrix: about 1 GB moved a batch of 256 ImageNet
images, beside a training step whose own kernels are memory-bound too (docs/benchmarks/
gpu_check_2026-12-06.md, `pipeline_decoders.py --split`: the crop costs the step more than the
decode). Here one Triton kernel reads, for each output pixel of the horizontal pass, only its taps
(at most 2 ceil(box width / size) + 2) from the uint8 images where the decoder left them (an
address per image: no concatenation), and only on the rows inside each crop's vertical support; it
writes float16 rows. A second kernel makes the vertical pass from those rows, each output row
reading only its own taps, and rounds, clamps and normalises in the same pass, writing the batch
once through its strides (the dense vertical product over the support's rows and its three
elementwise passes over the batch before it cost as much again). Where torch has no Triton,
crop_resize keeps the matrices on the GPU.

Written by hand because no library resamples a batch of differently sized uint8 images by a
per-image box with PIL's filter: torchvision's resize takes one image size a call, so a batch of
256 boxes is 256 calls, and nvImageCodec decodes but does not resize; DALI's resize would bring a
second input pipeline beside the harness's loader.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch
import triton
import triton.language as tl

from reference_models.vision.resample import filter_taps, size_groups, to_device

__all__ = ["gathered_crop_resize"]

BLOCK_ROWS = 8  # rows of one crop per program, in either pass: 8 x 256 outputs, three channels, in registers
# How much more than its crops need a launch may do (resample.size_groups). 2.5, by the host's arithmetic on
# RandomResizedCrop's boxes: 256 crops of 500x375 images are one group (the path measured on the GPU), and a
# batch mixing in a few images of thousands of pixels a side is 3-4 groups doing 2.3x the taps' work, where
# one launch would do 40x
GROUP_SLACK = 2.5


@triton.jit
def _horizontal(geo, first, weights, out, rows_out, taps, SIZE: tl.constexpr, BLOCK_O: tl.constexpr,
                BLOCK_R: tl.constexpr):
    """out[b, r, c, o] = sum_t weights[b, o, t] * image_b[c, row0_b + r, first[b, o] + t], for the
    rows r < rows_out of image b; geo[b] = (the address of image b's first pixel, its height, its
    width, row0): the images are read where the decoder left them. A tap's column and row are
    clamped onto the image: taps outside it weigh 0 (filter_taps), rows past it are weighed 0 by the
    vertical pass, so the clamp only keeps the reads inside the image."""
    b = tl.program_id(0)
    r = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    o = tl.arange(0, BLOCK_O)
    image = tl.load(geo + b * 4).to(tl.pointer_type(tl.uint8))
    h = tl.load(geo + b * 4 + 1)
    w = tl.load(geo + b * 4 + 2)
    row0 = tl.load(geo + b * 4 + 3)
    in_o = o < SIZE
    in_r = r < rows_out
    rows = tl.minimum(tl.maximum(row0 + r, 0), h - 1)
    base = image + rows[:, None] * w  # (BLOCK_R, 1) pointers to each row's first pixel
    plane = h * w
    f = tl.load(first + b * SIZE + o, mask=in_o, other=0)
    mask = in_r[:, None] & in_o[None, :]
    red = tl.zeros((BLOCK_R, BLOCK_O), dtype=tl.float32)
    green = tl.zeros((BLOCK_R, BLOCK_O), dtype=tl.float32)
    blue = tl.zeros((BLOCK_R, BLOCK_O), dtype=tl.float32)
    for t in range(taps):
        wt = tl.load(weights + (b * SIZE + o) * taps + t, mask=in_o, other=0.0)[None, :]
        p = base + tl.minimum(tl.maximum(f + t, 0), w - 1)[None, :]
        red += tl.load(p, mask=mask, other=0).to(tl.float32) * wt
        green += tl.load(p + plane, mask=mask, other=0).to(tl.float32) * wt
        blue += tl.load(p + 2 * plane, mask=mask, other=0).to(tl.float32) * wt
    dst = out + ((b * rows_out + r[:, None]) * 3) * SIZE + o[None, :]
    tl.store(dst, red.to(out.dtype.element_ty), mask=mask)
    tl.store(dst + SIZE, green.to(out.dtype.element_ty), mask=mask)
    tl.store(dst + 2 * SIZE, blue.to(out.dtype.element_ty), mask=mask)


@triton.jit
def _vertical(rows, first, weights, out, scale, shift, rows_out, taps, s_b, s_c, s_y, s_x, SIZE: tl.constexpr,
              BLOCK_O: tl.constexpr, BLOCK_Y: tl.constexpr, AFFINE: tl.constexpr):
    """out[b, c, y, o] = affine_c(clamp(round(sum_t weights[b, y, t] * rows[b, first[b, y] + t, c, o]), 0, 255)):
    the vertical taps, PIL's rounding to a level and the normalisation in one pass, written through
    out's strides (a channels-last batch, or rows of a larger one). Rounding is half up, as PIL's
    fixed point; a tap's row is clamped onto the horizontal pass's rows (taps outside weigh 0)."""
    b = tl.program_id(0)
    y = tl.program_id(1) * BLOCK_Y + tl.arange(0, BLOCK_Y)
    o = tl.arange(0, BLOCK_O)
    in_y = y < SIZE
    mask = in_y[:, None] & (o < SIZE)[None, :]
    f = tl.load(first + b * SIZE + y, mask=in_y, other=0)
    red = tl.zeros((BLOCK_Y, BLOCK_O), dtype=tl.float32)
    green = tl.zeros((BLOCK_Y, BLOCK_O), dtype=tl.float32)
    blue = tl.zeros((BLOCK_Y, BLOCK_O), dtype=tl.float32)
    for t in range(taps):
        wt = tl.load(weights + (b * SIZE + y) * taps + t, mask=in_y, other=0.0)[:, None]
        row = tl.minimum(tl.maximum(f + t, 0), rows_out - 1)
        src = rows + ((b * rows_out + row)[:, None] * 3) * SIZE + o[None, :]
        red += tl.load(src, mask=mask, other=0.0).to(tl.float32) * wt
        green += tl.load(src + SIZE, mask=mask, other=0.0).to(tl.float32) * wt
        blue += tl.load(src + 2 * SIZE, mask=mask, other=0.0).to(tl.float32) * wt
    red = tl.minimum(tl.maximum(tl.floor(red + 0.5), 0.0), 255.0)
    green = tl.minimum(tl.maximum(tl.floor(green + 0.5), 0.0), 255.0)
    blue = tl.minimum(tl.maximum(tl.floor(blue + 0.5), 0.0), 255.0)
    if AFFINE:
        red = red * tl.load(scale) + tl.load(shift)
        green = green * tl.load(scale + 1) + tl.load(shift + 1)
        blue = blue * tl.load(scale + 2) + tl.load(shift + 2)
    dst = out + b * s_b + y[:, None] * s_y + o[None, :] * s_x
    tl.store(dst, red, mask=mask)
    tl.store(dst + s_c, green, mask=mask)
    tl.store(dst + 2 * s_c, blue, mask=mask)


def gathered_crop_resize(images: Sequence[torch.Tensor], boxes: torch.Tensor, flips: torch.Tensor, size: int,
                         clips: torch.Tensor, out: torch.Tensor,
                         affine: Optional[tuple[torch.Tensor, torch.Tensor]] = None,
                         dtype: torch.dtype = torch.float16) -> torch.Tensor:
    """resample.crop_resize's result written into `out` (float32 (B, 3, size, size) on the images'
    device); the arguments as there, `clips` given. `dtype` is the horizontal pass's storage (float16 on
    CUDA: pixels 0..255 and their weighted sums to 1/8 of a level; both kernels sum in float32).

    A launch gives every crop the rows and taps of its largest: crops of like size go together
    (resample.size_groups, by the rows and taps each needs), so one crop of a 4,000-pixel image does
    not make the whole batch's passes that large. The boxes and the images' places reach the device
    in one copy each, in the groups' order, and the crops go back to the batch's order in one indexed
    copy at the end."""
    dev = images[0].device
    n = len(images)
    images = [im if im.is_contiguous() else im.contiguous() for im in images]  # kept alive to the kernels' launch
    meta = torch.cat([boxes.float(), clips.float(), flips.float().view(-1, 1)], dim=1)  # host: (B, 9)
    rows, taps_x, taps_y = _needs(meta.numpy(), size)
    groups = size_groups(list(zip(rows.tolist(), taps_x.tolist())), slack=GROUP_SLACK)
    order = [i for members in groups for i in members]
    natural = order == list(range(n))
    places = torch.tensor([(images[i].data_ptr(), images[i].shape[1], images[i].shape[2]) for i in order],
                          dtype=torch.int64)
    if not natural:
        meta, rows, taps_x, taps_y = meta[torch.tensor(order)], rows[order], taps_x[order], taps_y[order]
    geo, places = to_device(meta, dev), to_device(places, dev)
    dest = out if natural else torch.empty_like(out)
    a = 0
    for members in groups:
        b = a + len(members)
        needs = int(rows[a:b].max()), int(taps_x[a:b].max()), int(taps_y[a:b].max())
        _crop_group(geo[a:b], places[a:b], needs, size, dest[a:b], affine, dtype)
        a = b
    if not natural:
        out.index_copy_(0, to_device(torch.tensor(order), dev), dest)
    return out


def _needs(meta: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per crop, the rows its vertical filter touches and the taps of its horizontal and vertical
    filters: an output's taps span ceil(2 max(scale, 1)) + 2 pixels (filter_taps), and the first tap
    moves by at most (size - 1) x scale over the outputs. The rows and the vertical taps both grow
    with the box's height, so a group's tallest crop needs the most of both."""
    height, width = meta[:, 2].astype(np.float64), meta[:, 3].astype(np.float64)
    taps_y = np.ceil(2 * np.maximum(1.0, height / size)).astype(np.int64) + 2
    rows = np.ceil((size - 1) * height / size).astype(np.int64) + taps_y + 1
    return rows, np.ceil(2 * np.maximum(1.0, width / size)).astype(np.int64) + 2, taps_y


def _crop_group(geo: torch.Tensor, places: torch.Tensor, needs: tuple[int, int, int], size: int, out: torch.Tensor,
                affine: Optional[tuple[torch.Tensor, torch.Tensor]], dtype: torch.dtype) -> None:
    """One launch of each pass for the m crops of a group: `geo` (m, 9) their boxes, bounds and flips,
    `places` (m, 3) their images' addresses and sizes, on the device; `needs` the largest crop's rows,
    horizontal taps and vertical taps (_needs)."""
    m, dev = geo.shape[0], geo.device
    rows_out, taps_x, taps_y = needs
    flip = geo[:, 8] > 0.5
    index_x, wx = filter_taps(geo[:, 1], geo[:, 3], geo[:, 5], geo[:, 7], flip, size, taps_x)
    index_y, wy = filter_taps(geo[:, 0], geo[:, 2], geo[:, 4], geo[:, 6], torch.zeros_like(flip), size, taps_y)
    row0 = index_y[:, 0, 0]  # each crop's first row: row 0 of its horizontal pass
    where = torch.cat([places, row0.to(torch.int64).view(-1, 1)], dim=1)
    rows = torch.empty((m, rows_out, 3, size), dtype=dtype, device=dev)
    _horizontal[(m, triton.cdiv(rows_out, BLOCK_ROWS))](
        where, index_x[:, :, 0].to(torch.int32).contiguous(), wx.contiguous(), rows, rows_out, taps_x,
        SIZE=size, BLOCK_O=triton.next_power_of_2(size), BLOCK_R=BLOCK_ROWS)
    first = (index_y[:, :, 0] - row0.view(-1, 1)).to(torch.int32).contiguous()
    # without an affine the kernel reads neither: any float32 tensor fills the two arguments
    scale, shift = (t.reshape(3).float().contiguous() for t in affine) if affine is not None else (wy, wy)
    _vertical[(m, triton.cdiv(size, BLOCK_ROWS))](
        rows, first, wy.contiguous(), out, scale, shift, rows_out, taps_y, *out.stride(),
        SIZE=size, BLOCK_O=triton.next_power_of_2(size), BLOCK_Y=BLOCK_ROWS, AFFINE=affine is not None)
