"""SSD's GPU decode path (reference_models/ssd/decode.py) run on the CPU against the CPU path
(ssd/transforms.py's TrainTransform) with the same random draws.

The stated tolerance, in uint8 levels of the picture before ToTensor: without ColorJitter every
pixel within 1 level of the CPU path's (the resampling rounds once where PIL rounds after each of
its two passes); with it, the mean difference under 0.3 levels and 99.9% of values within 5 (the
jitter carries a 1-level difference on: tests/reference_models/detection/test_decode.py); the
encoded boxes identical.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reference_models.detection import coco
from reference_models.detection.decode import EncodedCoco, without_transform
from reference_models.ssd import decode
from reference_models.ssd.boxes import Encoder, default_boxes
from reference_models.ssd.transforms import TrainTransform as SSDTransform
from reference_models.vision.decoders import make_decoder
from tests.reference_models.detection.pairs import JITTER, seeded_pairs, small_coco

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return small_coco(tmp_path_factory)


def _ssd_encoder() -> Encoder:
    return Encoder(default_boxes(300, [38, 19, 10, 5, 3, 1]))


@pytest.mark.parametrize("name, jitter", [("pil", JITTER), ("cuda", JITTER), ("pil", (0, 0, 0, 0))])
def test_ssd_batches_are_the_cpu_transforms(folder, name, jitter):
    encoder = _ssd_encoder()
    cpu = coco.CocoSplit(folder, "train", SSDTransform(encoder, 300, 1, jitter), keep_empty=False, include_crowd=True)
    plan = decode.SSDPlan(1, jitter)
    encoded = EncodedCoco(without_transform(cpu), plan, name)
    theirs, items = seeded_pairs(cpu, encoded)
    batches = decode.SSDBatches(make_decoder(name, CPU), encoder, 300, CPU, plan.enabled, torch.channels_last)
    out = list(batches([decode.collate_ssd(items[:5]), decode.collate_ssd(items[5:])]))
    images = torch.cat([b[0] for b in out])
    assert images.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(torch.cat([b[1] for b in out]), torch.stack([t[1] for t in theirs]))
    assert torch.equal(torch.cat([b[2] for b in out]), torch.stack([t[2] for t in theirs]))
    std = torch.tensor(decode.SSDBatches.STD).view(1, 3, 1, 1)
    levels = ((images - torch.stack([t[0] for t in theirs])) * std * 255).abs().flatten()
    assert plan.enabled == ((True,) * 4 if any(jitter) else (False,) * 4)
    if any(jitter):
        assert levels.mean() < 0.3 and levels.kthvalue(int(0.999 * len(levels))).values <= 5 + 1e-3
    else:
        assert levels.max() <= 1 + 1e-3 and levels.mean() < 0.25
