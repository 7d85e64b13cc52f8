"""Decoders: a batch's encoded JPEG bytes -> planar uint8 images on the device (`model.decode`).

    python -c "from reference_models.vision.decoders import make_decoder; help(make_decoder)"

nvImageCodec (the GPU's hardware JPEG decoder, its CPU decoder for what the hardware cannot read),
torchvision's nvJPEG (CUDA kernels on the SMs) and PIL (the CPU path's pixels; tests) behind one
interface, `Decoder`; reference_models/resnet/decode.py says what each backend costs and gives.
"""
from __future__ import annotations

import io
import os
import time
import warnings
from typing import Any, Callable, Optional, Protocol, Sequence

import numpy as np
import torch
from PIL import Image

from harness.interface import DataError

__all__ = ["Decoder", "NvImageCodecDecoder", "PilDecoder", "TorchvisionDecoder", "blobs", "make_decoder", "pil_decode"]

GPU_BACKENDS = ("cuda", "nvimgcodec")
INSTALL = "pip install nvidia-nvimgcodec-cu13 nvidia-nvjpeg (the project's `gpu` extra)"


class Decoder(Protocol):
    name: str

    def decode(self, blobs: Sequence[np.ndarray], slot: int) -> list[torch.Tensor]:
        """Planar RGB uint8 (3, H, W) tensors on the decoder's device, one per blob, ordered on the
        current CUDA stream; `slot` names the buffer set to reuse (the caller guarantees that the
        batch that last used it is finished)."""
        ...


def pil_decode(blob: np.ndarray) -> torch.Tensor:
    """PIL's decode of one file to planar RGB uint8: the CPU path's pixels (and any backend's fallback)."""
    try:
        with Image.open(io.BytesIO(blob.tobytes())) as image:
            pixels = np.asarray(image.convert("RGB"))
    except OSError as err:
        raise DataError(f"a training image cannot be decoded ({err})") from None
    return torch.from_numpy(pixels.copy()).permute(2, 0, 1).contiguous()


class PilDecoder:
    """The CPU path's decoder behind the GPU pipeline's interface (tests; no GPU needed)."""

    name = "pil"

    def __init__(self, device: torch.device):
        self.device = device

    def decode(self, blobs: Sequence[np.ndarray], slot: int) -> list[torch.Tensor]:
        return [pil_decode(b).to(self.device) for b in blobs]


class TorchvisionDecoder:
    """torchvision's nvJPEG (decode_jpeg on a CUDA device: CUDA kernels on the SMs), libjpeg-turbo on a CPU."""

    name = "cuda"

    def __init__(self, device: torch.device):
        self.device = device

    def decode(self, blobs: Sequence[np.ndarray], slot: int) -> list[torch.Tensor]:
        from torchvision.io import ImageReadMode, decode_jpeg

        data = [torch.from_numpy(b) for b in blobs]
        with warnings.catch_warnings():  # torchvision 0.29 points to TorchCodec, which does not decode batches of JPEGs
            warnings.simplefilter("ignore", DeprecationWarning)
            return list(decode_jpeg(data, mode=ImageReadMode.RGB, device=self.device))


class NvImageCodecDecoder:
    """nvImageCodec: the hardware JPEG decoder on a GPU (HW_GPU_ONLY), its libjpeg-turbo for what the
    hardware cannot read (CPU_ONLY, on `cpu_threads` threads of this process). `hardware_share` < 1
    sends that share of each batch to the hardware and the rest to the CPU threads (nvImageCodec's
    load hint); on a CPU-only device the CPU decoder alone runs (tests)."""

    name = "nvimgcodec"

    def __init__(self, device: torch.device, cpu_threads: int = 0, hardware_share: float = 1.0,
                 hardware_only: bool = False, options: str = "", backends: Optional[Sequence[tuple[str, float]]] = None):
        """`backends` ((nvImageCodec BackendKind name, load hint), ...) replaces the default list
        (scripts/tools/pipeline_decoders.py compares them)."""
        self.hardware_only = hardware_only
        try:
            os.environ.setdefault("PYNVIMGCODEC_VERBOSITY", "1")  # errors only: not every optional codec library is installed
            from nvidia import nvimgcodec
        except ImportError:
            raise DataError(f"model.decode=nvimgcodec needs nvImageCodec: {INSTALL}") from None
        self.nv, self.device = nvimgcodec, device
        if backends is not None:
            chosen = [nvimgcodec.Backend(getattr(nvimgcodec, kind), load_hint=load) for kind, load in backends]
            device_id = device.index if device.index is not None else torch.cuda.current_device()
        elif device.type == "cuda":
            chosen = [nvimgcodec.Backend(nvimgcodec.HW_GPU_ONLY, load_hint=hardware_share)]
            if not hardware_only:
                chosen.append(nvimgcodec.Backend(nvimgcodec.CPU_ONLY))
            device_id = device.index if device.index is not None else torch.cuda.current_device()
        else:
            chosen, device_id = [nvimgcodec.Backend(nvimgcodec.CPU_ONLY)], nvimgcodec.NVIMGCODEC_DEVICE_CPU_ONLY
        self.options = options
        self.decoder = nvimgcodec.Decoder(device_id=device_id, max_num_cpu_threads=cpu_threads, backends=chosen,
                                          options=options)
        self.timer: Optional[Callable[[str, float], None]] = None
        # no EXIF rotation: PIL's Image.open (the CPU path, the MLPerf reference) does not rotate either
        self.params = nvimgcodec.DecodeParams(apply_exif_orientation=False, color_spec=nvimgcodec.SRGB,
                                              sample_format=nvimgcodec.P_RGB)
        self._slots: dict[int, list[Any]] = {}

    def decode(self, blobs: Sequence[np.ndarray], slot: int) -> list[torch.Tensor]:
        t0 = time.perf_counter()
        streams = [self.nv.CodeStream(b) for b in blobs]
        t1 = time.perf_counter()
        reuse = self._slots.get(slot)
        kwargs: dict[str, Any] = {"params": self.params}
        if self.device.type == "cuda":
            kwargs["cuda_stream"] = torch.cuda.current_stream(self.device).cuda_stream
        if reuse is not None and len(reuse) == len(streams) and all(r is not None for r in reuse):
            kwargs["images"] = reuse  # buffers resized in place: no allocation (or implicit device sync) per batch
        images = self.decoder.decode(streams, **kwargs)
        t2 = time.perf_counter()
        self._slots[slot] = list(images)
        out = []
        for blob, image in zip(blobs, images):
            if image is None and self.hardware_only:
                raise DataError("nvImageCodec's hardware decoder did not decode a file")
            if image is None:  # neither backend read it: PIL's error (or pixels) decides, as on the CPU path
                out.append(pil_decode(blob).to(self.device))
            elif image.buffer_kind == self.nv.ImageBufferKind.STRIDED_HOST:
                out.append(torch.from_numpy(np.asarray(image)).to(self.device))
            else:
                out.append(_on_device(image, self.device))
        if self.timer is not None:  # the decode thread's host time by stage (pipeline_bench.py prints it)
            self.timer("code_streams", t1 - t0)
            self.timer("decode_call", t2 - t1)
            self.timer("wrap_outputs", time.perf_counter() - t2)
        return out


def _on_device(image: Any, device: torch.device) -> torch.Tensor:
    """A decoded image's device buffer as a tensor, without a copy: ordered on the stream it was
    decoded on (the current one), so no synchronisation is asked for (__cuda_array_interface__,
    else DLPack, which makes the current stream wait for the producer's)."""
    try:
        return torch.as_tensor(image, device=device)
    except (TypeError, ValueError):
        return torch.from_dlpack(image)


def make_decoder(name: str, device: torch.device, cpu_threads: int = 0, options: str = "") -> Decoder:
    """`options`: nvImageCodec's options string (preallocation), for decode=nvimgcodec only."""
    if name == "nvimgcodec":
        return NvImageCodecDecoder(device, cpu_threads=cpu_threads, options=options)
    if name == "cuda":
        return TorchvisionDecoder(device)
    if name == "pil":
        return PilDecoder(device)
    raise ValueError(f"no GPU decoder named {name!r}: choose one of {', '.join(GPU_BACKENDS)}")


def blobs(data: torch.Tensor, offsets: Sequence[int]) -> list[np.ndarray]:
    """Each image's bytes of a batch's shared buffer (views, no copies)."""
    flat = data.numpy()
    return [flat[a:b] for a, b in zip(offsets, offsets[1:])]
