"""SSD300 with the ResNet-34 backbone of MLPerf's single_stage_detector reference (v0.7).

- Backbone: ResNet-34's stem, conv2_x and conv3_x, and conv4_x with its first block unstrided (so a
  300x300 input gives 38x38x256), nothing after conv4_x; batch norm as torchvision's ResNet has it.
- Additional layers: 1x1 then 3x3 convolutions with ReLU and no batch norm, 38 -> 19 -> 10 -> 5
  (stride 2, padding 1) -> 3 -> 1 (no padding); out channels 256, 512, 512, 256, 256, 256.
- Heads: a 3x3 convolution per feature map for the 4 box offsets and one for the class scores of each
  of its default boxes (4, 6, 6, 6, 4, 4 per location: 8,732 boxes), Xavier-initialised as the reference.

Outputs are laid out location-major, (batch, boxes, 4) and (batch, boxes, classes), the order of
torchvision's DefaultBoxGenerator (boxes.py); the reference orders boxes aspect-major, a permutation
of the same boxes with the same meaning.

    python -c "from reference_models.ssd.model import SSD300; m = SSD300(81); print(sum(p.numel() for p in m.parameters()))"
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from reference_models.detection.resnet import ResNetBody

REFERENCE_EXTRAS = ((256, 512, 2, 1), (256, 512, 2, 1), (128, 256, 2, 1), (128, 256, 1, 0), (128, 256, 1, 0))


class SSD300(nn.Module):
    def __init__(self, num_classes: int, boxes_per_location: Sequence[int] = (4, 6, 6, 6, 4, 4),
                 layers: Sequence[int] = (3, 4, 6), widths: Sequence[int] = (64, 128, 256), stem: int = 64,
                 extras: Sequence[Sequence[int]] = REFERENCE_EXTRAS):
        super().__init__()
        if len(boxes_per_location) != len(extras) + 1:
            raise ValueError(f"{len(extras)} additional layers give {len(extras) + 1} feature maps, but "
                             f"{len(boxes_per_location)} are given default boxes")
        self.num_classes = num_classes
        # conv4_1 unstrided: the reference's modification, which keeps conv4_x at conv3_x's resolution
        self.backbone = ResNetBody("basic", layers, widths, stem, strides=[1] + [2] * (len(layers) - 2) + [1])
        channels = [self.backbone.out_channels]
        blocks = []
        for mid, out, stride, padding in extras:
            blocks.append(nn.Sequential(
                nn.Conv2d(channels[-1], mid, kernel_size=1), nn.ReLU(inplace=True),
                nn.Conv2d(mid, out, kernel_size=3, stride=stride, padding=padding), nn.ReLU(inplace=True)))
            channels.append(out)
        self.additional_blocks = nn.ModuleList(blocks)
        self.boxes_per_location = list(boxes_per_location)
        self.loc = nn.ModuleList(nn.Conv2d(c, n * 4, 3, padding=1) for c, n in zip(channels, boxes_per_location))
        self.conf = nn.ModuleList(nn.Conv2d(c, n * num_classes, 3, padding=1) for c, n in zip(channels, boxes_per_location))
        for layer in (*self.additional_blocks, *self.loc, *self.conf):
            for param in layer.parameters():
                if param.dim() > 1:
                    nn.init.xavier_uniform_(param)

    def features(self, images: torch.Tensor) -> list[torch.Tensor]:
        x = self.backbone(images)
        maps = [x]
        for block in self.additional_blocks:
            x = block(x)
            maps.append(x)
        return maps

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(box offsets (N, boxes, 4), class logits (N, boxes, classes))."""
        locs, confs = [], []
        for x, loc, conf, n in zip(self.features(images), self.loc, self.conf, self.boxes_per_location):
            b, _, h, w = x.shape
            locs.append(loc(x).view(b, n, 4, h, w).permute(0, 3, 4, 1, 2).reshape(b, -1, 4))
            confs.append(conf(x).view(b, n, self.num_classes, h, w).permute(0, 3, 4, 1, 2).reshape(b, -1, self.num_classes))
        return torch.cat(locs, 1), torch.cat(confs, 1)

    @torch.no_grad()
    def feature_sizes(self, image_size: int) -> list[int]:
        """The side of each feature map for a square input: what the default boxes are laid on."""
        was = self.training
        self.eval()
        try:
            return [int(m.shape[-1]) for m in self.features(torch.zeros(1, 3, image_size, image_size))]
        finally:
            self.train(was)
