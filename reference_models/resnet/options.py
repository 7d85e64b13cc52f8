"""ResNet-50's options, at MLPerf's values (image_classification, ImageNet, top-1 0.759): SGD as NVIDIA's
closed MLPerf v0.7 DGX A100 run set it (8 GPUs x 408 images, rate 6.0, weight decay 2.5e-5, 5 warm-up
epochs, polynomial decay of power 2, label smoothing 0.1), the rate scaled linearly to other GPU counts.
conf/model/resnet.yaml adds its batch, target, epoch cap and evaluation schedule; conf/model_for/
scales it down.

    python -m harness.train --help model=resnet
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from harness.interface import Broken, Choice, CompileMode, LrScaling, ModelOptions, option
from reference_models.vision.choices import Decode


class Optimizer(Choice):
    sgd = "sgd"
    lars = "lars"


class StemPool(Choice):
    native = "native"
    triton = "triton"


@dataclass
class ResNetOptions(ModelOptions):
    layers: list[int] = option(factory=lambda: [3, 4, 6, 3], ge=1, length=4)
    """Bottleneck blocks per stage; [3, 4, 6, 3] with width 64 is torchvision's resnet50 (v1.5)."""
    width: int = option(64, ge=1)
    """Channels of the stem and the first stage (each later stage doubles them)."""
    num_classes: Optional[int] = option(None, ge=2)
    """Outputs of the classifier; null: the class folders of the dataset (1000 for ImageNet;
    mode=throughput, which reads no data, takes 1000)."""
    zero_init_residual: bool = False
    """Start each block's last BatchNorm scale at 0 (Goyal et al.; NVIDIA's --bn-gamma-init0). The
    MLPerf reference leaves every scale at 1."""
    image_size: int = option(224, ge=1)
    """Side of the training crops and of the evaluation's centre crop."""
    resize_size: int = option(256, ge=1)
    """Evaluation: the shorter side is resized to this (at least image_size) before the centre crop of
    image_size."""
    min_crop_area: float = option(0.05, gt=0, le=1)
    """Smallest share of the image a training crop covers (the reference's area range [0.05, 1])."""
    crop_ratio: list[float] = option(factory=lambda: [0.75, 1.33], gt=0, length=2)
    """Aspect-ratio range of the training crops, low then high (the reference's [0.75, 1.33])."""
    label_smoothing: float = option(0.1, ge=0, lt=1)
    """Label smoothing of the cross-entropy loss."""
    optimizer: Optimizer = Optimizer.sgd
    """sgd (momentum) or lars (layer-wise trust ratio, as MLPerf's closed division allows from v0.6;
    +optimizer=resnet_lars sets NVIDIA's LARS values)."""
    learning_rate: float = option(0.75, gt=0)
    """Peak rate after warm-up, at the global batch lr_reference_batch (6.0 at 8 x 408)."""
    lr_scaling: LrScaling = LrScaling.linear
    """How the rate follows the global batch: none, linear or sqrt (docs/distributed.md)."""
    lr_reference_batch: int = option(408, ge=1)
    """The global batch learning_rate was set for."""
    end_learning_rate: float = option(0.0001, ge=0)
    """Rate at the end of the polynomial decay (MLPerf fixes it at 0.0001)."""
    poly_power: float = option(2.0, gt=0)
    """Power of the polynomial decay after warm-up."""
    lr_warmup_epochs: float = option(5.0, ge=0)
    """Linear warm-up from 0 to learning_rate over this many epochs, at most the run's max_epochs."""
    momentum: float = option(0.9, ge=0, lt=1)
    """Momentum of SGD or LARS."""
    weight_decay: float = option(2.5e-5, ge=0)
    """L2 weight decay (MLPerf's closed rules want 0.0001 x a power of 2)."""
    decay_bn_and_bias: bool = False
    """Also decay BatchNorm scales and shifts and biases (the reference spares them)."""
    lars_eta: float = option(0.001, gt=0)
    """LARS trust coefficient."""
    lars_epsilon: float = option(0.0, ge=0)
    """LARS epsilon in the trust ratio's denominator."""
    workers: int = option(8, ge=0)
    """DataLoader worker processes per rank, for training and for evaluation each (0: load in the
    training process)."""
    decode: Decode = Decode.auto
    """Where training JPEGs are decoded: cpu (the workers decode, crop and resize with PIL),
    nvimgcodec (the workers read the files; the GPU's hardware JPEG decoder decodes each batch through
    nvImageCodec, then the GPU crops and resizes it beside the step), cuda (the same with
    torchvision's nvJPEG, which decodes on the SMs), or auto: cpu without CUDA, else the faster of cpu
    and nvimgcodec by a short probe of the dataset's files at build time (reference_models/resnet/decode.py)."""
    decode_threads: int = option(1, ge=1, le=8)
    """GPU decode paths (decode=nvimgcodec, cuda, or auto choosing nvimgcodec): threads of the training
    process that decode and crop batches side by side, each with its own decoder, CUDA stream and
    buffers; the step gets the loader's batches in the loader's order whatever the number. Default 1:
    on an H200 (docs/benchmarks/pipeline_2026-12-01.md, 17:46 call) one thread spent 41 ms of host
    time a batch of 256 and trained at 5,879 images/s; with two each spent 77 ms (their host work does
    not overlap: nvImageCodec's submissions and the crops' launches serialise) and training ran at
    5,727. More may pay where the host work does overlap: scripts/lab/pipeline_h200.sh resnet:threads
    measures 1, 2 and 3 (reference_models/vision/prefetch.py). Unused on the CPU path."""
    cpu_decode_share: float = option(0.0, ge=0, lt=1)
    """GPU decode paths (decode=nvimgcodec, cuda, or auto choosing nvimgcodec): the share of each
    training batch the DataLoader workers decode, crop, resize and flip with PIL, as the CPU path
    does, while the GPU decodes the rest: the last round(batch_size x share) images of every batch
    (the batch's collate, in the worker that loaded it). For when the decode thread, not the
    workers, is the bottleneck: on an H200 it spent 41-44 ms of host time per batch of 256 against a
    36 ms step while 12 workers idled (docs/benchmarks/pipeline_2026-12-01.md); a share moves that
    part of its work to them. Pick it by measuring: scripts/lab/pipeline_h200.sh resnet:share runs
    0.2 and 0.3 beside the default; too large a share makes the workers the bottleneck (their rate
    alone: pipeline_bench.py's 'workers' line). Default 0: the GPU decodes every image. The pixels
    are the CPU path's in either part (reference_models/resnet/decode.py). Unused on the CPU path."""
    decode_preallocate: bool = False
    """decode=nvimgcodec: size the hardware JPEG decoder's buffers once, for a batch of batch_size
    images as large as the largest of 64 training files' headers, as DALI's decoder does
    (reference_models/resnet/preallocate.py); without it nvImageCodec starts from batches of one
    image of 1 x 1 pixels. scripts/lab/pipeline_h200.sh resnet:prealloc measures it beside the
    default. The pictures are the same either way."""
    eval_batch_size: int = option(256, ge=1)
    """Images per evaluation batch on each rank."""
    channels_last: bool = False
    """CUDA: NHWC weights and activations (faster convolutions on tensor cores)."""
    compile: bool = False
    """torch.compile the network (CUDA; the first steps compile it)."""
    compile_mode: CompileMode = CompileMode["default"]  # type: ignore[valid-type]
    """torch.compile mode: default, max-autotune-no-cudagraphs, reduce-overhead or max-autotune."""
    conv_1x1_as_mm: bool = False
    """Where the network is compiled (model.compile=true, CUDA's default; eager it changes nothing): Inductor
    lowers the forward pass's 1x1 stride-1 convolutions (two of each bottleneck's three) to matrix products
    over NHWC rows, cuBLAS instead of cuDNN (torch._inductor.config.conv_1x1_as_mm; max-autotune does it
    for channels_last too); the backward's convolutions stay cuDNN's. Not the default: at batch 256 beside
    the default in one call, 6,007 against 6,022 images/s on one H100 (0.998x) and 6,993 against 6,949 on one
    H200 (1.006x), both within the row's spread (docs/benchmarks/gpu_check_2026-12-06.md);
    `scripts/lab/gpu_check.py --variants resnet:conv_1x1_as_mm` measures it again."""

    stem_pool: StemPool = StemPool.native
    """The stem's 3x3 stride-2 max-pool: native (nn.MaxPool2d, which Inductor compiles) or triton (on CUDA,
    reference_models/resnet/stem_pool_kernels.py: the forward keeps each maximum's tap in one byte and the
    backward gathers at most four gradients an element by its row and column; elsewhere torch's own pool, the
    same numbers). triton is the fast path's on CUDA (ModelSpec.fast, training too): on one H100 on 2026-12-07
    the pool's forward and backward took 1.37 ms against 2.14 for Inductor's, and the b256 step ran 6,019
    images/s against 5,956-5,960 in three alternations (1.011x; docs/benchmarks/gpu_check_2026-12-07.md).
    `model.stem_pool=native` keeps torch's pool; `scripts/lab/gpu_check.py --variants resnet:native_pool`
    measures the two again."""

    def relations(self, max_epochs: int) -> Iterator[Broken]:
        if self.resize_size < self.image_size:
            yield Broken("resize_size", self.resize_size, f">= image_size ({self.image_size}): the evaluation's "
                                                          "centre crop of image_size is cut from it")
        if self.crop_ratio[0] > self.crop_ratio[1]:
            yield Broken("crop_ratio", self.crop_ratio, "[low, high] with low <= high")
        if self.lr_warmup_epochs > max_epochs:
            yield Broken("lr_warmup_epochs", self.lr_warmup_epochs, f"<= max_epochs ({max_epochs}): the warm-up would "
                                                              "outlast the run and the decay get negative steps")
