"""torchvision's MaskRCNN and its GeneralizedRCNNTransform without their per-image host syncs in training:
the transform made its mean, deviation and box-scale tensors on the host and copied each to the device
(a blocking copy: a sync, six per image), and the model checked each image's boxes for degenerate ones
with a host read of its own (one per image). Same arithmetic, so the same images, targets and losses
(tests/reference_models/maskrcnn/test_batched_heads.py, test_losses.py).

    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 mode=throughput precision=amp
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor
from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.transform import GeneralizedRCNNTransform, _resize_image_and_masks


class SyncFreeTransform(GeneralizedRCNNTransform):
    """GeneralizedRCNNTransform with its constants made on the device once, and boxes scaled by host
    numbers (the float32 ratios torchvision divides on the device, divided on the host)."""

    @classmethod
    def like(cls, t: GeneralizedRCNNTransform) -> "SyncFreeTransform":
        return cls(t.min_size, t.max_size, t.image_mean, t.image_std, t.size_divisible, t.fixed_size,
                   _skip_resize=t._skip_resize)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._constants: dict[tuple, tuple[Tensor, Tensor]] = {}
        self.fixed_canvas = False

    def batch_images(self, images: list[Tensor], size_divisible: int = 32) -> Tensor:
        """With `fixed_canvas`: every batch padded to one of the few canvases resized images fit, each side
        to the largest short side (min_size) or long side (max_size), rounded up to size_divisible, as
        NVIDIA's MLPerf Mask R-CNN pads to fixed sizes: a landscape batch is always 800 x 1,344 at the
        reference's sizes. torchvision pads to each batch's largest image, and on a GPU every new padded
        shape costs cuDNN new convolution plans (about 36 shapes in COCO's grouped batches), which a long
        run meets again and again in its first epochs. Padding is zeros either way."""
        if not self.fixed_canvas:
            return super().batch_images(images, size_divisible)
        short, long = (-(-int(side) // size_divisible) * size_divisible for side in (max(self.min_size), self.max_size))
        tall = max(int(im.shape[-2]) for im in images)
        wide = max(int(im.shape[-1]) for im in images)
        shape = (len(images), images[0].shape[0], short if tall <= short else max(long, tall),
                 short if wide <= short else max(long, wide))
        batch = images[0].new_zeros(shape)
        for slot, image in zip(batch, images):
            slot[:, :image.shape[-2], :image.shape[-1]].copy_(image)
        return batch

    def normalize(self, image: Tensor) -> Tensor:
        if not image.is_floating_point():
            return super().normalize(image)  # its error
        key = (image.dtype, image.device)
        if key not in self._constants:
            self._constants[key] = (torch.as_tensor(self.image_mean, dtype=image.dtype, device=image.device),
                                    torch.as_tensor(self.image_std, dtype=image.dtype, device=image.device))
        mean, std = self._constants[key]
        return (image - mean[:, None, None]) / std[:, None, None]

    def resize(self, image: Tensor, target: Optional[dict[str, Tensor]] = None
               ) -> tuple[Tensor, Optional[dict[str, Tensor]]]:
        if target is None or "keypoints" in target or (self.training and self._skip_resize):
            return super().resize(image, target)
        h, w = image.shape[-2:]
        size = self.torch_choice(self.min_size) if self.training else self.min_size[-1]
        image, target = _resize_image_and_masks(image, size, self.max_size, target, self.fixed_size)
        assert target is not None
        new_h, new_w = image.shape[-2:]
        ratio_h = (torch.tensor(new_h, dtype=torch.float32) / torch.tensor(h, dtype=torch.float32)).item()
        ratio_w = (torch.tensor(new_w, dtype=torch.float32) / torch.tensor(w, dtype=torch.float32)).item()
        xmin, ymin, xmax, ymax = target["boxes"].unbind(1)
        target["boxes"] = torch.stack((xmin * ratio_w, ymin * ratio_h, xmax * ratio_w, ymax * ratio_h), dim=1)
        return image, target


class BatchedMaskRCNN(MaskRCNN):
    """MaskRCNN whose training forward checks all images' boxes with one host read (evaluation: its own)."""

    def forward(self, images: list[Tensor], targets: Optional[list[dict[str, Tensor]]] = None) -> Any:
        if not self.training:
            return super().forward(images, targets)
        if targets is None:
            raise ValueError("targets should not be none when in training mode")
        for target in targets:
            boxes = target["boxes"]
            if not isinstance(boxes, Tensor) or boxes.dim() != 2 or boxes.shape[-1] != 4:
                raise ValueError(f"Expected target boxes to be a tensor of shape [N, 4], got {getattr(boxes, 'shape', type(boxes))}.")
        image_list, targets = self.transform(images, targets)
        assert targets is not None
        degenerate = [(t["boxes"][:, 2:] <= t["boxes"][:, :2]).any(dim=1) for t in targets]
        if bool(torch.cat(degenerate).any()):  # sync point: one read for all images' boxes
            index = next(i for i, d in enumerate(degenerate) if bool(d.any()))
            box = targets[index]["boxes"][degenerate[index]][0].tolist()
            raise AssertionError("All bounding boxes should have positive height and width."
                                 f" Found invalid box {box} for target at index {index}.")
        features = self.backbone(image_list.tensors)
        if isinstance(features, Tensor):
            features = {"0": features}
        proposals, proposal_losses = self.rpn(image_list, features, targets)
        _, detector_losses = self.roi_heads(features, proposals, image_list.image_sizes, targets)
        return {**detector_losses, **proposal_losses}  # torchvision's order: the sum adds them in it
