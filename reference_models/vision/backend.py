"""What `model.decode` means on a device, and model.decode=auto's short probe at build time.

    python -c "import torch; from reference_models.vision.backend import resolve; print(resolve('auto', torch.device('cpu')))"
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable, Optional

import numpy as np
import torch

from harness.interface import DataError
from reference_models.vision.decoders import GPU_BACKENDS, NvImageCodecDecoder
from reference_models.vision.resample import crop_resize

__all__ = ["CHOICES", "probe_rates", "resolve"]

log = logging.getLogger("harness.decode")

CHOICES = ("auto", "cpu", "cuda", "nvimgcodec")


def resolve(choice: str, device: torch.device, probe: Optional[Callable[[], dict[str, float]]] = None) -> str:
    """The backend `model.decode=choice` means on `device`. A GPU backend on a host without CUDA is
    an error; `auto` is cpu without CUDA, and on a GPU the faster of the workers' PIL path and
    nvImageCodec's hardware decoder by `probe()` (images/s of each; nvimgcodec absent: cpu)."""
    if choice not in CHOICES:
        raise ValueError(f"model.decode={choice}: choose one of {', '.join(CHOICES)}")
    if choice in GPU_BACKENDS and device.type != "cuda":
        raise ValueError(f"model.decode={choice} needs a CUDA device: use model.decode=cpu (or auto)")
    if choice != "auto":
        return choice
    if device.type != "cuda" or probe is None:
        return "cpu"
    rates = probe()
    hardware, cpu = rates.get("nvimgcodec", 0.0), rates.get("cpu", 0.0)
    chosen = "nvimgcodec" if hardware > cpu else "cpu"
    log.info("model.decode=auto: %s (probe on the training files: hardware decoder %s images/s, "
             "the workers' PIL path about %s)", chosen, f"{hardware:,.0f}" if hardware else "unavailable", f"{cpu:,.0f}")
    return chosen


def probe_rates(count: int, path_of: Callable[[int], Any], cpu_work: Callable[[int], Any], device: torch.device,
                workers: int, size: int, probe: int = 64) -> dict[str, float]:
    """images/s of the CPU path (`cpu_work(i)`: the workers' decoding and augmentation of training
    sample i, timed here in this process, times `workers` as if they scaled perfectly: a generous
    estimate) and of nvImageCodec's hardware decoder with crops resized to `size` on the GPU (a
    warm-up batch, then one timed batch of `probe` files, `path_of(i)` of `count` samples spread
    evenly); a decoder that cannot load or read them gets no entry."""
    picked = [i * count // probe for i in range(min(probe, count))]
    rates: dict[str, float] = {}
    few = picked[: max(1, len(picked) // 4)]
    t0 = time.perf_counter()
    for i in few:
        cpu_work(i)
    rates["cpu"] = max(workers, 1) * len(few) / (time.perf_counter() - t0)
    if device.type != "cuda":  # the hardware decoder is a GPU's
        return rates
    data = [np.fromfile(path_of(i), dtype=np.uint8) for i in picked]
    try:
        decoder = NvImageCodecDecoder(device, hardware_only=True)
        seconds = []
        for slot in range(2):  # the first call starts the decoder and launches the kernels once
            torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            images = decoder.decode(data, slot)
            side = min(min(im.shape[1], im.shape[2]) for im in images)
            boxes = torch.tensor([[0, 0, side, side]] * len(images))
            crop_resize(images, boxes, torch.zeros(len(images), dtype=torch.bool), size)
            torch.cuda.synchronize(device)
            seconds.append(time.perf_counter() - t0)
        rates["nvimgcodec"] = len(data) / seconds[-1]
    except (DataError, RuntimeError) as err:
        log.info("model.decode=auto: nvImageCodec's hardware decoder is not usable here (%s)", str(err).splitlines()[0])
    return rates
