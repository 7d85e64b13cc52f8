"""model.decode_preallocate (reference_models/resnet/preallocate.py): the options it hands nvImageCodec,
the size hint read from the files' headers, and the same pictures with the options as without."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from reference_models.resnet import data
from reference_models.resnet.generate import ImageSpec, write
from reference_models.resnet.preallocate import largest_size, preallocation
from reference_models.vision.decoders import make_decoder


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    spec = ImageSpec(classes=2, train_per_class=4, val_per_class=1, width=120, height=90, size_jitter=0.3)
    return write(spec, tmp_path_factory.mktemp("d") / "d", workers=1)


def test_the_hint_is_the_largest_width_and_height_of_the_files_headers(folder):
    from PIL import Image

    paths = [path for path, _ in data.load(folder).train]
    sizes = []
    for p in paths:
        with Image.open(p) as image:
            sizes.append(image.size)
    assert largest_size(paths) == (max(w for w, _ in sizes), max(h for _, h in sizes))
    assert largest_size(paths[:0]) == (1, 1)  # nothing to read: the decoder's own minimum


def test_the_options_name_the_batch_and_the_size_for_the_hardware_decoder():
    options = preallocation(256, 500, 375).split()
    assert options == ["nvjpeg_hw_decoder:preallocate_batch_size=256", "nvjpeg_hw_decoder:preallocate_width_hint=500",
                       "nvjpeg_hw_decoder:preallocate_height_hint=375", "nvjpeg_cuda_decoder:preallocate_buffers=true"]


def test_a_decoder_made_with_the_options_decodes_the_same_pixels(folder):
    pytest.importorskip("nvidia.nvimgcodec", reason="nvImageCodec is not installed (the project's gpu extra)")
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    paths = [path for path, _ in data.load(folder).train]
    blobs = [np.fromfile(p, dtype=np.uint8) for p in paths]
    plain = make_decoder("nvimgcodec", device).decode(blobs, 0)
    sized = make_decoder("nvimgcodec", device, options=preallocation(len(blobs), *largest_size(paths)))
    assert sized.options.startswith("nvjpeg_hw_decoder:")  # type: ignore[attr-defined]
    for a, b in zip(plain, sized.decode(blobs, 0)):
        assert torch.equal(a.cpu(), b.cpu())
