"""model.fixed_canvas: every batch padded to one of a few canvases (each side the largest short or long side
a resized image can have), so a GPU meets a few convolution shapes instead of one per batch; the images'
pixels, and so what the model sees of them, are those of torchvision's padding."""
from __future__ import annotations

import torch
from omegaconf import OmegaConf

from harness.config import compose
from reference_models.maskrcnn.model import build_model


def _transform(fixed: bool, **sizes):
    cfg = compose(["model=maskrcnn", "seed=1", "device=cpu", "model.heads=batched",
                   *(f"model.{k}={v}" for k, v in sizes.items())])
    model = build_model(OmegaConf.to_object(OmegaConf.merge(cfg.model, {"fixed_canvas": fixed})), 3)
    return model.transform


def test_batches_of_any_size_land_on_the_canvas_of_their_orientation():
    transform = _transform(True, min_size=800, max_size=1333)
    landscape = [torch.rand(3, 800, 1067), torch.rand(3, 800, 1200)]
    portrait = [torch.rand(3, 1067, 800), torch.rand(3, 1333, 750)]
    assert transform.batch_images(landscape).shape == (2, 3, 800, 1344)
    assert transform.batch_images(landscape[:1]).shape == (1, 3, 800, 1344)  # torchvision: 800 x 1,088
    assert transform.batch_images(portrait).shape == (2, 3, 1344, 800)
    assert transform.batch_images([landscape[0], portrait[0]]).shape == (2, 3, 1344, 1344)
    default = _transform(False, min_size=800, max_size=1333)
    for got, want in zip(transform.batch_images(landscape), default.batch_images(landscape)):
        assert torch.equal(got[:, :800, :1216], want) and not got[:, :, 1216:].any()  # torchvision: 1,216 wide


def test_batches_are_padded_to_their_largest_image_unless_asked():
    """The default pads as torchvision does (the golden losses'; measured faster on an H200 once each shape
    is met); model.fixed_canvas=true asks for the canvas."""
    cfg = compose(["model=maskrcnn", "+debug=maskrcnn", "seed=1", "device=cpu"])
    hp = OmegaConf.to_object(cfg.model)
    assert hp.fixed_canvas is False and not build_model(hp, 3).transform.fixed_canvas


def test_the_model_trains_on_the_fixed_canvas():
    cfg = compose(["model=maskrcnn", "+debug=maskrcnn", "seed=1", "device=cpu", "model.heads=batched"])
    model = build_model(OmegaConf.to_object(OmegaConf.merge(cfg.model, {"fixed_canvas": True})), 3)
    size = model.transform.min_size[-1]
    images = [torch.rand(3, size, size + 9), torch.rand(3, size - 5, size)]
    targets = [{"boxes": torch.tensor([[2.0, 3, 20, 30]]), "labels": torch.tensor([1]),
                "masks": torch.ones(1, *im.shape[1:], dtype=torch.uint8)} for im in images]
    losses = model(images, targets)
    total = sum(losses.values())
    total.backward()
    assert torch.isfinite(total) and set(losses) >= {"loss_classifier", "loss_mask", "loss_objectness"}
