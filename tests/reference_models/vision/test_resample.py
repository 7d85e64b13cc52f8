"""PIL's bilinear resampling as matrices (reference_models/vision/resample.py) on the CPU.

The stated tolerance, the resampling alone (PIL's decode on both sides): every pixel within 1 level
of PIL's (PIL rounds to uint8 after each of its two passes, the matrices once at the end), the mean
difference under 0.25. A backend's whole path: tests/reference_models/resnet/test_decode.py.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from reference_models.resnet import data
from reference_models.resnet.generate import ImageSpec, write
from reference_models.vision.decoders import pil_decode
from reference_models.vision.normalize import normalization
from reference_models.vision.resample import crop_resize, size_groups

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    spec = ImageSpec(classes=2, train_per_class=6, val_per_class=1, width=120, height=90, size_jitter=0.3)
    return write(spec, tmp_path_factory.mktemp("d") / "d", workers=1)



def _pil_crop(path: str, box: tuple[int, int, int, int], flip: bool, size: int) -> torch.Tensor:
    """The CPU path's crop (reference_models/resnet/data.py), as floats."""
    with Image.open(path) as image:
        return data.pil_crop(image, box, flip, size).float()



@pytest.mark.parametrize("part, flip", [((0.1, 0.2, 0.6, 0.7), False), ((0, 0, 1, 1), True), ((0.3, 0.4, 0.2, 0.2), False),
                                        ((0.05, 0, 0.95, 0.3), True)])
def test_the_matrices_resample_as_pil_does(folder, part, flip):
    """Downscaling (support > 1), upscaling (a fifth of the image to 64 pixels), whole images, boxes
    on the edges, mirrored."""
    path = data.load(folder).train[0][0]
    image = pil_decode(np.fromfile(path, dtype=np.uint8))
    h, w = image.shape[1:]
    box = (int(part[0] * h), int(part[1] * w), max(1, int(part[2] * h)), max(1, int(part[3] * w)))
    ours = crop_resize([image], torch.tensor([box]), torch.tensor([flip]), 64)[0]
    diff = (ours - _pil_crop(path, box, flip, 64)).abs()
    assert diff.max() <= 1 and diff.mean() < 0.25
    assert ours.dtype == torch.float32 and torch.equal(ours, ours.round())  # integral levels, as uint8 pictures


def test_a_crop_cut_out_first_resamples_within_its_bounds(folder):
    """clips: PIL's crop(...).resize(...) (SSD's order) lets no tap fall outside the crop."""
    path = data.load(folder).train[1][0]
    image = pil_decode(np.fromfile(path, dtype=np.uint8))
    left, top, right, bottom = 13, 7, 101, 66
    with Image.open(path) as im:
        theirs = im.convert("RGB").crop((left, top, right, bottom)).resize((50, 50), Image.Resampling.BILINEAR)
    ref = torch.from_numpy(np.asarray(theirs).copy()).permute(2, 0, 1).float()
    box, clip = torch.tensor([[top, left, bottom - top, right - left]]), torch.tensor([[top, left, bottom, right]])
    ours = crop_resize([image], box, torch.tensor([False]), 50, clips=clip)[0]
    assert (ours - ref).abs().max() <= 1


def test_images_of_other_sizes_share_canvases_without_one_large_image_inflating_them():
    sizes = [(375, 500)] * 6 + [(500, 375)] * 2 + [(3000, 4000)]
    groups = size_groups(sizes)
    assert sorted(i for g in groups for i in g) == list(range(9))
    assert [8] in groups and len(groups) == 2
    assert size_groups([(90, 120)] * 5) == [[0, 1, 2, 3, 4]]
    torch.manual_seed(0)
    images = [torch.randint(0, 256, (3, h, w), dtype=torch.uint8) for h, w in [(40, 50), (50, 40), (300, 400)]]
    boxes = torch.tensor([[0, 0, 40, 50], [10, 5, 30, 30], [0, 0, 300, 400]])
    together = crop_resize(images, boxes, torch.tensor([False, True, False]), 32)
    apart = torch.cat([crop_resize([im], b[None], f[None], 32)
                       for im, b, f in zip(images, boxes, torch.tensor([False, True, False]))])
    assert torch.equal(together, apart)


def test_the_canvases_are_cut_in_one_gather_and_the_crops_come_back_in_the_batchs_order():
    """Sizes out of order, runs of one size, several canvases, each of several sizes: the batch's crops
    equal, to the bit, those of each image resized alone (one image: one canvas, no gather), with
    the normalisation and SSD's clips (crop(...).resize(...)) too."""
    torch.manual_seed(1)
    sizes = [(300, 400), (40, 50), (41, 50), (40, 50), (300, 400), (52, 38), (400, 300), (40, 50), (299, 401)]
    images = [torch.randint(0, 256, (3, h, w), dtype=torch.uint8) for h, w in sizes]
    boxes = torch.tensor([[(h // 7) * (i % 2), w // 9, h - h // 5, w - w // 4] for i, (h, w) in enumerate(sizes)])
    flips = torch.tensor([i % 3 == 0 for i in range(len(sizes))])
    groups = size_groups(sizes)
    assert [i for g in groups for i in g] != list(range(len(sizes)))  # the canvases' order is not the batch's
    assert any(len({sizes[i] for i in g}) > 1 for g in groups) and len(groups) > 1
    clips = torch.tensor([[t, le, t + h, le + w] for t, le, h, w in boxes.tolist()])
    affine = normalization(data.MEAN, data.STD, CPU)
    for kwargs in ({}, {"clips": clips}, {"affine": affine, "memory_format": torch.channels_last}):
        together = crop_resize(images, boxes, flips, 32, **kwargs)
        apart = []
        for i in range(len(sizes)):
            one = {k: (v[i:i + 1] if k == "clips" else v) for k, v in kwargs.items()}
            apart.append(crop_resize([images[i]], boxes[i:i + 1], flips[i:i + 1], 32, **one))
        assert torch.equal(together, torch.cat(apart))
        assert together.is_contiguous(memory_format=kwargs.get("memory_format", torch.contiguous_format))


def test_crop_resize_writes_into_the_rows_it_is_given():
    torch.manual_seed(2)
    images = [torch.randint(0, 256, (3, h, w), dtype=torch.uint8) for h, w in [(40, 50), (300, 400), (41, 50)]]
    boxes, flips = torch.tensor([[0, 0, 40, 50], [5, 7, 200, 300], [1, 2, 30, 40]]), torch.tensor([True, False, False])
    affine = normalization(data.MEAN, data.STD, CPU)
    whole = torch.full((5, 3, 16, 16), -7.0).contiguous(memory_format=torch.channels_last)
    got = crop_resize(images, boxes, flips, 16, affine=affine, out=whole[1:4])
    assert got.data_ptr() == whole[1:4].data_ptr()
    assert torch.equal(whole[1:4], crop_resize(images, boxes, flips, 16, affine=affine))
    assert (whole[0] == -7).all() and (whole[4] == -7).all()
    with pytest.raises(ValueError, match="out is"):
        crop_resize(images, boxes, flips, 16, out=whole[:2])

