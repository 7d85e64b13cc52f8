"""model.fixed_mask_rois: the mask branch of training on the same number of ROIs for every image (the
batch's most positives in an image, rounded up to a power of two from 8 to the box sampler's most), the
padding left out of the loss. A training step gives the loss terms and the gradients of every parameter
that the default path gives, whatever the positives: an image without any, images whose positives the
sampler caps, images with fewer sampled ROIs than slots, a batch without a positive; the mask head sees
exactly slots x images ROIs; compiled, the branch is one graph a slot count, shared by batches of other
positives (reference_models/maskrcnn/mask_rois.py)."""
from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from harness.config import compose
from harness.errors import ConfigError
from harness.fastpath import resolve
from reference_models.maskrcnn import mask_rois
from reference_models.maskrcnn.model import build_model

CLASSES = 3


def _options(fixed: bool, *overrides: str):
    cfg = compose(["model=maskrcnn", "+debug=maskrcnn", "seed=1", "device=cpu", *overrides])
    return OmegaConf.to_object(OmegaConf.merge(cfg.model, {"fixed_mask_rois": fixed}))


def _batch(seed: int, objects: tuple[int, ...]):
    """One image per entry of `objects`, with that many boxes and rectangular masks (0: a background image)."""
    gen = torch.Generator().manual_seed(seed)
    images, targets = [], []
    for i, n in enumerate(objects):
        h, w = (112, 144) if i % 2 else (128, 128)
        xy = torch.rand(n, 2, generator=gen) * torch.tensor([w * 0.5, h * 0.5])
        boxes = torch.cat([xy, xy + 12 + torch.rand(n, 2, generator=gen) * torch.tensor([w * 0.4, h * 0.4])], dim=1)
        masks = torch.zeros(n, h, w, dtype=torch.uint8)
        for m, (x1, y1, x2, y2) in zip(masks, boxes.int().tolist()):
            m[y1:y2, x1:x2] = 1
        images.append(torch.rand(3, h, w, generator=gen))
        targets.append({"boxes": boxes, "masks": masks, "labels": torch.randint(1, CLASSES, (n,), generator=gen)})
    return images, targets


def _step(fixed: bool, overrides: tuple[str, ...], batch):
    """One training step from the same weights and random draws: (loss terms, gradients by name, ROIs the
    mask head saw, boxes the mask pooling saw, the sampler's positives per image)."""
    torch.manual_seed(0)
    model = build_model(_options(fixed, *overrides), CLASSES).train()
    seen: dict[str, list] = {"rois": [], "boxes": []}
    model.roi_heads.mask_head.register_forward_hook(lambda m, args, out: seen["rois"].append(args[0].shape[0]))
    model.roi_heads.mask_roi_pool.register_forward_hook(lambda m, args, out: seen["boxes"].append(args[1]))
    torch.manual_seed(1)  # the samplers draw from here
    losses = model(*batch)
    sum(losses.values()).backward()
    grads = {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()}
    return losses, grads, seen, list(model.roi_heads._num_positive)


def _assert_same_step(got, want):
    (losses, grads, *_), (want_losses, want_grads, *_) = got, want
    assert list(losses) == list(want_losses)
    for k in want_losses:
        torch.testing.assert_close(losses[k], want_losses[k], rtol=1e-5, atol=1e-7)
    assert grads.keys() == want_grads.keys()
    for name, g in want_grads.items():
        assert (grads[name] is None) == (g is None), name
        if g is not None:
            torch.testing.assert_close(grads[name], g, rtol=1e-4, atol=1e-6, msg=name)


# (overrides, objects per image, slots per image)
CASES = {
    # the sampler's most, 8 x 0.25 = 2 slots: every image with ground truth has more positives (its boxes are
    # proposals too), so the sampler caps them at 2 and the slots stop there, below MIN_SLOTS
    "capped": (("model.box_batch_per_image=8",), (3, 0, 4), 2),
    # 2 proposals after NMS, 2 positives at most: 8 slots, more than the image's sampled ROIs, the rest unit boxes
    "short": (("model.box_batch_per_image=64", "model.rpn_post_nms_train=2"), (2, 0, 1), 8),
    "no positive": ((), (0, 0), 8),
    # 16 positives in the third image: 16 slots for each
    "rounded up": ((), (12, 9, 20), 16),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_training_step_equals_the_default_s_and_the_mask_head_sees_slots_x_images(case):
    overrides, objects, slots = CASES[case]
    batch = _batch(5 if case == "rounded up" else 3, objects)
    want = _step(False, overrides, batch)
    got = _step(True, overrides, batch)
    _assert_same_step(got, want)
    positives = got[3]
    assert positives == want[3]
    if case != "rounded up":
        assert positives[1] == 0  # an image without positives: all of its slots padding
    else:
        assert positives == [13, 9, 16]  # the most, 16, a power of two already
    assert got[2]["rois"] == [slots * len(objects)]  # exactly, whatever the positives
    assert want[2]["rois"] in ([sum(positives)], [])  # the default: the positives (torchvision's: none, no head)
    boxes = got[2]["boxes"][0]
    assert [len(b) for b in boxes] == [slots] * len(objects)
    unit = torch.tensor([0.0, 0, 1, 1])
    if case == "capped":
        assert max(positives) == slots and not any((b == unit).all(1).any() for b in boxes)
    if case == "short":  # each image's sampled ROIs, then unit boxes
        assert all((b[-1] == unit).all() for b in boxes)
    if case == "no positive":
        assert got[0]["loss_mask"].item() == 0.0
        assert all(g is None or not g.any() for n, g in got[1].items() if n.startswith("roi_heads.mask_"))


# Dynamo reads .grad of its inputs while it traces; the branch's input (the pooled features) is no leaf, and
# torch hides the warning that read raises by a display filter, which the suite's "error" filter runs before
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
def test_the_compiled_branch_is_one_graph_a_slot_count_for_batches_of_any_positives():
    """fullgraph: a graph break in the head or the predictor fails here, not on a GPU; a static graph for
    every slot count the sampler allows (8 and 16 at the debug preset's 64 ROIs an image) is compiled before
    the first step, on zeros, so the batches' other positives and the third's 16 slots compile nothing
    mid-run; each step is the eager one's (the compilation left no gradient behind)."""
    graphs = []

    def counting(gm: torch.fx.GraphModule, example_inputs):
        graphs.append((gm, list(example_inputs)))
        return gm.forward

    torch._dynamo.reset()
    overrides: tuple[str, ...] = ()
    torch.manual_seed(0)
    model = build_model(_options(True, *overrides), CLASSES).train()
    model.roi_heads.compile_mask_branch(backend=counting, fullgraph=True)
    model.roi_heads.compile_every_slot_count(images=3, requires_grad=True)  # as the benchmark's first loss call
    assert len(graphs) == len(mask_rois.slot_counts(16)) == 2
    assert all(p.grad is None for p in model.parameters())  # the zeros' backward reached no parameter
    positives, compiled = [], []
    for seed, batch_objects in ((3, (3, 0, 4)), (4, (1, 5, 0)), (5, (12, 9, 20))):
        batch = _batch(seed, batch_objects)
        model.zero_grad(set_to_none=True)
        torch.manual_seed(1)
        losses = model(*batch)
        sum(losses.values()).backward()
        grads = {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()}
        _assert_same_step((losses, grads), _step(True, overrides, batch))
        positives.append(list(model.roi_heads._num_positive))
        compiled.append(len(graphs))
    assert positives[0] != positives[1] and max(positives[0]) <= 8 and max(positives[2]) == 16
    assert compiled == [2, 2, 2]  # the steps' pooled features meet the graphs' guards: no compilation mid-run
    symbolic = [x for _, inputs in graphs for x in inputs if isinstance(x, torch.SymInt)]
    assert not symbolic  # dynamic=False: the second slot count is a static graph of its own, not symbolic sizes
    torch._dynamo.reset()


def test_on_in_the_cuda_fast_path_of_both_modes_alone_and_only_with_the_batched_heads():
    assert OmegaConf.to_object(compose(["model=maskrcnn", "+debug=maskrcnn", "device=cpu"]).model).fixed_mask_rois is False
    assert compose(["model=maskrcnn", "seed=1", "device=cpu"]).model.fixed_mask_rois is False
    for extra, mode, want in (([], "throughput", True), ([], "train", True), (["eager=true"], "throughput", False),
                              (["eager=true"], "train", False), (["model.heads=torchvision"], "train", False),
                              (["model.heads=torchvision"], "throughput", False)):
        cfg = compose(["model=maskrcnn", f"mode={mode}", *extra])
        resolve(cfg, cuda=True, given=extra)
        assert cfg.model.fixed_mask_rois is want, (extra, mode)
    # the fast path leaves out what the command line's heads refuse, and keeps the rest of it
    assert cfg.model.heads == "torchvision" and cfg.model.compile is True
    heads = build_model(_options(False), CLASSES).roi_heads
    with pytest.raises(ValueError, match="needs fixed_mask_rois"):
        heads.compile_mask_branch(backend="eager")
    with pytest.raises(ConfigError, match="fixed_mask_rois.*heads=batched"):
        compose(["model=maskrcnn", "+debug=maskrcnn", "device=cpu", "model.heads=torchvision",
                 "model.fixed_mask_rois=true"])


def test_every_slot_count_is_one_the_sampler_can_give():
    assert mask_rois.slot_counts(128) == [8, 16, 32, 64, 128]  # the reference's 512 ROIs x 0.25
    assert mask_rois.slot_counts(100) == [8, 16, 32, 64, 100]  # capped, not rounded past the sampler's most
    assert mask_rois.slot_counts(2) == [2]  # below MIN_SLOTS: the sampler's most alone
