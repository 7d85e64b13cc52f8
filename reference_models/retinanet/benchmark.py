"""RetinaNet plugged into the harness: openimages-mlperf (COCO JSON) through pycocotools, horizontal flips,
Adam with a one-epoch linear warm-up, COCO box mAP on every rank's share of the validation split scored
once on rank 0.

    python -m harness.train model=retinanet seed=1
"""
from __future__ import annotations

from typing import Any

import torch
from harness.interface import LossTerms, RunContext, scaled_learning_rate
from harness.interface.loader import check_command, make_shard_loader
from reference_models.detection import coco
from reference_models.detection.cocoeval import evaluate_on_ranks, my_images
from reference_models.detection.schedule import WarmupMultiStep
from reference_models.detection.training import CocoTraining
from reference_models.retinanet.data import OPENIMAGES, TrainTransform, as_lists, eval_transform, to_unit
from reference_models.retinanet.model import build_model, compile_convolutions
from reference_models.retinanet.options import RetinaNetOptions

Batch = tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]


class RetinaNetBenchmark(CocoTraining):
    """Its training batches: lists of uint8 images at their stored sizes and of torchvision targets
    (boxes in those pixels, labels 0..K-1); the model normalises and resizes them on the device."""

    def __init__(self, ctx: RunContext[RetinaNetOptions]):
        hp = self.hp = ctx.options
        self.ctx, self.rank, self.world_size, self.device = ctx, ctx.rank, ctx.world_size, ctx.device
        self.global_batch = hp.batch_size * ctx.world_size
        self.seed = ctx.shared_seed
        # without a dataset (mode=throughput): the configured classes, and the schedule's length in
        # measured steps
        self.val = None if ctx.data_dir is None else coco.CocoSplit(
            ctx.data_dir, "val", eval_transform, keep_empty=True, include_crowd=True, layout=OPENIMAGES)
        if self.val is not None:  # a bad validation image is found now, not after the first training epoch
            self.val.check_images(self._eval_shard(), check_command(ctx))
        # one sigmoid output per category: no background class (the split's labels keep 0 for it)
        self.num_classes = hp.synthetic.num_classes if self.val is None else self.val.num_classes - 1
        self.model = build_model(hp, self.num_classes, throughput=ctx.data_dir is None).to(ctx.device)
        if hp.channels_last:
            self.model.to(memory_format=torch.channels_last)
        if hp.compile and ctx.device.type == "cuda":
            compile_convolutions(self.model)

        self.start_training(ctx, "cpu")  # PIL in the workers: the images cross as uint8 at their stored sizes
        if ctx.data_dir is not None:
            self.train = coco.training_split(ctx, TrainTransform(hp.flip_probability), include_crowd=True,
                                             layout=OPENIMAGES)
            self.n_train = len(self.train)
            self.loader = coco.training_loader(self.train, self.num_classes + 1, ctx, hp.batch_size, hp.workers,
                                               as_lists)
            self._steps = len(self.loader)

        self.lr = scaled_learning_rate(hp.learning_rate, hp.lr_scaling, self.global_batch, hp.lr_reference_batch)
        trained = [p for p in self.model.parameters() if p.requires_grad]
        # on a GPU one fused kernel; the reference's torch.optim.Adam(params, lr) otherwise as it is
        self.optimizer = torch.optim.Adam(trained, lr=self.lr, fused=ctx.device.type == "cuda")
        # the reference warms up per iteration over warmup_epochs x the epoch's steps (utils.warmup_lr_scheduler)
        self.warmup_steps = max(1, round(hp.lr_warmup_epochs * self._steps))
        self.schedule = WarmupMultiStep(self.warmup_steps, hp.lr_warmup_factor, (), 1.0)
        self.lr_scheduler = self.schedule.scheduler(self.optimizer)
        self.grad_clip_norm = None

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {  # every key of closed_retinanet.yaml and common.yaml (ruleset 5.1.0), as the reference logs them
            "global_batch_size": self.global_batch,
            "gradient_accumulation_steps": 1,
            "opt_name": "adam",
            "opt_base_learning_rate": self.lr,
            "opt_weight_decay": 0.0,
            "opt_learning_rate_warmup_epochs": hp.lr_warmup_epochs,
            "opt_learning_rate_warmup_factor": hp.lr_warmup_factor,
        }

    def _eval_shard(self) -> range:
        assert self.val is not None  # mode=train, where there is a dataset
        return my_images(len(self.val), self.rank, self.world_size, self.hp.eval_batch_size)

    def synthetic_batch(self) -> Batch:
        """Random uint8 images of the configured size with random boxes and labels."""
        syn, gen = self.hp.synthetic, torch.Generator().manual_seed(self.seed)
        h, w = syn.height, syn.width
        images, targets = [], []
        for _ in range(self.hp.batch_size):
            xy = torch.rand(syn.objects, 2, generator=gen) * torch.tensor([w * 0.7, h * 0.7])
            wh = 16 + torch.rand(syn.objects, 2, generator=gen) * torch.tensor([w * 0.3, h * 0.3])
            images.append(torch.randint(0, 256, (3, h, w), generator=gen, dtype=torch.uint8))
            targets.append({"boxes": torch.cat([xy, xy + wh], dim=1),
                            "labels": torch.randint(0, self.num_classes, (syn.objects,), generator=gen)})
        return images, targets

    def _images(self, pixels: list[torch.Tensor]) -> list[torch.Tensor]:
        # each image (C, H, W) as it is: a 3-D tensor has no channels_last layout; with channels_last the
        # first convolution's weights give the resized batch its NHWC layout
        return [to_unit(p) for p in pixels]

    def loss(self, model: torch.nn.Module, batch: Batch) -> tuple[LossTerms, int]:
        """torchvision's loss dict (focal classification, L1 box regression), summed as the reference sums it."""
        pixels, targets = batch
        return LossTerms.summed(model(self._images(pixels), targets)), len(pixels)

    def evaluate(self, model: torch.nn.Module, epoch: int) -> float:
        """COCO box mAP@[0.5:0.95] over the validation split; every rank returns the same value."""
        assert self.val is not None  # mode=train, where there is a dataset
        loader = make_shard_loader(self.val, self.ctx, batch_size=self.hp.eval_batch_size, workers=self.hp.workers,
                                   collate=as_lists, indices=self._eval_shard(), persistent=False)
        category_of = self.val.category_of
        detections = []
        for pixels, image_ids in loader:
            found = model(self._images([p.to(self.device, non_blocking=True) for p in pixels]))
            for image_id, image in zip(image_ids, found):  # boxes in the stored image's pixels
                for (x1, y1, x2, y2), label, score in zip(image["boxes"].tolist(), image["labels"].tolist(),
                                                          image["scores"].tolist()):
                    detections.append({"image_id": image_id, "category_id": category_of[label + 1],
                                       "bbox": [x1, y1, x2 - x1, y2 - y1], "score": score})
        return evaluate_on_ranks(self.val.coco, detections, ["BBOX"])["BBOX"]
