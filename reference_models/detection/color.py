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
`jitter_round` (one of the four rounds for every image) is compiled on CUDA: one fused kernel per round
instead of some hundred elementwise passes.
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


def jitter_round(x: torch.Tensor, op: torch.Tensor, factors: torch.Tensor, enabled: torch.Tensor) -> torch.Tensor:
    """One of ColorJitter's four steps for every image: image n applies operation op[n] (0..3) with
    its factors[n, op[n]], or nothing where that operation is off (enabled[op[n]] false: a jitter of 0,
    which torchvision skips). x: (N, 3, H, W) float32 values 0..255."""
    f = factors.float().view(-1, 4, 1, 1)
    o = op.view(-1, 1, 1, 1)
    on = enabled[op].view(-1, 1, 1, 1)
    zero = torch.zeros((), device=x.device)
    out = torch.where(o == BRIGHTNESS, blend(zero, x, f[:, 0:1]), x)
    out = torch.where(o == CONTRAST, blend(contrast_mean(x), x, f[:, 1:2]), out)
    out = torch.where(o == SATURATION, blend(luma(x), x, f[:, 2:3]), out)
    out = torch.where(o == HUE, hue_shift(x, factors.view(-1, 4, 1, 1)[:, 3:4]), out)
    return torch.where(on, out, x)


class ColorJitter:
    """ColorJitter of PIL images for a batch on a device: `(x, order (N, 4), factors (N, 4))`, the
    operations' order and factors as torchvision's ColorJitter.get_params drew them per image; the
    factors of operations switched off (`enabled`) are ignored."""

    def __init__(self, device: torch.device, enabled: Sequence[bool], compile: Optional[bool] = None):
        self.enabled = torch.tensor(list(enabled), dtype=torch.bool, device=device)
        self._round: Callable[..., torch.Tensor] = jitter_round
        if compile if compile is not None else device.type == "cuda":
            self._round = torch.compile(jitter_round, dynamic=False, fullgraph=True)

    def warm(self, shape: tuple[int, int, int, int], device: torch.device) -> None:
        """Compile for this batch shape now, in the calling thread (the pipeline's thread then only runs it);
        if the compiler fails, run the same operations uncompiled."""
        x = torch.zeros(shape, device=device)
        order = torch.arange(4, device=device).repeat(shape[0], 1)
        try:
            self._round(x, order[:, 0], torch.ones(shape[0], 4, dtype=torch.float64, device=device), self.enabled)
        except Exception as err:  # noqa: BLE001 - any compiler failure: the eager path computes the same
            log.warning("color jitter runs uncompiled: torch.compile failed (%s)", str(err).splitlines()[0])
            self._round = jitter_round

    def __call__(self, x: torch.Tensor, order: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
        for k in range(4):
            x = self._round(x, order[:, k].contiguous(), factors, self.enabled)
        return x
