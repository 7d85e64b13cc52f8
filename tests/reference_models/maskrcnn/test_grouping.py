"""Mask R-CNN's training batches grouped by aspect ratio (model.aspect_grouping, the reference's
DATALOADER.ASPECT_RATIO_GROUPING): what the model is fed holds images of one orientation per batch,
every training image once an epoch, disjoint shares on two ranks, and steps_per_epoch the batches an
epoch yields; the groups come from the annotations, and an image without a size is a one-line error."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from harness import registry
from harness.config import compose
from harness.interface import DataError, RunContext
from reference_models.detection import coco

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    task = registry.get("maskrcnn").task
    assert task is not None
    task.prepare(_cfg(root, []))  # the debug preset's generated COCO folder (mixed orientations)
    return root


def _cfg(root: Path, extra: list[str]):
    # grouping on: the real scale's default (the embedded and debug presets train on mixed batches, as calibrated)
    cfg = compose(["model=maskrcnn", "+debug=maskrcnn", f"data_root={root}", "seed=1", "model.workers=0",
                   "model.aspect_grouping=true", *extra])
    OmegaConf.resolve(cfg)
    return cfg


def _bench(root: Path, rank: int = 0, world: int = 1, extra: tuple[str, ...] = ()):
    torch.set_num_threads(1)
    cfg = _cfg(root, list(extra))
    ctx = RunContext(cfg=cfg, data_dir=Path(cfg.dataset.path), device=CPU, rank=rank, world_size=world, seed=rank,
                     shared_seed=4)
    return registry.get("maskrcnn").build(ctx)


def _orientation(h: int, w: int) -> str:
    return "portrait or square" if h >= w else "landscape"


def _epoch(bench, epoch: int) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
    """(each batch's training indices as the sampler deals them, each batch's image sizes as the model gets them)"""
    bench.loader.sampler.set_epoch(epoch)
    indices = list(bench.loader.sampler)
    seen = [[(int(im.shape[1]), int(im.shape[2])) for im in images] for images, _ in bench.train_batches(epoch)]
    return indices, seen


def test_one_rank_trains_every_image_once_in_batches_of_one_orientation(data_root):
    bench = _bench(data_root)
    sizes = bench.train.image_sizes()
    assert {_orientation(*s) for s in sizes} == {"landscape", "portrait or square"}  # the data mixes both
    for epoch in (1, 2):
        indices, seen = _epoch(bench, epoch)
        assert len(seen) == len(indices) == bench.steps_per_epoch()
        assert seen == [[sizes[i] for i in batch] for batch in indices]  # the images the sampler named, as sized
        assert all(len({_orientation(h, w) for h, w in batch}) == 1 for batch in seen)
        assert sorted(i for batch in indices for i in batch) == list(range(len(sizes)))  # short batches kept
        assert sum(len(b) < 4 for b in indices) <= 2  # at most one short batch per group
        assert bench.train_samples() == len(sizes)


def test_two_ranks_take_disjoint_shares_that_cover_the_epoch(data_root):
    benches = [_bench(data_root, rank, 2) for rank in range(2)]
    sizes = benches[0].train.image_sizes()
    shares = [_epoch(b, 3) for b in benches]
    assert benches[0].steps_per_epoch() == benches[1].steps_per_epoch() == len(shares[0][1]) == len(shares[1][1])
    full, padded = [], []
    (i0s, s0s), (i1s, s1s) = shares
    for i0, s0, i1, s1 in zip(i0s, s0s, i1s, s1s):
        assert s0 == [sizes[i] for i in i0] and s1 == [sizes[i] for i in i1]
        orientations = {_orientation(h, w) for h, w in s0 + s1}
        assert len(orientations) == 1  # both ranks train on the same group at each step
        (full if len(i0) == len(i1) == 4 else padded).append(i0 + i1)
    flat = [i for b in full for i in b]
    assert len(flat) == len(set(flat))
    assert set(flat) | {i for b in padded for i in b} == set(range(len(sizes)))
    assert len(padded) <= 2  # a group's short last global batch, at most one per group


def test_the_same_seed_gives_the_same_batches(data_root):
    a, b = _bench(data_root), _bench(data_root)
    assert _epoch(a, 2)[0] == _epoch(b, 2)[0]
    assert _epoch(a, 2)[0] != _epoch(a, 3)[0]


def test_without_grouping_batches_mix_orientations_and_drop_the_short_last_one(data_root):
    bench = _bench(data_root, extra=("model.aspect_grouping=false",))
    seen = [[(int(im.shape[1]), int(im.shape[2])) for im in images] for images, _ in bench.train_batches(1)]
    assert len(seen) == bench.steps_per_epoch() == len(bench.train) // 4
    assert any(len({_orientation(h, w) for h, w in batch}) == 2 for batch in seen)


def test_evaluation_batches_are_grouped_as_the_training_batches_whatever_the_world(data_root):
    bench = _bench(data_root, extra=("model.eval_batch_size=3",))
    sizes = bench.val.image_sizes()
    one = bench._eval_batches()
    assert all(len({_orientation(*sizes[i]) for i in b}) == 1 for b in one)
    assert len({_orientation(*s) for s in sizes}) == 2  # the split mixes both
    assert sorted(i for b in one for i in b) == list(range(len(sizes)))
    two = [_bench(data_root, r, 2, extra=("model.eval_batch_size=3",))._eval_batches() for r in range(2)]
    assert two[0] + two[1] == one and two[0] and two[1]  # every image padded with the same neighbours
    plain = _bench(data_root, extra=("model.eval_batch_size=3", "model.aspect_grouping=false"))._eval_batches()
    assert plain == [list(range(a, min(a + 3, len(sizes)))) for a in range(0, len(sizes), 3)] != one


def test_an_image_without_a_size_is_a_one_line_error(data_root, tmp_path):
    source = Path(_cfg(data_root, []).dataset.path)
    broken = tmp_path / "coco"
    for part in ("train2017", "val2017"):
        (broken / part).mkdir(parents=True)
        for f in (source / part).iterdir():
            (broken / part / f.name).symlink_to(f)
    (broken / "annotations").mkdir()
    (broken / "annotations" / "instances_val2017.json").symlink_to(source / "annotations" / "instances_val2017.json")
    ann = json.loads((source / "annotations" / "instances_train2017.json").read_text())
    del ann["images"][3]["width"]
    (broken / "annotations" / "instances_train2017.json").write_text(json.dumps(ann))
    image_id = ann["images"][3]["id"]
    with pytest.raises(DataError) as err:  # read when the split is read, before any batch is formed
        coco.CocoSplit(broken, "train", keep_empty=False, with_polygons=True)
    assert len(str(err.value).splitlines()) == 1 and f"image {image_id}" in str(err.value)
    # a split read for check_data keeps its problems in a list; grouping it still names the image
    problems: list[str] = []
    split = coco.CocoSplit(broken, "train", keep_empty=False, with_polygons=True, problems=problems)
    assert problems and f"image {image_id}" in problems[0] and image_id in split.ids
    with pytest.raises(DataError, match=f"image {image_id} needs a positive integer height and width") as err:
        split.image_sizes()
    assert len(str(err.value).splitlines()) == 1
