"""ResNet-50 v1.5 plugged into the harness: ImageNet folders through DataLoader workers, label-smoothed
loss, SGD or LARS with warm-up and polynomial decay, top-1 accuracy over the whole validation set.

    python -m harness.train model=resnet seed=1
"""
from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Optional, cast

import torch
from omegaconf import DictConfig, OmegaConf
from torch.nn.functional import cross_entropy

from harness.interface import RunContext, compile_kwargs, scaled_learning_rate
from harness.interface.gather import sum_over_ranks
from harness.interface.findings import SampleFlags
from harness.interface.loader import check_command, make_loader, make_shard_loader
from harness.interface.sharding import shard
from reference_models.resnet import data as imagenet
from reference_models.resnet import decode as device_decode
from reference_models.resnet.model import build, parameter_groups, to_channels_last
from reference_models.vision.optim import PolyWarmup, make_optimizer, mlperf_keys
from reference_models.resnet.options import ResNetOptions, StemPool
from reference_models.resnet.preallocate import largest_size, preallocation
from reference_models.resnet.stem_pool import triton_stem_pool
from reference_models.vision import backend
from reference_models.vision.decoders import make_decoder

log = logging.getLogger("harness.resnet")
Batch = tuple[torch.Tensor, torch.Tensor]  # pixel values (uint8 from the loader, float from nvJPEG), labels
IMAGENET_CLASSES = 1000


def prepare(cfg: DictConfig) -> Path:
    """Generate the embedded dataset if it is missing; check that a real one has train/ and val/."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.resnet.generate` must not find itself already imported
        from reference_models.resnet.generate import ImageSpec, ensure

        ensure(ImageSpec(**cast(dict, OmegaConf.to_object(cfg.dataset.generator))), path)
    imagenet.check_layout(path)
    return path


class ResNetBenchmark:
    def __init__(self, ctx: RunContext[ResNetOptions]):
        hp = self.hp = ctx.options
        self.ctx, self.device = ctx, ctx.device
        self.global_batch = hp.batch_size * ctx.world_size
        cuda = ctx.device.type == "cuda"
        self.channels_last = bool(hp.channels_last)
        self.optimizer_name = str(hp.optimizer)  # a plain string from the choices
        self.decode = backend.resolve(str(hp.decode), ctx.device)  # auto: cpu until the data is probed
        self._device_batches: Optional[device_decode.ImageNetBatches] = None
        # without a dataset (mode=throughput): ImageNet's classes unless set, and the schedule's
        # length in measured steps
        self.folder = None if ctx.data_dir is None else imagenet.load(ctx.data_dir)
        num_classes, self._steps = hp.num_classes or IMAGENET_CLASSES, ctx.throughput_epoch_steps
        if self.folder is not None:
            num_classes = hp.num_classes or len(self.folder.classes)
            if num_classes < len(self.folder.classes):
                raise imagenet.DatasetError(f"model.num_classes={num_classes} but the dataset has "
                                            f"{len(self.folder.classes)} classes")
            self._steps = len(self.folder.train) // self.global_batch
            if self._steps == 0:
                raise imagenet.DatasetError(f"{len(self.folder.train)} training images cannot fill one global "
                                            f"batch of {self.global_batch}")
            if str(hp.decode) == "auto" and cuda:  # a short probe on the dataset's own files (decode.py)
                train, cpu = self.folder.train, imagenet.DecodedImages(self.folder.train, self._train_crops())
                self.decode = backend.resolve("auto", ctx.device, lambda: backend.probe_rates(
                    len(train), lambda i: train[i][0], cpu.__getitem__, ctx.device, hp.workers, hp.image_size))
            self._make_loaders()

        self.num_classes = num_classes
        model = build(hp.layers, hp.width, num_classes, hp.zero_init_residual).to(ctx.device)
        if str(hp.stem_pool) == StemPool.triton:
            model.maxpool = triton_stem_pool(ctx.device)
        self.model = to_channels_last(model) if self.channels_last else model
        if hp.compile:
            self.model.compile(**compile_kwargs(hp.compile_mode,
                                                {"conv_1x1_as_mm": True} if hp.conv_1x1_as_mm else None))
        self.lr = scaled_learning_rate(hp.learning_rate, hp.lr_scaling, self.global_batch, hp.lr_reference_batch)
        groups = parameter_groups(self.model, hp.weight_decay, hp.decay_bn_and_bias)
        self.optimizer = make_optimizer(self.optimizer_name, groups, self.lr, hp.momentum, hp.lars_eta, hp.lars_epsilon,
                                        fused=cuda)
        self.schedule = PolyWarmup(self.lr, round(hp.lr_warmup_epochs * self._steps), self._steps * ctx.cfg.max_epochs,
                                   hp.end_learning_rate, hp.poly_power)
        self.lr_scheduler = self.schedule.scheduler(self.optimizer)
        self.grad_clip_norm = None

    def _make_loaders(self) -> None:
        hp, ctx = self.hp, self.ctx
        assert self.folder is not None  # a dataset was loaded
        # a bad file is found now, not when an epoch or the first evaluation reaches it: each rank reads the
        # headers and ends of its share of both splits (docs/resnet.md: about 0.2 ms a file on one core)
        imagenet.check_images([*shard(self.folder.train, ctx.rank, ctx.world_size),
                               *shard(self.folder.val, ctx.rank, ctx.world_size)], check_command(ctx))
        self.flags = {s: SampleFlags(len(getattr(self.folder, s)), imagenet.REPAIRS) for s in imagenet.SPLITS}
        train_crops = self._train_crops()
        eval_crops = imagenet.Crops(hp.image_size, hp.resize_size, train=False)
        if self.decode != "cpu":  # the workers read the files; the GPU decodes (decode.py)
            train_set: Any = imagenet.EncodedImages(self.folder.train, train_crops, self.flags["train"])
            # the workers decode the last round(batch x share) images of each batch as the CPU path
            # does (a partial of a module-level function: it is pickled to the workers)
            collate = partial(imagenet.collate_encoded, cpu_share=float(hp.cpu_decode_share), size=hp.image_size,
                              hint=check_command(ctx))
            self.train_loader = make_loader(train_set, ctx, batch_size=hp.batch_size, workers=hp.workers,
                                            collate=collate)
            # one decoder per decode thread: an nvImageCodec Decoder is not shared between threads
            options = ""
            if hp.decode_preallocate and self.decode == "nvimgcodec":
                width, height = largest_size([path for path, _ in self.folder.train])
                options = preallocation(hp.batch_size, width, height)
            decoders = [make_decoder(self.decode, ctx.device, cpu_threads=hp.workers, options=options)
                        for _ in range(hp.decode_threads)]
            self._device_batches = device_decode.ImageNetBatches(decoders, hp.image_size, ctx.device,
                                                                 self.channels_last)
        else:
            train_set = imagenet.DecodedImages(self.folder.train, train_crops, self.flags["train"])
            self.train_loader = make_loader(train_set, ctx, batch_size=hp.batch_size, workers=hp.workers)
        self.eval_loader = make_shard_loader(imagenet.DecodedImages(self.folder.val, eval_crops, self.flags["val"]),
                                             ctx, batch_size=hp.eval_batch_size, workers=hp.workers)

    def data_findings(self) -> dict[str, int]:
        """Files read so far that were converted or re-encoded (CMYK, greyscale, not JPEG), each once,
        over every rank; a collective: every rank calls it."""
        if self.folder is None:
            return {}
        return {f"{split}_{name}": n for split, flags in self.flags.items() for name, n in flags.counts().items()}

    def _train_crops(self) -> imagenet.Crops:
        hp = self.hp
        return imagenet.Crops(hp.image_size, hp.resize_size, train=True, scale=(hp.min_crop_area, 1.0),
                              ratio=(hp.crop_ratio[0], hp.crop_ratio[1]))

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {
            "global_batch_size": self.global_batch,
            **mlperf_keys(self.optimizer_name, self.schedule, hp.lr_warmup_epochs, hp.momentum, hp.weight_decay,
                          hp.lars_epsilon),
            "model_bn_span": hp.batch_size,  # BatchNorm statistics are per rank
            "gradient_accumulation_steps": 1,
        }

    def steps_per_epoch(self) -> int:
        return self._steps

    def train_samples(self) -> int:
        return len(self.folder.train) if self.folder else 0

    def eval_samples(self) -> int:
        return len(self.folder.val) if self.folder else 0

    def train_batches(self, epoch: int) -> Iterator[Batch]:
        """The loader's batches: uint8 pixels (pinned on CUDA), normalised in `loss` on the device so a
        quarter of the bytes travel; or, with a GPU decoder, images the GPU decoded, cropped and
        normalised ahead of the step (decode.py), already on the device."""
        if self._device_batches is not None:
            yield from self._device_batches(self.train_loader.epoch(epoch))
            return
        yield from self.train_loader.epoch(epoch)

    def synthetic_batch(self) -> Batch:
        """Random pixel values and labels of the configured shape, made on the device."""
        size, b = self.hp.image_size, self.hp.batch_size
        gen = torch.Generator(device=self.device).manual_seed(self.ctx.shared_seed)
        images = torch.randint(0, 256, (b, 3, size, size), generator=gen, device=self.device, dtype=torch.uint8)
        labels = torch.randint(0, self.num_classes, (b,), generator=gen, device=self.device)
        return images, labels

    def loss(self, model: torch.nn.Module, batch: Batch) -> tuple[torch.Tensor, int]:
        images, labels = batch
        if images.dtype == torch.uint8:  # pixels from the workers or the synthetic batch; a GPU decoder's are normalised
            images = imagenet.normalize(images, self.channels_last)
        logits = model(images)
        return cross_entropy(logits.float(), labels, label_smoothing=self.hp.label_smoothing), labels.numel()

    def evaluate(self, model: torch.nn.Module, epoch: int) -> float:
        """Top-1 accuracy over the whole validation set; every rank returns the same value."""
        nb = self.device.type == "cuda"
        counts = torch.zeros(2, dtype=torch.int64, device=self.device)  # correct, seen
        for images, labels in self.eval_loader:
            images = imagenet.normalize(images.to(self.device, non_blocking=nb), self.channels_last)
            labels = labels.to(self.device, non_blocking=nb)
            counts[0] += (model(images).argmax(dim=1) == labels).sum()
            counts[1] += labels.numel()
        sum_over_ranks(counts)  # integer counts: the same result as one rank gets
        correct, seen = counts.tolist()  # sync point: the quality decides whether to stop
        return correct / seen
