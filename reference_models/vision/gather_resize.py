"""resample.crop_resize on CUDA: the horizontal pass gathers its taps from the decoded uint8 images.

    TRITON_INTERPRET=1 python -m pytest tests/reference_models/vision/test_gather_resize.py   # on the CPU

The matrices' path (resample.py) lays a batch's images on padded canvases, copies them to float16
and multiplies each canvas by a dense (width x 224) matrix: about 1 GB moved a batch of 256 ImageNet
images, beside a training step whose own kernels are memory-bound too (docs/benchmarks/
gpu_check_2026-12-06.md, `pipeline_decoders.py --split`: the crop costs the step more than the
decode). Here one Triton kernel reads, for each output pixel of the horizontal pass, only its taps
(at most 2 ceil(box width / size) + 2) from the uint8 images where the decoder left them (an
address per image: no concatenation), and only on the rows inside each crop's vertical support; it
writes float16 rows laid out as
the vertical product reads them. The vertical pass stays a batched matrix product (cuBLAS, dense
over the support's rows), then the rounding, clamp and affine of resample.py.

Written by hand because no library resamples a batch of differently sized uint8 images by a
per-image box with PIL's filter: torchvision's resize takes one size a call and antialiases
differently from PIL for downscales, and nvImageCodec/DALI's resize runs on their own streams
outside the step's allocator.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import torch
import triton
import triton.language as tl

from reference_models.vision.resample import filter_taps, to_device

__all__ = ["gathered_crop_resize"]

BLOCK_ROWS = 8  # rows of one image per program: 8 x 256 outputs, three channels, in registers


@triton.jit
def _horizontal(geo, first, weights, out, rows_out, taps, SIZE: tl.constexpr, BLOCK_O: tl.constexpr,
                BLOCK_R: tl.constexpr):
    """out[b, r, c, o] = sum_t weights[b, o, t] * image_b[c, row0_b + r, first[b, o] + t], for the
    rows r < rows_out of image b; geo[b] = (the address of image b's first pixel, its height, its
    width, row0): the images are read where the decoder left them. A tap's column and
    row are clamped onto the image: taps outside it weigh 0 (filter_taps), rows past it are weighed
    0 by the vertical pass, so the clamp only keeps the reads inside the buffer."""
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


def gathered_crop_resize(images: Sequence[torch.Tensor], boxes: torch.Tensor, flips: torch.Tensor, size: int,
                         clips: torch.Tensor, out: torch.Tensor,
                         affine: Optional[tuple[torch.Tensor, torch.Tensor]] = None,
                         dtype: torch.dtype = torch.float16) -> torch.Tensor:
    """resample.crop_resize's result written into `out` (float32 (B, 3, size, size) on the images'
    device); the arguments as there, `clips` given. `dtype` is the passes' storage (float16 on CUDA:
    pixels 0..255 and their weighted sums to 1/8 of a level; the kernel sums in float32)."""
    dev = images[0].device
    n = len(images)
    images = [im if im.is_contiguous() else im.contiguous() for im in images]  # kept alive to the kernel's launch
    sizes = np.array([(im.data_ptr(), int(im.shape[1]), int(im.shape[2])) for im in images], dtype=np.int64)
    host = torch.cat([boxes.float(), clips.float(), flips.float().view(-1, 1)], dim=1)  # (B, 9)
    meta = host.numpy()
    taps_x = int(np.ceil(2 * max(1.0, float(meta[:, 3].max()) / size))) + 2
    scale_y = max(1.0, float(meta[:, 2].max()) / size)
    taps_y = int(np.ceil(2 * scale_y)) + 2
    # the rows one crop's vertical filter touches: its taps' first index moves by at most
    # (size - 1) x scale over the outputs, and each output spans taps_y rows
    rows_out = int(np.ceil((size - 1) * float(meta[:, 2].max()) / size)) + taps_y + 1
    geo = to_device(host, dev)
    flip = geo[:, 8] > 0.5
    index_x, wx = filter_taps(geo[:, 1], geo[:, 3], geo[:, 5], geo[:, 7], flip, size, taps_x)
    index_y, wy = filter_taps(geo[:, 0], geo[:, 2], geo[:, 4], geo[:, 6], torch.zeros_like(flip), size, taps_y)
    row0 = index_y[:, 0, 0]  # each crop's first row: the vertical product's row 0
    places = torch.cat([to_device(torch.from_numpy(sizes), dev), row0.to(torch.int64).view(-1, 1)], dim=1)
    rows = torch.empty((n, rows_out, 3, size), dtype=dtype, device=dev)
    grid = (n, triton.cdiv(rows_out, BLOCK_ROWS))
    _horizontal[grid](places, index_x[:, :, 0].to(torch.int32).contiguous(), wx.contiguous(), rows, rows_out,
                      taps_x, SIZE=size, BLOCK_O=triton.next_power_of_2(size), BLOCK_R=BLOCK_ROWS)
    relative = (index_y - row0.view(-1, 1, 1)).clamp_(0, rows_out - 1).long()
    dense = torch.zeros((n, size, rows_out), dtype=dtype, device=dev).scatter_add_(2, relative, wy.to(dtype))
    both = torch.bmm(dense, rows.view(n, rows_out, 3 * size)).round_().clamp_(0, 255)  # (n, size, 3 size)
    pixels = both.view(n, size, 3, size).permute(0, 2, 1, 3)
    if affine is None:
        out.copy_(pixels)
    else:
        torch.addcmul(affine[1], pixels, affine[0], out=out)
    return out
