"""ResNet-50 v1.5 as torchvision builds it, and the same network at a fraction of the width.

torchvision's Bottleneck puts the stride on the 3x3 convolution: that is v1.5, the variant MLPerf
names (v1 strides the first 1x1). At width 64 and stages [3, 4, 6, 3] `build` returns
torchvision.models.resnet50 itself; other sizes are torchvision's ResNet with every stage's width
scaled (the embedded preset's small network on 64-pixel images).

    python -c "from reference_models.resnet.model import build; print(sum(p.numel() for p in build([3,4,6,3], 64, 1000).parameters()))"
"""
from __future__ import annotations

from typing import Sequence

import torch
from torch import nn
from torchvision.models import resnet50
from torchvision.models.resnet import Bottleneck, ResNet

RESNET50_LAYERS = (3, 4, 6, 3)


class ScaledResNet(ResNet):
    """torchvision's ResNet with Bottleneck blocks whose stages are width, 2x, 4x and 8x wide.

    torchvision's constructor fixes the stem and stage widths at 64..512, so this one repeats its
    few lines of layout with `width` in their place and keeps everything else of the class:
    `_make_layer`, the blocks, the forward pass and the initialisation rules. At width 64 it is
    resnet50's architecture exactly (tests/reference_models/resnet/test_model.py compares them)."""

    def __init__(self, layers: Sequence[int], width: int, num_classes: int, zero_init_residual: bool = False):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes, self.dilation, self.groups, self.base_width = width, 1, 1, 64
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(Bottleneck, width, layers[0])
        self.layer2 = self._make_layer(Bottleneck, 2 * width, layers[1], stride=2)
        self.layer3 = self._make_layer(Bottleneck, 4 * width, layers[2], stride=2)
        self.layer4 = self._make_layer(Bottleneck, 8 * width, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * width * Bottleneck.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            zero_last_gammas(self)


def zero_last_gammas(model: nn.Module) -> None:
    """Each residual branch's last BatchNorm scale at 0: every block starts as the identity."""
    for m in model.modules():
        if isinstance(m, Bottleneck):
            nn.init.zeros_(m.bn3.weight)


def build(layers: Sequence[int], width: int, num_classes: int, zero_init_residual: bool = False) -> ResNet:
    if len(layers) != 4 or min(layers) < 1 or width < 1:
        raise ValueError(f"model.layers={list(layers)}, model.width={width}: need 4 stages of at least 1 block "
                         "and a width of at least 1")
    if tuple(layers) == RESNET50_LAYERS and width == 64:
        return resnet50(num_classes=num_classes, zero_init_residual=zero_init_residual)
    return ScaledResNet(layers, width, num_classes, zero_init_residual)


def parameter_groups(model: nn.Module, weight_decay: float, decay_bn_and_bias: bool) -> list[dict]:
    """Two optimizer groups: convolution and linear weights with weight decay, and BatchNorm scales
    and shifts and biases without it unless `decay_bn_and_bias` (the MLPerf reference's LARS skips
    'batch_normalization' and 'bias' for both decay and trust ratio; its SGD path spares 'bn')."""
    decayed: list[nn.Parameter] = []
    spared: list[nn.Parameter] = []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            bn_or_bias = isinstance(module, nn.modules.batchnorm._BatchNorm) or name == "bias"
            (spared if bn_or_bias and not decay_bn_and_bias else decayed).append(p)
    groups = [{"params": decayed, "weight_decay": weight_decay, "lars": True}]
    if spared:
        groups.append({"params": spared, "weight_decay": 0.0, "lars": False})
    return groups


def to_channels_last(model: nn.Module) -> nn.Module:
    """NHWC weights: cuDNN's tensor-core convolutions want them, and it saves a transpose per layer."""
    return model.to(memory_format=torch.channels_last)
