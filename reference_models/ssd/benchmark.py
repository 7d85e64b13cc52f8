"""SSD plugged into the harness: COCO through pycocotools, the reference's augmentation and loss, SGD
with warm-up and step decay, COCO box mAP on every rank's share of val2017 scored once on rank 0.

    python -m harness.train model=ssd seed=1
"""
from __future__ import annotations

from typing import Any

import torch
from harness.interface import LossTerms, RunContext, scaled_learning_rate
from harness.interface.loader import check_command, make_shard_loader
from reference_models.detection import coco
from reference_models.detection import decode as detection_decode
from reference_models.detection.cocoeval import evaluate_on_ranks, my_images
from reference_models.detection.resnet import load_weights
from reference_models.detection.schedule import WarmupMultiStep
from reference_models.detection.training import CocoTraining
from reference_models.ssd import decode as ssd_decode
from reference_models.ssd.boxes import Encoder, boxes_per_location, default_boxes
from reference_models.ssd.loss import ssd_loss_terms
from reference_models.ssd.model import SSD300
from reference_models.ssd.options import SSDOptions
from reference_models.ssd.transforms import EvalTransform, DeviceFinish, TrainTransform, collate_truth
from reference_models.vision import decoders
from reference_models.vision.prefetch import DeviceBatches

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class SSDBenchmark(CocoTraining):
    """Its training batches: images, encoded box offsets, box labels; on a GPU, batches on it, their
    targets encoded there ahead of the step (and, with a GPU decoder, the images decoded, cropped and
    jittered there too)."""

    def __init__(self, ctx: RunContext[SSDOptions]):
        hp = self.hp = ctx.options
        self.ctx, self.rank, self.world_size, self.device = ctx, ctx.rank, ctx.world_size, ctx.device
        self.global_batch = hp.batch_size * ctx.world_size
        self.seed = ctx.shared_seed
        # without a dataset (mode=throughput): the configured classes, and the schedule's length in
        # measured steps
        self.val = None if ctx.data_dir is None else coco.CocoSplit(
            ctx.data_dir, "val", EvalTransform(hp.image_size), keep_empty=True, include_crowd=True)
        if self.val is not None:  # a bad validation image is found now, not after the first training epoch
            self.val.check_images(self._eval_shard(), check_command(ctx))
        # the synthetic batch draws its labels from the model's own classes (the dataset's, where there is one)
        self.num_classes = num_classes = hp.synthetic.num_classes if self.val is None else self.val.num_classes
        self.model = SSD300(num_classes, boxes_per_location(hp.aspect_ratios), hp.backbone_layers,
                            hp.backbone_widths, hp.backbone_stem, [list(b) for b in hp.extra_blocks])
        if hp.backbone_weights:
            load_weights(self.model.backbone, hp.backbone_weights)
        dboxes = default_boxes(hp.image_size, self.model.feature_sizes(hp.image_size), list(hp.anchor_scales),
                               list(hp.anchor_steps), [list(r) for r in hp.aspect_ratios])
        self.encoder = Encoder(dboxes, hp.match_iou)
        self.model.to(ctx.device)
        self.memory_format = torch.channels_last if hp.channels_last else torch.contiguous_format
        self.model.to(memory_format=self.memory_format)

        self.start_training(ctx, str(hp.decode))
        if ctx.data_dir is not None:
            # On a GPU the targets are encoded there, a batch at once (Encoder.encode_batch: the same
            # targets), and the images normalised there (DeviceFinish: the same values, a quarter
            # of the bytes to pin and copy); a CPU's workers do both per image as they always did
            cuda = ctx.device.type == "cuda"
            transform = TrainTransform(None if cuda else self.encoder, hp.image_size, hp.max_samples,
                                       hp.color_jitter, device_finish=cuda)
            train: Any = coco.training_split(ctx, transform, include_crowd=True)
            self.train = train  # what data_findings counts, whichever path reads the files
            self.decode = detection_decode.choose(str(hp.decode), ctx.device)
            collate: Any = collate_truth if cuda else None
            if cuda and self.decode == "cpu":  # the workers' images and ground truth, finished on a side stream
                self._finish = DeviceFinish(ctx.device)
                self._device_batches = DeviceBatches(self._encoded, ctx.device)
            if self.decode != "cpu":  # the workers read the files and plan; the GPU decodes (ssd/decode.py)
                plan = ssd_decode.SSDPlan(hp.max_samples, hp.color_jitter)
                train = detection_decode.EncodedCoco(detection_decode.without_transform(train), plan, self.decode)
                decoder = decoders.make_decoder(self.decode, ctx.device, cpu_threads=hp.workers)
                self._device_batches = ssd_decode.SSDBatches(decoder, self.encoder, hp.image_size, ctx.device,
                                                                   plan.enabled, self.memory_format, hp.batch_size)
                collate = ssd_decode.collate_ssd
            self.n_train = len(train)
            self.loader = coco.training_loader(train, num_classes, ctx, hp.batch_size, hp.workers,
                                               collate)
            self._steps = len(self.loader)

        self.lr = scaled_learning_rate(hp.learning_rate, hp.lr_scaling, self.global_batch, hp.lr_reference_batch)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=self.lr, momentum=hp.momentum,
                                         weight_decay=hp.weight_decay)
        self.warmup_steps = max(1, round(hp.lr_warmup_epochs * self._steps))  # ruleset 0.7.0 wants >= 1
        self.schedule = WarmupMultiStep(self.warmup_steps, 1 - 1 / 2 ** hp.lr_warmup_factor,
                                        tuple(e * self._steps for e in hp.lr_decay_epochs), hp.lr_decay_factor)
        self.lr_scheduler = self.schedule.scheduler(self.optimizer)
        self.grad_clip_norm = None

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {  # every key of closed_ssd.yaml (ruleset 0.7.0), named and valued as the reference logs them
            "global_batch_size": self.global_batch,
            "model_bn_span": hp.batch_size,  # batch norm over each rank's batch, no group BN
            "opt_name": "sgd_with_momentum",
            "opt_base_learning_rate": self.lr,
            "opt_weight_decay": hp.weight_decay,
            "opt_learning_rate_warmup_steps": self.warmup_steps,
            "opt_learning_rate_warmup_factor": hp.lr_warmup_factor,
            "opt_learning_rate_decay_boundary_epochs": list(hp.lr_decay_epochs),
            "opt_learning_rate_decay_factor": hp.lr_decay_factor,
            "max_samples": hp.max_samples,  # random-crop attempts per drawn crop mode
        }

    def _eval_shard(self) -> range:
        assert self.val is not None  # mode=train, where there is a dataset
        return my_images(len(self.val), self.rank, self.world_size, self.hp.eval_batch_size)

    def _encoded(self, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor], slot: int
                 ) -> tuple[Batch, tuple[torch.Tensor, ...]]:
        """DeviceBatches' work for the workers' decoded batches (collate_truth's, pinned: uint8
        images and the ground truth): the copy to the device, ToTensor and Normalize, the targets'
        encoding, queued on its side stream ahead of the step."""
        pixels, boxes, labels = (t.to(self.device, non_blocking=True) for t in batch)
        images = self._finish(pixels).contiguous(memory_format=self.memory_format)
        gloc, glabel = self.encoder.encode_batch(boxes, labels)
        return (images, gloc, glabel), batch

    def synthetic_batch(self) -> Batch:
        """Random images with `synthetic.objects` random boxes each, encoded as real targets are."""
        hp, gen = self.hp, torch.Generator().manual_seed(self.seed)
        b, n = hp.batch_size, hp.synthetic.objects
        corners = torch.rand(b, n, 2, generator=gen) * 0.7
        sides = 0.05 + torch.rand(b, n, 2, generator=gen) * 0.25
        boxes = torch.cat([corners, corners + sides], dim=2)
        labels = torch.randint(1, self.num_classes, (b, n), generator=gen)
        encoded = [self.encoder.encode(bx, lb) for bx, lb in zip(boxes, labels)]
        images = torch.randn(b, 3, hp.image_size, hp.image_size, generator=gen)
        return images, torch.stack([e[0] for e in encoded]), torch.stack([e[1] for e in encoded])

    def loss(self, model: torch.nn.Module, batch: Batch) -> tuple[LossTerms, int]:
        images, gloc, glabel = batch
        ploc, plabel = model(images.contiguous(memory_format=self.memory_format))
        total, terms = ssd_loss_terms(ploc, plabel, gloc, glabel, self.hp.negatives_per_positive)
        return LossTerms(total, terms), images.shape[0]

    def evaluate(self, model: torch.nn.Module, epoch: int) -> float:
        """COCO box mAP@[0.5:0.95] over val2017; every rank returns the same value."""
        hp = self.hp
        assert self.val is not None  # mode=train, where there is a dataset
        loader = make_shard_loader(self.val, self.ctx, batch_size=hp.eval_batch_size, workers=hp.workers,
                                   indices=self._eval_shard(), persistent=False)
        category_of = self.val.category_of
        detections = []
        for images, image_ids, sizes in loader:
            ploc, plabel = model(images.to(self.device, non_blocking=True).contiguous(memory_format=self.memory_format))
            found = self.encoder.decode(ploc, plabel, hp.score_threshold, hp.nms_iou, hp.max_detections)
            for image_id, (h, w), (boxes, labels, scores) in zip(image_ids.tolist(), sizes.tolist(), found):
                scale = torch.tensor([w, h, w, h], dtype=torch.float32)
                for (x1, y1, x2, y2), label, score in zip((boxes.cpu() * scale).tolist(), labels.tolist(),
                                                          scores.tolist()):
                    detections.append({"image_id": image_id, "category_id": category_of[label],
                                       "bbox": [x1, y1, x2 - x1, y2 - y1], "score": score})
        return evaluate_on_ranks(self.val.coco, detections, ["BBOX"])["BBOX"]
