"""torchvision's ColorJitter as it runs on a PIL image (SSD's reference augmentation), on batches of
tensors on the GPU, each image with its own factors and its own order of the four operations.

    python -c "from reference_models.detection.color import jitter; help(jitter)"

PIL works in uint8: every operation rounds, and those roundings are part of the pictures the MLPerf
reference trains on. So each operation here is Pillow's own arithmetic (libImaging) on pixel values
0..255 held in float32 (integers that float32 holds exactly), double precision where Pillow's C uses it:
- brightness, contrast, saturation: ImageEnhance = Image.blend(degenerate, image, factor): in float32,
  degenerate + factor * (image - degenerate), clipped to 0..255 and truncated to uint8 (Blend.c);
  the degenerate image is black, the rounded mean of the image's luma, or each pixel's luma, with
  luma L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16 (Convert.c, L24);
- hue: torchvision's adjust_hue: RGB -> PIL's HSV (uint8), H + int(hue_factor * 255) wrapping at
  256, HSV -> RGB (Convert.c's rgb2hsv_row and hsv2rgb).
A pixel then differs from PIL's only where the GPU's fused multiply-add lands a product on the
other side of an integer, rarely (tests/reference_models/detection/test_decode.py states the tolerance).
`blend_round` (a round's brightness, contrast or saturation for every image) is compiled on CUDA: one
fused kernel per round instead of some hundred elementwise passes; the hue, the costly operation, is
computed only for the images that apply it in a round (`ColorJitter`).
"""
from __future__ import annotations

import logging
from typing import Callable, Optional, Sequence

import torch

log = logging.getLogger("harness.decode")

BRIGHTNESS, CONTRAST, SATURATION, HUE = range(4)  # ColorJitter's fn_idx numbering


def luma(x: torch.Tensor) -> torch.Tensor:
    """(N, 1, H, W) Pillow's RGB -> L of (N, 3, H, W) values 0..255 (exact in float32: below 2^24)."""
    r, g, b = x[:, 0:1], x[:, 1:2], x[:, 2:3]
    return torch.floor((r * 19595 + g * 38470 + b * 7471 + 32768) / 65536)


def blend(degenerate: torch.Tensor, x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """Image.blend(degenerate, x, factor) on uint8 values: float32, clipped, truncated."""
    return torch.floor((degenerate + factor * (x - degenerate)).clamp(0, 255))


def contrast_mean(x: torch.Tensor) -> torch.Tensor:
    """(N, 1, 1, 1) ImageEnhance.Contrast's grey level: int(mean of L + 0.5), the mean in double."""
    total = luma(x).sum(dim=(1, 2, 3), dtype=torch.float64)
    return torch.floor(total / (x.shape[2] * x.shape[3]) + 0.5).float().view(-1, 1, 1, 1)


def hue_shift(x: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
    """torchvision's PIL adjust_hue: through Pillow's uint8 HSV and back, H moved by int(factor * 255)."""
    r, g, b = x[:, 0:1], x[:, 1:2], x[:, 2:3]
    maxc = torch.maximum(r, torch.maximum(g, b))
    minc = torch.minimum(r, torch.minimum(g, b))
    grey = maxc == minc
    cr = torch.where(grey, torch.ones_like(maxc), maxc - minc)
    s = cr / torch.where(maxc == 0, torch.ones_like(maxc), maxc)
    rc, gc, bc = (maxc - r) / cr, (maxc - g) / cr, (maxc - b) / cr
    h = torch.where(r == maxc, (bc - gc).double(),
                    torch.where(g == maxc, 2.0 + rc.double() - bc.double(), 4.0 + gc.double() - rc.double()))
    h = torch.fmod(h.float().double() / 6.0 + 1.0, 1.0).float()  # C: h is a float, the arithmetic double
    uh = torch.where(grey, torch.zeros_like(maxc), torch.trunc(h.double() * 255.0).clamp(0, 255).float())
    us = torch.where(grey, torch.zeros_like(maxc), torch.trunc(s.double() * 255.0).clamp(0, 255).float())
    shift = torch.remainder(torch.trunc(factor.double() * 255), 256).float()  # np.int32(...).astype(uint8)
    uh = torch.remainder(uh + shift, 256)
    v = maxc
    hd = uh.double() * 6.0 / 255.0
    i = torch.floor(hd)
    f = (hd - i).float()
    fs = (us.double() / 255.0).float()
    p = torch.floor(v.double() * (1.0 - fs.double()) + 0.5).clamp(0, 255).float()  # C round(): half away from 0
    q = torch.floor(v.double() * (1.0 - (fs * f).double()) + 0.5).clamp(0, 255).float()
    t = torch.floor(v.double() * (1.0 - fs.double() * (1.0 - f.double())) + 0.5).clamp(0, 255).float()
    sector = torch.remainder(i, 6).float()
    r2 = _pick(sector, (v, q, p, p, t, v))
    g2 = _pick(sector, (t, v, v, q, p, p))
    b2 = _pick(sector, (p, p, t, v, v, q))
    out = torch.cat((r2, g2, b2), dim=1)
    return torch.where(us == 0, v.expand_as(x), out)


def _pick(sector: torch.Tensor, values: Sequence[torch.Tensor]) -> torch.Tensor:
    out = values[5]
    for k in range(4, -1, -1):
        out = torch.where(sector == k, values[k], out)
    return out


def blend_round(x: torch.Tensor, op: torch.Tensor, factors: torch.Tensor, enabled: torch.Tensor) -> torch.Tensor:
    """One of ColorJitter's four steps for every image whose operation in it is a blend: image n
    applies op[n] (brightness, contrast or saturation) with its factors[n, op[n]]; images whose
    operation is the hue, or is off (enabled[op[n]] false: a jitter of 0, which torchvision skips),
    are left as they are (`hue_round` does the hue). x: (N, 3, H, W) float32 values 0..255."""
    f = factors.float().view(-1, 4, 1, 1)
    o = op.view(-1, 1, 1, 1)
    on = (enabled[op] & (op != HUE)).view(-1, 1, 1, 1)
    zero = torch.zeros((), device=x.device)
    out = torch.where(o == BRIGHTNESS, blend(zero, x, f[:, 0:1]), x)
    out = torch.where(o == CONTRAST, blend(contrast_mean(x), x, f[:, 1:2]), out)
    out = torch.where(o == SATURATION, blend(luma(x), x, f[:, 2:3]), out)
    return torch.where(on, out, x)


def hue_images(x: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    """hue_shift of the images (n, 3, H, W) with their own factors (n, 4) (the hue's is the last)."""
    return hue_shift(x, factors.view(-1, 4, 1, 1)[:, 3:4])


class ColorJitter:
    """ColorJitter of PIL images for a batch on a device: `(x, order (N, 4), factors (N, 4))`, the
    operations' order and factors as torchvision's ColorJitter.get_params drew them per image; the
    factors of operations switched off (`enabled`) are ignored.

    Each of the four rounds applies the three blends to every image in one pass (each image keeps
    the one its order names) and the hue, Pillow's costly round trip through HSV, only to the images
    whose order names it in that round: each image's hue is computed once, not in every round. The
    order is on the host (the workers drew it), so which images those are costs no device read;
    their indices go to the device in one pinned copy per batch. Each pixel's arithmetic is the
    same as one round computing all four operations for every image and keeping one (on a CPU the
    images are equal to the bit). On CUDA `blend_round` is compiled for the batch's shape and
    `hue_images` for any number of images."""

    def __init__(self, device: torch.device, enabled: Sequence[bool], compile: Optional[bool] = None):
        self.device = device
        self.enabled_host = tuple(bool(e) for e in enabled)
        self.enabled = torch.tensor(list(enabled), dtype=torch.bool, device=device)
        self._round: Callable[..., torch.Tensor] = blend_round
        self._hue: Callable[..., torch.Tensor] = hue_images
        if compile if compile is not None else device.type == "cuda":
            self._round = torch.compile(blend_round, dynamic=False, fullgraph=True)
            self._hue = torch.compile(hue_images, dynamic=True, fullgraph=True)

    def warm(self, shape: tuple[int, int, int, int], device: torch.device,
             memory_format: torch.memory_format = torch.contiguous_format) -> None:
        """Compile for this batch shape now, in the calling thread (the pipeline's thread then only runs it),
        the hue for one image and for several (a single image is a graph of its own); if the compiler
        fails, run the same operations uncompiled."""
        x = torch.zeros(shape, device=device).contiguous(memory_format=memory_format)  # the layout the batches have
        ops = torch.arange(4, device=device).repeat(shape[0], 1).t().contiguous()
        factors = torch.ones(shape[0], 4, dtype=torch.float64, device=device)
        try:
            self._round(x, ops[0].clone(), factors, self.enabled)
            for n in sorted({1, min(2, shape[0])}):
                rows = torch.arange(n, device=device)
                self._hue(x.index_select(0, rows), factors.index_select(0, rows))
        except Exception as err:  # noqa: BLE001 - any compiler failure: the eager path computes the same
            log.warning("color jitter runs uncompiled: torch.compile failed (%s)", str(err).splitlines()[0])
            self._round, self._hue = blend_round, hue_images

    def __call__(self, x: torch.Tensor, order: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
        """x (N, 3, H, W) float32 0..255 on the device; order (N, 4) int64 on the host; factors (N, 4)
        float64 on the device."""
        order = order.cpu()  # a no-op for the workers' order; a device order is read once
        rounds = [torch.nonzero(order[:, k] == HUE).flatten() if self.enabled_host[HUE] else order.new_zeros(0)
                  for k in range(4)]
        counts = [len(r) for r in rounds]
        hue_rows = _on(torch.cat(rounds), self.device) if sum(counts) else None
        ops = _on(order.t().contiguous(), self.device)  # (4, N): round k's operation per image
        start = 0
        for k in range(4):
            # a row of its own (offset 0), as `warm` compiled for: another storage offset would recompile
            x = self._round(x, ops[k].clone(), factors, self.enabled)
            if counts[k] and hue_rows is not None:
                rows = hue_rows[start: start + counts[k]]
                x.index_copy_(0, rows, self._hue(x.index_select(0, rows), factors.index_select(0, rows)))
            start += counts[k]
        return x


def _on(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A small host tensor on `device` through pinned memory: the copy is queued, the thread does not wait."""
    if device.type != "cuda":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)
