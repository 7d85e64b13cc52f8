"""Training JPEGs decoded on the GPU beside the training step, into the pictures the CPU path makes.

    python -m harness.train model=resnet dataset=imagenet model.decode=nvimgcodec   # the hardware decoder
    python -m harness.train model=resnet dataset=imagenet model.decode=auto         # measured at build
    python -m harness.train model=resnet dataset=imagenet model.decode=nvimgcodec model.decode_threads=3
    python -m harness.train model=resnet dataset=imagenet model.decode=nvimgcodec model.cpu_decode_share=0.2

`model.decode` says where the training JPEGs are decoded:
- cpu: the DataLoader workers decode, crop and resize each image with PIL (reference_models/resnet/data.py);
- nvimgcodec: the workers only read the files and draw each crop from the JPEG header; nvImageCodec
  decodes the batch on the GPU's hardware JPEG decoder (the NVJPG engines of A100, H100 and H200:
  silicon apart from the SMs, so decoding does not take the training step's multiprocessors), falling
  back to its CPU decoder for a file the hardware cannot read (progressive, CMYK). Needs the
  `nvidia-nvimgcodec-cu13` and `nvidia-nvjpeg` wheels (pyproject's `gpu` extra);
- cuda: the same, with torchvision's nvJPEG (`decode_jpeg(device="cuda")`), which decodes with CUDA
  kernels on the SMs: it competes with the step for them, and its pictures are not libjpeg's (on an
  H200 its decode differed from PIL's by 0.69 levels on average, up to 119; the hardware decoder's
  by at most 1);
- auto: cpu without CUDA; on a GPU a short probe at build time (`probe_rates`) times nvImageCodec's
  hardware decoder and the workers' PIL path on the dataset's own files and takes the faster (on the
  H200: hardware 7,372 images/s against the workers' estimated 5,885, so nvimgcodec; cuda is never
  chosen, for the reasons above). SSD and Mask R-CNN keep cpu under auto (detection/decode.py says why).

On the GPU every batch goes through the same steps, on a side CUDA stream, from threads that keep
`depth` batches ready ahead of the step (the step's stream waits on an event, never the host):
decode -> planar uint8 canvases -> `crop_resize` -> normalise. `model.decode_threads` threads do it
side by side, each with its own decoder, stream and buffers, and the step takes their batches in the
loader's order (prefetch.DeviceBatches). `model.cpu_decode_share` gives the otherwise idle DataLoader
workers the last round(B x share) images of each batch: they decode, crop, resize and flip them with
PIL in the batch's collate (data.collate_encoded, data.pil_crop: the CPU path's pixels, to the bit),
the GPU decodes the first B - k, crop_resize writes those into the batch's first rows (`out=`), and
the workers' uint8 crops are copied in from pinned memory and normalised with the same affine into
the last rows, in the model's memory format: the decode thread's per-image host work falls by that
share (ImageNetBatches). The files' bytes reach
the decoder in page-locked memory (the loader's pin thread: data.EncodedBatch.pin_memory), so its
copies to the device are queued on the side stream rather than staged through pageable memory. `crop_resize` is PIL's
bilinear resampling (the filter `Image.resize(..., box=...)` applies: a triangle whose support grows
with the downscale factor, taps clipped to the image, weights normalised) written as two batched
matrix products, horizontal pass first as PIL does: the 256 crops of a batch cost a dozen kernels,
not three per image. PIL rounds to uint8 between and after its two passes; this rounds once, at the
end, so a pixel differs from PIL's by at most one level (tests/reference_models/resnet/test_decode.py
states and checks the tolerance on the CPU; on an H200, scripts/tools/pipeline_decoders.py measured
the hardware decoder's crops against PIL's: mean 0.18 levels, none more than 1,
docs/benchmarks/pipeline_2026-12-01.md).
"""
from __future__ import annotations

import io
import logging
import os
import time
import warnings
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Optional, Protocol, Sequence, Union

import numpy as np
import torch
from PIL import Image

from harness.interface import DataError
from reference_models.resnet.data import MEAN, STD
from reference_models.resnet.prefetch import DeviceBatches

__all__ = ["DeviceBatches", "ImageNetBatches", "crop_resize", "make_decoder", "resolve", "probe_rates"]

log = logging.getLogger("harness.decode")

CHOICES = ("auto", "cpu", "cuda", "nvimgcodec")
GPU_BACKENDS = ("cuda", "nvimgcodec")
INSTALL = "pip install nvidia-nvimgcodec-cu13 nvidia-nvjpeg (the project's `gpu` extra)"


# --- PIL's bilinear resampling as matrices ---------------------------------------------------------

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


def _groups(sizes: Sequence[tuple[int, int]], slack: float = 1.5) -> list[list[int]]:
    """Indices of images that share one padded canvas: sorted by size, a group closes when its canvas
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
    host tensors. On CUDA the products run in float16 (pixels 0..255 are exact in it; weights to
    1e-3 relative), float32 elsewhere. `out`, a float32 (B, 3, size, size) tensor on the images'
    device (rows of a larger batch, in any memory format), receives the crops in place of a new
    tensor (ImageNetBatches: the GPU's rows of a batch whose other rows the workers made).

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
    dtype = torch.float16 if dev.type == "cuda" else torch.float32
    sizes = [(int(im.shape[1]), int(im.shape[2])) for im in images]
    groups = _groups(sizes)
    order = [i for members in groups for i in members]
    natural = order == list(range(n))
    clips = torch.tensor([[0, 0, h, w] for h, w in sizes]) if clips is None else clips
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


# --- decoders: encoded JPEG bytes -> planar uint8 images on the device ------------------------------

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


def normalization(mean: Sequence[float], std: Sequence[float], device: torch.device,
                  scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(1 / (scale std), -mean / std), (1, 3, 1, 1) each: crop_resize's `affine` for (x / scale - mean) / std."""
    m = torch.tensor(mean, dtype=torch.float64).view(1, 3, 1, 1)
    s = torch.tensor(std, dtype=torch.float64).view(1, 3, 1, 1)
    return (1 / (scale * s)).float().to(device), (-m / s).float().to(device)


class ImageNetBatches:
    """ResNet's training batches through `DeviceBatches`: data.EncodedBatch -> (images normalised as
    data.normalize does, in the model's memory format; labels) on the device. `decoder` is one
    decoder or one per thread (model.decode_threads): thread t decodes with decoders[t] only. A
    batch whose last k images the workers decoded (model.cpu_decode_share: EncodedBatch.pixels)
    comes out whole, in the batch's order: the GPU's crops in its first B - k rows, the workers'
    uint8 crops copied in and normalised by the same affine in the last k."""

    def __init__(self, decoder: Union[Decoder, Sequence[Decoder]], size: int, device: torch.device,
                 channels_last: bool, depth: int = 3):
        self.decoders: list[Decoder] = list(decoder) if isinstance(decoder, Sequence) else [decoder]
        self.decoder, self.size, self.device = self.decoders[0], size, device
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        self.affine = normalization(MEAN, STD, device)  # data.normalize's numbers, in crop_resize's last pass
        self.pipeline = DeviceBatches([partial(self._prepare_with, d) for d in self.decoders], device, depth)
        for d in self.decoders:
            if hasattr(d, "timer"):
                d.timer = self.pipeline.add  # type: ignore[union-attr]

    def _prepare(self, batch: Any, slot: int) -> tuple[tuple[torch.Tensor, torch.Tensor], list[torch.Tensor]]:
        return self._prepare_with(self.decoder, batch, slot)

    def _prepare_with(self, decoder: Decoder, batch: Any, slot: int
                      ) -> tuple[tuple[torch.Tensor, torch.Tensor], list[torch.Tensor]]:
        add = self.pipeline.add  # each stage's host time (pipeline_bench.py prints them per batch)
        t0 = time.perf_counter()
        encoded = len(batch.offsets) - 1
        workers = 0 if batch.pixels is None else int(batch.pixels.shape[0])
        images = torch.empty((encoded + workers, 3, self.size, self.size), dtype=torch.float32, device=self.device,
                             memory_format=self.memory_format)
        # the files' bytes stay referenced until the batch's event: the decoder's queued copies read
        # them (pinned: EncodedBatch.pin_memory), and PyTorch's pinned-memory cache does not know of them
        keep: list[torch.Tensor] = [batch.data]
        views = blobs(batch.data, batch.offsets) if encoded else []
        add("allocate", time.perf_counter() - t0)
        if encoded:
            t0 = time.perf_counter()
            decoded = decoder.decode(views, slot)
            t1 = time.perf_counter()
            add("decode", t1 - t0)
            crop_resize(decoded, batch.boxes, batch.flips, self.size, affine=self.affine, out=images[:encoded])
            add("crop_resize", time.perf_counter() - t1)
            keep += decoded
        t0 = time.perf_counter()
        if workers:
            # one queued copy from pinned memory on this side stream, then crop_resize's last pass:
            # the same affine on the same integral values, so the rows equal the CPU path's normalised
            pixels = to_device(batch.pixels, self.device)
            torch.addcmul(self.affine[1], pixels.float(), self.affine[0], out=images[encoded:])
            keep.append(batch.pixels)
        labels = to_device(batch.labels, self.device)
        add("copies", time.perf_counter() - t0)
        return (images, labels), keep

    def __call__(self, batches: Iterable[Any]) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        yield from self.pipeline(batches)  # closing this generator closes the pipeline's, and its threads


# --- model.decode=auto: a short probe at build time --------------------------------------------------

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
