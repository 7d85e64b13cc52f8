"""Mask R-CNN's packed training batches (a GPU run with the workers decoding) reach the model as the
images and targets the lists of the CPU path hold, tensor by tensor, to the bit."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from harness.run.feed import tensors, to_device
from reference_models.detection import coco
from reference_models.detection.generate import GeneratorSpec, write
from reference_models.maskrcnn.benchmark import TrainTransform, as_lists
from reference_models.maskrcnn.data import PackedBatch, collate_packed
from tests.reference_models.detection.pairs import seeded_pairs

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("coco") / "coco"
    write(root, GeneratorSpec(train_images=6, val_images=2, min_side=60, max_side=110, min_objects=1, max_objects=4))
    return root


def _split(folder: Path, p: float, packed: bool) -> coco.CocoSplit:
    return coco.CocoSplit(folder, "train", TrainTransform(p, device_finish=packed), keep_empty=False, with_polygons=True)


def _assert_same(moved, lists) -> None:
    images, targets = moved
    their_images, their_targets = lists
    assert len(images) == len(their_images) and len(targets) == len(their_targets)
    for ours, theirs in zip(images, their_images):
        assert ours.dtype == theirs.dtype == torch.float32 and torch.equal(ours, theirs)
    for ours, theirs in zip(targets, their_targets):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            assert ours[key].dtype == theirs[key].dtype and torch.equal(ours[key], theirs[key]), key


def _pairs(folder) -> tuple[list, list]:
    """Each image as the lists path and as the packed path make it, each drawn with the same flip."""
    return seeded_pairs(_split(folder, 0.5, False), _split(folder, 0.5, True))


def test_a_packed_batch_moved_is_the_lists_the_cpu_path_makes(folder):
    """Images of different sizes, flipped or not by the same draws, 1-4 objects each: through the
    harness's to_device (the feed's copy) the packed batch becomes the very images and targets."""
    theirs, ours = _pairs(folder)
    assert ours[0][0].dtype == torch.uint8
    assert len({im.shape for im, _ in theirs}) > 1 and len({len(t["labels"]) for _, t in theirs}) > 1
    batch = collate_packed(ours)
    assert isinstance(batch, PackedBatch) and batch.samples == len(ours)
    moved = to_device(batch, CPU, non_blocking=True)
    _assert_same(moved, as_lists(theirs))
    assert len(list(tensors(moved))) == 4 * len(ours)  # each of them recorded on the step's stream by the feed
    images, targets = moved  # views as aligned as tensors of their own: 64 elements
    assert all(im.storage_offset() % 64 == 0 and t["masks"].storage_offset() % 64 == 0 for im, t in zip(images, targets))


def test_a_worker_collates_into_shared_memory_the_same_batch(folder):
    """A loader worker writes the four tensors straight into shared memory (default_collate's way);
    the batch the training process receives is the same as one collated in place."""
    packed = _split(folder, 1.0, True)  # every image flipped: no draw differs between the processes
    order = list(range(len(packed)))
    loader = DataLoader(packed, batch_size=3, sampler=order, num_workers=1, collate_fn=collate_packed)
    received = list(loader)
    floats = _split(folder, 1.0, False)
    for k, batch in enumerate(received):
        assert batch.pixels.is_shared() and batch.masks.is_shared()
        _assert_same(batch.to(CPU), as_lists([floats[i] for i in order[3 * k: 3 * k + 3]]))


def test_an_image_without_objects_and_an_empty_batch_part_are_cut_apart():
    image = torch.randint(0, 256, (3, 5, 7), dtype=torch.uint8)
    empty = {"boxes": torch.zeros(0, 4), "labels": torch.zeros(0, dtype=torch.int64),
             "masks": torch.zeros(0, 5, 7, dtype=torch.uint8)}
    one = {"boxes": torch.tensor([[1.0, 1.0, 4.0, 3.0]]), "labels": torch.tensor([2]),
           "masks": torch.ones(1, 4, 6, dtype=torch.uint8)}
    images, targets = collate_packed([(image, empty), (image[:, :4, :6], one)]).to(CPU)
    assert torch.equal(images[0], image.float().div_(255)) and images[1].shape == (3, 4, 6)
    assert targets[0]["masks"].shape == (0, 5, 7) and targets[0]["boxes"].shape == (0, 4)
    assert torch.equal(targets[1]["masks"], one["masks"]) and targets[1]["labels"].tolist() == [2]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_feed_moves_a_pinned_packed_batch_to_the_lists(folder):
    """The pinned batch copied on the feed's side stream: the CPU path's images and targets to the bit
    (the images by the table, not CUDA's reciprocal product)."""
    from harness.run.feed import Feed

    theirs, ours = _pairs(folder)
    device = torch.device("cuda", torch.cuda.current_device())
    (moved, _), = list(Feed(device).batches([collate_packed(ours).pin_memory()]))
    torch.cuda.synchronize()
    images, targets = moved
    _assert_same(([im.cpu() for im in images], [{k: v.cpu() for k, v in t.items()} for t in targets]), as_lists(theirs))
