"""Mask R-CNN plugged into the harness: COCO through pycocotools with polygon masks, flips only, SGD with
warm-up and two decay steps, COCO box and mask mAP on every rank's share of val2017 scored on rank 0.

    python -m harness.train model=maskrcnn seed=1
"""
from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch
from torchvision.transforms.functional import pil_to_tensor
from pycocotools import mask as mask_utils

from harness.interface import LossTerms, RunContext, compile_kwargs, scaled_learning_rate
from harness.interface.grouping import aspect_ratio_groups
from harness.interface.loader import check_command, make_shard_loader
from reference_models.detection import coco
from reference_models.detection import decode as detection_decode
from reference_models.detection.cocoeval import evaluate_on_ranks, my_batches
from reference_models.detection.schedule import WarmupMultiStep
from reference_models.detection.training import CocoTraining
from reference_models.maskrcnn import decode as maskrcnn_decode
from reference_models.maskrcnn.data import collate_packed
from reference_models.maskrcnn.model import build_model
from reference_models.maskrcnn.options import MaskRCNNOptions
from reference_models.vision.optim import make_optimizer
from reference_models.vision import decoders

Batch = tuple[list[torch.Tensor], list[dict[str, torch.Tensor]]]


class TrainTransform:
    """(PIL image, Target) -> (image in 0..1, torchvision target with boxes, labels and masks), flipped
    with probability p; resizing and normalisation happen inside the model (GeneralizedRCNNTransform).
    device_finish: the image as uint8 0..255, made 0..1 on the device (maskrcnn.data.PackedBatch)."""

    def __init__(self, flip_probability: float, device_finish: bool = False):
        self.p = flip_probability
        self.device_finish = device_finish

    def __call__(self, image, target: coco.Target) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        pixels = pil_to_tensor(image)
        if not self.device_finish:
            pixels = pixels.float().div_(255)
        boxes, masks = target.boxes.clone(), target.masks()
        if random.random() < self.p:
            pixels, masks = pixels.flip(-1), masks.flip(-1)
            w = target.size[1]
            boxes = torch.stack([w - boxes[:, 2], boxes[:, 1], w - boxes[:, 0], boxes[:, 3]], dim=1)
        return pixels, {"boxes": boxes, "labels": target.labels, "masks": masks}


def eval_transform(image, target: coco.Target) -> tuple[torch.Tensor, int]:
    return pil_to_tensor(image).float().div_(255), target.image_id


def as_lists(batch: list) -> tuple:
    return tuple(list(x) for x in zip(*batch))


class MaskRCNNBenchmark(CocoTraining):
    """Its training batches: lists of images and of their targets; on CUDA, PackedBatch (pinned), which
    the harness's feed turns into those lists on the device (PackedBatch.to); with a GPU decoder,
    batches the GPU decoded and flipped ahead of the step, already on it."""

    def __init__(self, ctx: RunContext[MaskRCNNOptions]):
        hp = self.hp = ctx.options
        self.ctx, self.rank, self.world_size, self.device = ctx, ctx.rank, ctx.world_size, ctx.device
        self.global_batch = hp.batch_size * ctx.world_size
        self.seed = ctx.shared_seed
        # without a dataset (mode=throughput): the configured classes, and the schedule's length in
        # measured steps; with_polygons: the ground truth of mask AP drops degenerate polygons as training does
        self.val = None if ctx.data_dir is None else coco.CocoSplit(ctx.data_dir, "val", eval_transform,
                                                                     keep_empty=True, with_polygons=True)
        if self.val is not None:  # a bad validation image is found now, not after the first training epoch
            self.val.check_images(self._eval_shard(), check_command(ctx))
        self.num_classes = num_classes = hp.synthetic.num_classes if self.val is None else self.val.num_classes
        self.model = build_model(hp, num_classes, throughput=ctx.data_dir is None).to(ctx.device)
        if hp.channels_last:
            self.model.backbone.to(memory_format=torch.channels_last)
        self._slot_counts_to_compile = False
        if hp.compile and ctx.device.type == "cuda":
            self.model.backbone.compile(**compile_kwargs(hp.compile_mode))
            if hp.fixed_mask_rois:  # the mask branch's shapes are fixed: the same mode, so it is replayed too
                self.model.roi_heads.compile_mask_branch(**compile_kwargs(hp.compile_mode))
                self._slot_counts_to_compile = True  # every slot count, in the first call of `loss`

        self.start_training(ctx, str(hp.decode))
        if ctx.data_dir is not None:
            # on a GPU with the workers decoding, a batch crosses as four packed tensors and its images
            # as uint8 (maskrcnn/data.py: the same images and targets, a quarter of the bytes)
            cuda = ctx.device.type == "cuda"
            train: Any = coco.training_split(ctx, TrainTransform(hp.flip_probability, device_finish=cuda),
                                             with_polygons=True)
            self.train = train  # what data_findings counts, whichever path reads the files
            # grouped by the annotations' sizes (no file read); the reference keeps each group's short last batch
            groups = aspect_ratio_groups(train.image_sizes()) if hp.aspect_grouping else None
            self.decode = detection_decode.choose(str(hp.decode), ctx.device)
            collate: Any = collate_packed if cuda else as_lists
            if self.decode != "cpu":  # the workers read the files and draw the masks; the GPU decodes
                train = detection_decode.EncodedCoco(detection_decode.without_transform(train),
                                                     maskrcnn_decode.MaskRCNNPlan(hp.flip_probability), self.decode)
                decoder = decoders.make_decoder(self.decode, ctx.device, cpu_threads=hp.workers)
                self._device_batches = maskrcnn_decode.MaskRCNNBatches(decoder, ctx.device)
                collate = maskrcnn_decode.collate_maskrcnn
            self.n_train = len(train)
            self.loader = coco.training_loader(train, num_classes, ctx, hp.batch_size, hp.workers,
                                               collate, groups=groups, drop_last=not hp.aspect_grouping)
            self._steps = len(self.loader)

        self.lr = scaled_learning_rate(hp.learning_rate, hp.lr_scaling, self.global_batch, hp.lr_reference_batch)
        weights = [p for n, p in self.model.named_parameters() if p.requires_grad and not n.endswith(".bias")]
        biases = [p for n, p in self.model.named_parameters() if p.requires_grad and n.endswith(".bias")]
        # on a GPU one fused kernel, which also takes the GradScaler's inf check without a host read
        self.optimizer = make_optimizer(
            "sgd", [{"params": weights, "weight_decay": hp.weight_decay},
                    {"params": biases, "lr": self.lr * hp.bias_lr_factor, "weight_decay": 0.0}],
            self.lr, hp.momentum, eta=0.0, epsilon=0.0, fused=ctx.device.type == "cuda")
        # steps are given at the reference batch: at another global batch they fall after as many images
        per = hp.lr_reference_batch / self.global_batch
        self.warmup_steps = max(1, round(hp.lr_warmup_steps * per))
        self.decay_steps = [max(1, round(s * per)) for s in hp.lr_decay_steps]
        self.schedule = WarmupMultiStep(self.warmup_steps, hp.lr_warmup_factor, tuple(self.decay_steps),
                                        hp.lr_decay_factor)
        self.lr_scheduler = self.schedule.scheduler(self.optimizer)
        self.grad_clip_norm = None

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {  # every key of closed_maskrcnn.yaml (ruleset 0.7.0), as the reference logs them
            "global_batch_size": self.global_batch,
            "num_image_candidates": hp.rpn_post_nms_train * hp.batch_size,  # per rank batch, as the reference's
            "opt_name": "sgd_with_momentum",
            "opt_base_learning_rate": self.lr,
            "opt_weight_decay": hp.weight_decay,
            "opt_learning_rate_warmup_steps": self.warmup_steps,
            "opt_learning_rate_warmup_factor": hp.lr_warmup_factor,
            "opt_learning_rate_decay_factor": hp.lr_decay_factor,
            "opt_learning_rate_decay_steps": self.decay_steps,
            "min_image_size": hp.min_size,
            "max_image_size": hp.max_size,
        }

    def _eval_batches(self) -> list[list[int]]:
        """This rank's evaluation batches; grouped by aspect ratio as the training batches are (the
        reference groups its test batches too), so that an image is padded as in training."""
        assert self.val is not None  # mode=train, where there is a dataset
        groups = aspect_ratio_groups(self.val.image_sizes()) if self.hp.aspect_grouping else None
        return my_batches(len(self.val), self.rank, self.world_size, self.hp.eval_batch_size, groups)

    def _eval_shard(self) -> list[int]:
        return [i for batch in self._eval_batches() for i in batch]

    def synthetic_batch(self) -> Batch:
        """Random images of the configured shape with random boxes and rectangular masks."""
        syn, gen, num_classes = self.hp.synthetic, torch.Generator().manual_seed(self.seed), self.num_classes
        h, w = syn.height, syn.width
        images, targets = [], []
        for _ in range(self.hp.batch_size):
            xy = torch.rand(syn.objects, 2, generator=gen) * torch.tensor([w * 0.7, h * 0.7])
            wh = 16 + torch.rand(syn.objects, 2, generator=gen) * torch.tensor([w * 0.3, h * 0.3])
            boxes = torch.cat([xy, xy + wh], dim=1)
            masks = torch.zeros(syn.objects, h, w, dtype=torch.uint8)
            for m, (x1, y1, x2, y2) in zip(masks, boxes.int().tolist()):
                m[y1:y2, x1:x2] = 1
            images.append(torch.rand(3, h, w, generator=gen))
            targets.append({"boxes": boxes, "masks": masks,
                            "labels": torch.randint(1, num_classes, (syn.objects,), generator=gen)})
        return images, targets

    def loss(self, model: torch.nn.Module, batch: Batch) -> tuple[LossTerms, int]:
        """torchvision's loss dict (classifier, box regression, mask, objectness, RPN boxes), summed."""
        images, targets = batch
        if self._slot_counts_to_compile:  # once, under the step's autocast, before its forward (mask_rois.py says why)
            self._slot_counts_to_compile = False
            features_learn = torch.is_grad_enabled() and any(p.requires_grad for p in self.model.backbone.parameters())
            self.model.roi_heads.compile_every_slot_count(len(images), features_learn)
        return LossTerms.summed(model(images, targets)), len(images)

    def evaluate(self, model: torch.nn.Module, epoch: int) -> dict[str, float]:
        """{"BBOX": box mAP, "SEGM": mask mAP} over val2017, COCO@[0.5:0.95]; the same on every rank."""
        assert self.val is not None  # mode=train, where there is a dataset
        loader = make_shard_loader(self.val, self.ctx, batch_size=self.hp.eval_batch_size, workers=self.hp.workers,
                                   collate=as_lists, batches=self._eval_batches(), persistent=False)
        category_of = self.val.category_of
        detections = []
        for images, image_ids in loader:
            for image_id, found in zip(image_ids, model([im.to(self.device, non_blocking=True) for im in images])):
                masks = (found["masks"][:, 0] > 0.5).cpu().numpy().astype(np.uint8)
                rles = mask_utils.encode(np.asfortranarray(masks.transpose(1, 2, 0))) if len(masks) else []
                for (x1, y1, x2, y2), label, score, rle in zip(found["boxes"].tolist(), found["labels"].tolist(),
                                                               found["scores"].tolist(), rles):
                    rle["counts"] = rle["counts"].decode("ascii")  # a str pickles and prints as COCO's results do
                    detections.append({"image_id": image_id, "category_id": category_of[label], "score": score,
                                       "bbox": [x1, y1, x2 - x1, y2 - y1], "segmentation": rle})
        return evaluate_on_ranks(self.val.coco, detections, ["BBOX", "SEGM"])
