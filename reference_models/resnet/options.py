"""ResNet-50's options (conf/model/resnet.yaml holds the MLPerf values; datasets scale them down).

    python -m harness.train --help model=resnet
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from harness.interface import Choice, ModelOptions


class Optimizer(Choice):
    sgd = "sgd"
    lars = "lars"


class Decode(Choice):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"
    nvimgcodec = "nvimgcodec"


@dataclass
class ResNetOptions(ModelOptions):
    layers: list[int] = field(default_factory=lambda: [3, 4, 6, 3])
    """Bottleneck blocks per stage; [3, 4, 6, 3] with width 64 is torchvision's resnet50 (v1.5)."""
    width: int = 64
    """Channels of the stem and the first stage (each later stage doubles them)."""
    num_classes: Optional[int] = None
    """Outputs of the classifier; null: the class folders of the dataset (1000 for ImageNet;
    mode=throughput, which reads no data, takes 1000)."""
    zero_init_residual: bool = False
    """Start each block's last BatchNorm scale at 0 (Goyal et al.; NVIDIA's --bn-gamma-init0). The
    MLPerf reference leaves every scale at 1."""
    image_size: int = 224
    """Side of the training crops and of the evaluation's centre crop."""
    resize_size: int = 256
    """Evaluation: the shorter side is resized to this before the centre crop of image_size."""
    min_crop_area: float = 0.05
    """Smallest share of the image a training crop covers (the reference's area range [0.05, 1])."""
    crop_ratio: list[float] = field(default_factory=lambda: [0.75, 1.33])
    """Aspect-ratio range of the training crops (the reference's [0.75, 1.33])."""
    label_smoothing: float = 0.1
    """Label smoothing of the cross-entropy loss."""
    optimizer: Optimizer = Optimizer.sgd
    """sgd (momentum) or lars (layer-wise trust ratio, as MLPerf's closed division allows from v0.6)."""
    learning_rate: float = 0.75
    """Peak rate after warm-up, at the global batch lr_reference_batch."""
    lr_scaling: str = "linear"
    """How the rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = 408
    """The global batch learning_rate was set for."""
    end_learning_rate: float = 0.0001
    """Rate at the end of the polynomial decay (MLPerf fixes it at 0.0001)."""
    poly_power: float = 2.0
    """Power of the polynomial decay after warm-up."""
    warmup_epochs: float = 5.0
    """Linear warm-up from 0 to learning_rate over this many epochs."""
    momentum: float = 0.9
    """Momentum of SGD or LARS."""
    weight_decay: float = 2.5e-5
    """L2 weight decay (MLPerf's closed rules want 0.0001 x a power of 2)."""
    decay_bn_and_bias: bool = False
    """Also decay BatchNorm scales and shifts and biases (the reference spares them)."""
    lars_eta: float = 0.001
    """LARS trust coefficient."""
    lars_epsilon: float = 0.0
    """LARS epsilon in the trust ratio's denominator."""
    workers: int = 4
    """DataLoader worker processes per rank, for training and for evaluation each."""
    decode: Decode = Decode.auto
    """Where training JPEGs are decoded: cpu (the workers decode, crop and resize with PIL),
    nvimgcodec (the workers read the files; the GPU's hardware JPEG decoder decodes each batch through
    nvImageCodec, then the GPU crops and resizes it beside the step), cuda (the same with
    torchvision's nvJPEG, which decodes on the SMs), or auto: cpu without CUDA, else the faster of cpu
    and nvimgcodec by a short probe of the dataset's files at build time (reference_models/resnet/decode.py)."""
    eval_batch_size: int = 256
    """Images per evaluation batch on each rank."""
    channels_last: bool = False
    """NHWC weights and activations (faster convolutions on tensor cores)."""
    compile: bool = False
    """torch.compile the network (CUDA; the first steps compile it)."""
    compile_mode: str = "default"
    """torch.compile mode: default, max-autotune-no-cudagraphs, reduce-overhead or max-autotune."""
