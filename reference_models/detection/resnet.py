"""ResNet bodies for the detectors: torchvision's layout and blocks at any widths, depths and strides.

SSD's backbone is ResNet-34 up to conv4_x with conv4_1 unstrided; Mask R-CNN's is ResNet-50 under
an FPN; RetinaNet's is ResNeXt-50 32x4d (bottlenecks of 32 groups of 4 channels) under an FPN. At
real scale these are torchvision's resnet34/resnet50/resnext50_32x4d (same block classes, same module
names, so torchvision's ImageNet checkpoints load by name and parameter counts match); the embedded
presets use the same layout with narrower stages. torchvision's own ResNet class fixes its widths at
64..512, which is why the body is assembled here from its blocks.

    python -c "from reference_models.detection.resnet import ResNetBody; print(ResNetBody('basic', [3,4,6], [64,128,256], strides=[1,2,1]).out_channels)"
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck, conv1x1
from torchvision.ops.misc import FrozenBatchNorm2d

from harness.interface import DataError

BLOCKS = {"basic": BasicBlock, "bottleneck": Bottleneck}


class ResNetBody(nn.Module):
    """conv1, bn1, relu, maxpool, layer1..layerN: a ResNet without its pooling and classifier."""

    def __init__(self, block: str, layers: Sequence[int], widths: Sequence[int], stem_width: int = 64,
                 strides: Optional[Sequence[int]] = None, norm_layer: Callable[[int], nn.Module] = nn.BatchNorm2d,
                 groups: int = 1, width_per_group: int = 64):
        """groups, width_per_group: a bottleneck's grouped 3x3 convolution, torchvision's ResNeXt
        arguments (32 and 4 for ResNeXt-50 32x4d; 1 and 64, the defaults, for a plain ResNet)."""
        super().__init__()
        if block not in BLOCKS:
            raise ValueError(f"block={block!r}: choose one of {', '.join(BLOCKS)}")
        if len(layers) != len(widths):
            raise ValueError(f"layers {list(layers)} and widths {list(widths)} must have one entry per stage")
        kind = BLOCKS[block]
        strides = list(strides) if strides is not None else [1] + [2] * (len(layers) - 1)
        self.conv1 = nn.Conv2d(3, stem_width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(stem_width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        inplanes = stem_width
        self.stage_channels: list[int] = []
        for i, (count, width, stride) in enumerate(zip(layers, widths, strides)):
            downsample = None
            if stride != 1 or inplanes != width * kind.expansion:
                downsample = nn.Sequential(conv1x1(inplanes, width * kind.expansion, stride), norm_layer(width * kind.expansion))
            grouping = {"groups": groups, "base_width": width_per_group, "norm_layer": norm_layer}
            blocks = [kind(inplanes, width, stride, downsample, **grouping)]
            inplanes = width * kind.expansion
            blocks += [kind(inplanes, width, **grouping) for _ in range(1, count)]
            self.add_module(f"layer{i + 1}", nn.Sequential(*blocks))
            self.stage_channels.append(inplanes)
        self.out_channels = inplanes
        for m in self.modules():  # torchvision's initialisation
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(len(self.stage_channels)):
            x = getattr(self, f"layer{i + 1}")(x)
        return x


def load_weights(body: nn.Module, path: str | Path) -> None:
    """ImageNet weights from a torchvision ResNet checkpoint (its classifier and later stages ignored).
    A missing file or a checkpoint of another shape is a DataError naming it."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"backbone weights {path} do not exist: set model.backbone_weights to a torchvision "
                        "ResNet checkpoint, or null to start from random weights")
    state = torch.load(path, map_location="cpu", weights_only=True)
    own = body.state_dict()
    wanted = {k: v for k, v in state.items() if k in own}
    wrong = [k for k, v in wanted.items() if v.shape != own[k].shape]
    missing = [k for k in own if k not in wanted and not k.endswith("num_batches_tracked")]
    if wrong or missing:
        raise DataError(f"{path} does not fit this backbone: {len(wrong)} tensors of another shape, "
                        f"{len(missing)} missing (e.g. {(wrong + missing)[0]})")
    body.load_state_dict(wanted, strict=False)


IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # torchvision's GeneralizedRCNNTransform
CALIBRATION_IMAGES = 2


def freeze_calibrated(body: nn.Module, height: int, width: int) -> None:
    """Freeze an untrained body's batch norm at the statistics of images like the synthetic batch's
    (normalised uniform noise, at half the synthetic size), as a pretrained body's are ImageNet's.
    Frozen at identity statistics instead (mean 0, variance 1), an untrained ResNet-50 hands the FPN
    features some 50 times larger than a pretrained one does, and amp's heads then overflow within a
    few steps of SGD at the reference's rate (Mask R-CNN's loss_classifier NaN at batch 8 on an H200)."""
    generator = torch.Generator().manual_seed(0)
    images = torch.rand(CALIBRATION_IMAGES, 3, max(height // 2, 32), max(width // 2, 32), generator=generator)
    images = (images - torch.tensor(IMAGENET_MEAN)[:, None, None]) / torch.tensor(IMAGENET_STD)[:, None, None]
    norms = [m for m in body.modules() if isinstance(m, nn.BatchNorm2d)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average: the one batch's statistics exactly
    body.train()
    with torch.no_grad():
        body(images)
    for parent in list(body.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.BatchNorm2d):
                frozen = FrozenBatchNorm2d(child.num_features, eps=child.eps)
                for key in ("weight", "bias", "running_mean", "running_var"):
                    getattr(frozen, key).copy_(getattr(child, key).detach())
                setattr(parent, name, frozen)
