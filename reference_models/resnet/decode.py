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
- auto: cpu without CUDA; on a GPU a short probe at build time (vision/backend.py's `probe_rates`) times nvImageCodec's
  hardware decoder and the workers' PIL path on the dataset's own files and takes the faster (on the
  H200: hardware 7,372 images/s against the workers' estimated 5,885, so nvimgcodec; cuda is never
  chosen, for the reasons above). SSD and Mask R-CNN keep cpu under auto (detection/decode.py says why).

On the GPU every batch goes through the same steps, on a side CUDA stream, from threads that keep
`depth` batches ready ahead of the step (the step's stream waits on an event, never the host):
decode -> planar uint8 canvases -> `crop_resize` -> normalise. `model.decode_threads` threads do it
side by side, each with its own decoder, stream and buffers, and the step takes their batches in the
loader's order (vision/prefetch.py's DeviceBatches). `model.cpu_decode_share` gives the otherwise idle DataLoader
workers the last round(B x share) images of each batch: they decode, crop, resize and flip them with
PIL in the batch's collate (data.collate_encoded, data.pil_crop: the CPU path's pixels, to the bit),
the GPU decodes the first B - k, crop_resize writes those into the batch's first rows (`out=`), and
the workers' uint8 crops are copied in from pinned memory and normalised with the same affine into
the last rows, in the model's memory format: the decode thread's per-image host work falls by that
share (ImageNetBatches). The files' bytes reach
the decoder in page-locked memory (the loader's pin thread: data.EncodedBatch.pin_memory), so its
copies to the device are queued on the side stream rather than staged through pageable memory.
The shared parts live in reference_models/vision/: the decoders (decoders.py), `crop_resize`
(resample.py: PIL's bilinear resampling as batched matrix products, within one level of PIL's
pixels), the normalisation (normalize.py), the threads (prefetch.py) and `model.decode`'s choice
(backend.py); this file holds ResNet's batches.
"""
from __future__ import annotations

import time
from functools import partial
from typing import Any, Iterable, Iterator, Sequence, Union

import torch

from reference_models.resnet.data import MEAN, STD
from reference_models.vision.decoders import Decoder, blobs
from reference_models.vision.normalize import normalization
from reference_models.vision.prefetch import DeviceBatches
from reference_models.vision.resample import crop_resize, to_device

__all__ = ["ImageNetBatches"]


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
