"""How big nvImageCodec's hardware decoder makes its buffers, once, for a dataset's batches.

    python -m harness.train model=resnet dataset=imagenet model.decode=nvimgcodec model.decode_preallocate=true

Without options nvImageCodec's hardware JPEG decoder (nvjpeg_hw_decoder) is sized for batches of one
image of 1 x 1 pixels and grows its buffers as the batches come; DALI's decoder, which MLPerf's
ResNet-50 submissions use, passes the batch size and the largest image expected
(nvjpegDecodeBatchedPreAllocate) and keeps the CUDA decoder's buffers between calls. These are
those options, for `reference_models/vision/decoders.py`'s NvImageCodecDecoder.
"""
from __future__ import annotations

from typing import Any, Sequence

from PIL import Image


def preallocation(batch_size: int, width: int, height: int) -> str:
    """nvImageCodec's options that size the hardware decoder's buffers once for a batch of
    `batch_size` images up to width x height (nvjpegDecodeBatchedPreAllocate, as DALI's decoder sets
    them: its source notes more than 20% for 8-GPU training) and keep the CUDA decoder's buffers
    between calls. Without them the hardware decoder is sized for batches of one image of 1 x 1 and
    grows its buffers as batches come (model.decode_preallocate)."""
    return (f"nvjpeg_hw_decoder:preallocate_batch_size={max(1, batch_size)} "
            f"nvjpeg_hw_decoder:preallocate_width_hint={max(1, width)} "
            f"nvjpeg_hw_decoder:preallocate_height_hint={max(1, height)} "
            "nvjpeg_cuda_decoder:preallocate_buffers=true")


def largest_size(paths: Sequence[Any], probe: int = 64) -> tuple[int, int]:
    """(width, height), each the largest of `probe` files spread evenly over `paths` (their headers
    only): the hardware decoder's preallocation hint; a larger image later grows its buffers once."""
    width = height = 1
    for i in range(min(probe, len(paths))):
        try:
            with Image.open(paths[i * len(paths) // min(probe, len(paths))]) as image:
                width, height = max(width, image.size[0]), max(height, image.size[1])
        except OSError:
            continue  # the loader names a bad file when it reads it
    return width, height
