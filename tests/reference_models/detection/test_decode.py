"""What SSD's and Mask R-CNN's GPU decode paths share (reference_models/detection/decode.py, color.py)
run on the CPU against the CPU path (ssd/transforms.py's TrainTransform) with the same random draws
(each model's batches: tests/reference_models/ssd/test_decode.py, maskrcnn/test_decode.py).

The stated tolerance, in uint8 levels of the picture before ToTensor:
- ColorJitter's Pillow arithmetic (color.py) equals PIL's output exactly;
- SSD's whole path (decode, crop and resize, flip, jitter, normalisation) without ColorJitter: every
  pixel within 1 level of the CPU path's (the resampling rounds once where PIL rounds after each of
  its two passes); with it, the mean difference under 0.3 levels and 99.9% of values within 5: the
  jitter carries a 1-level difference on and can amplify it (contrast 1.5x; a hue moved by one step
  of Pillow's uint8 HSV shifts a saturated colour by several levels);
- the encoded boxes and Mask R-CNN's targets are identical, Mask R-CNN's pixels too (no resampling). The hardware decoder's
agreement is measured on the GPU (scripts/tools/pipeline_decoders.py, docs/benchmarks/pipeline_2026-12-01.md).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision import transforms as T
from torchvision.transforms import functional as F

from harness.interface import DataError
from reference_models.detection import coco, decode
from reference_models.detection.color import ColorJitter
from reference_models.maskrcnn.decode import MaskRCNNPlan
from reference_models.ssd.boxes import Encoder, default_boxes
from reference_models.ssd.transforms import TrainTransform as SSDTransform
from tests.reference_models.detection.pairs import JITTER, seeded_pairs, small_coco

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return small_coco(tmp_path_factory)


def _pixels(image: Image.Image) -> torch.Tensor:
    return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1).float()


def test_the_jitter_is_pils_to_the_level(folder):
    """Each operation and whole ColorJitter passes, in each image's own order, against torchvision on PIL."""
    ops = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
    torch.manual_seed(0)
    images = [Image.open(p).convert("RGB").resize((64, 48)) for p in sorted((folder / "train2017").iterdir())[:6]]
    orders = torch.stack([torch.randperm(4) for _ in images])
    factors = torch.tensor([[float(torch.empty(1).uniform_(1 - j, 1 + j)) for j in JITTER[:3]]
                            + [float(torch.empty(1).uniform_(-JITTER[3], JITTER[3]))] for _ in images], dtype=torch.float64)
    factors[0] = torch.tensor([1.2, 0.5, 1.5, -0.05], dtype=torch.float64)  # the ranges' ends
    theirs = []
    for image, order, f in zip(images, orders, factors):
        for op in order.tolist():
            image = ops[op](image, float(f[op]))
        theirs.append(_pixels(image))
    ours = ColorJitter(CPU, [True] * 4)(torch.stack([_pixels(im) for im in images]), orders, factors)
    assert torch.equal(ours, torch.stack(theirs))
    hue_off = ColorJitter(CPU, [True, True, True, False])  # a jitter of 0 is skipped, not an identity round trip
    assert torch.equal(hue_off(ours[:1], torch.tensor([[3, 0, 1, 2]]), torch.ones(1, 4, dtype=torch.float64)), ours[:1])


def _ssd_encoder() -> Encoder:
    return Encoder(default_boxes(300, [38, 19, 10, 5, 3, 1]))


def test_a_file_that_is_not_the_annotated_jpeg_is_a_one_line_error(folder, tmp_path):
    import shutil

    bad = tmp_path / "coco"
    shutil.copytree(folder, bad)
    split = coco.CocoSplit(bad, "train", keep_empty=False)
    first = split.image_path(split.coco.imgs[split.ids[0]])
    Image.new("RGB", (20, 20)).save(first, format="JPEG")
    encoded = decode.EncodedCoco(split, MaskRCNNPlan(0.5), "nvimgcodec")
    with pytest.raises(DataError, match="is 20x20, its annotation says"):
        encoded[0]
    Image.new("RGB", (20, 20)).save(first, format="PNG")
    with pytest.raises(DataError, match="is PNG, not JPEG: model.decode=nvimgcodec reads JPEG only"):
        encoded[0]


def test_the_device_finish_is_torchvisions_totensor_and_normalize_for_every_value():
    """Every uint8 value in every channel, in any batch layout, comes out of DeviceFinish as the
    CPU transform's ToTensor and Normalize make it, to the bit; the multiplication by 1/255 that a
    CUDA division by a Python number performs would not (the reason for the table)."""
    from reference_models.ssd.transforms import MEAN, STD, DeviceFinish

    every = torch.arange(256, dtype=torch.uint8).repeat(3, 4, 1).permute(1, 0, 2)  # (4, 3, 256) images of 1 row
    pixels = every[:, :, None, :].flip(0).contiguous()  # (4, 3, 1, 256)
    cpu = T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])
    expected = torch.stack([cpu(im.permute(1, 2, 0).numpy()) for im in pixels])
    assert torch.equal(DeviceFinish(CPU)(pixels), expected)
    assert torch.equal(DeviceFinish(CPU)(pixels.contiguous(memory_format=torch.channels_last)), expected)
    reciprocal = T.Normalize(MEAN, STD)(pixels.float() * (torch.tensor(1.0) / 255))
    assert not torch.equal(reciprocal, expected)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_device_finish_is_the_cpus_to_the_bit():
    """DeviceFinish on CUDA: torchvision's CPU values to the bit (passed on an H200, torch 2.11)."""
    from reference_models.ssd.transforms import DeviceFinish

    cuda = torch.device("cuda", torch.cuda.current_device())
    pixels = torch.randint(0, 256, (4, 3, 30, 40), dtype=torch.uint8)
    assert torch.equal(DeviceFinish(cuda)(pixels.to(cuda)).cpu(), DeviceFinish(CPU)(pixels))
    assert torch.equal(DeviceFinish(cuda)(pixels.to(cuda).contiguous(memory_format=torch.channels_last)).cpu(),
                       DeviceFinish(CPU)(pixels))


def test_auto_keeps_the_cpu_transform_and_a_gpu_backend_needs_cuda():
    """auto is the CPU path for the detection models, on a GPU too (their GPU path measured slower on an H200)."""
    assert decode.choose("auto", CPU) == "cpu" and decode.choose("auto", torch.device("cuda", 0)) == "cpu"
    assert decode.choose("nvimgcodec", torch.device("cuda", 0)) == "nvimgcodec"
    with pytest.raises(ValueError, match="model.decode=nvimgcodec needs a CUDA device"):
        decode.choose("nvimgcodec", CPU)


def test_ssd_ground_truth_encoded_a_batch_at_once_is_the_workers_encoding(folder):
    """A GPU run with the workers decoding: TrainTransform hands over uint8 pixels and the ground
    truth, collate_truth pads it, the device normalises the images and encodes the batch: the
    images and targets the per-image transform gives, to the bit."""
    from reference_models.ssd.transforms import DeviceFinish, collate_truth

    encoder = _ssd_encoder()
    encoded = coco.CocoSplit(folder, "train", SSDTransform(encoder, 300, 1, JITTER), keep_empty=False,
                             include_crowd=True)
    raw = coco.CocoSplit(folder, "train", SSDTransform(None, 300, 1, JITTER, device_finish=True), keep_empty=False,
                         include_crowd=True)
    theirs, items = seeded_pairs(encoded, raw)
    pixels, boxes, labels = collate_truth(items)
    assert pixels.dtype == torch.uint8 and pixels.shape == (len(items), 3, 300, 300)
    assert boxes.shape[1] == max(len(lb) for _, _, lb in items) and (labels >= 0).sum() == sum(len(x[2]) for x in items)
    gloc, glabel = encoder.encode_batch(boxes, labels)
    assert torch.equal(DeviceFinish(CPU)(pixels), torch.stack([t[0] for t in theirs]))
    assert torch.equal(gloc, torch.stack([t[1] for t in theirs])) and torch.equal(glabel, torch.stack([t[2] for t in theirs]))
