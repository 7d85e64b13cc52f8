"""DLRM-DCNv2 plugged into the harness: multi-hot Criteo days in file order, binary cross-entropy on
click logits, Adagrad with the reference's warm-up/decay policy, and the validation set's ROC AUC.

    python -m harness.train model=dlrm_dcnv2 seed=1
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Iterator, cast

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from torch.nn.functional import binary_cross_entropy_with_logits

from harness.interface import RunContext, scaled_learning_rate
from harness.interface.gather import score_on_main
from harness.interface.sharding import bounds
from reference_models.dlrm_dcnv2 import data as criteo
from reference_models.dlrm_dcnv2.criteo import DENSE_FEATURES, MULTI_HOT_SIZES
from reference_models.dlrm_dcnv2.metric import auc
from reference_models.dlrm_dcnv2.model import DLRMDCNv2, DLRMShape
from reference_models.dlrm_dcnv2.options import DLRMOptions

log = logging.getLogger(__name__)
Batch = tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]
# the reference's fixed Adagrad settings (dlrm_main.py), which the closed rules check
ADAGRAD_LR_DECAY, ADAGRAD_INIT_ACC, ADAGRAD_EPS, WEIGHT_DECAY = 0.0, 0.0, 1e-8, 0.0
MIN_LR = 1e-7  # the reference's floor during its decay


def prepare(cfg: DictConfig) -> Path:
    """Generate the embedded days if they are missing; check that a real folder holds its days."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.dlrm_dcnv2.generate` must not find itself imported
        from reference_models.dlrm_dcnv2.generate import GeneratorSpec, ensure

        ensure(GeneratorSpec(**cast(dict, OmegaConf.to_container(cfg.dataset.generator))), path)
    criteo.find_days(path)
    return path


def policy_lr(count: int, base: float, warmup: int, decay_start: int, decay_steps: int) -> float:
    """The rate the reference's LRPolicyScheduler (lr_scheduler.py) sets at its step count `count` (1 for the
    first training step): linear warm-up, then a quadratic decay to MIN_LR. Where it returns its last
    value instead (between the warm-up and the decay, and after the decay) it is that value here too."""
    if count < warmup:
        return base * count / warmup
    if decay_start <= count < decay_start + decay_steps:
        return max(MIN_LR, base * ((decay_steps - (count - decay_start)) / decay_steps) ** 2)
    if decay_steps == 0:
        return base
    if count >= decay_start + decay_steps:
        return max(MIN_LR, base / decay_steps ** 2)
    return base * (warmup - 1) / warmup if warmup else base  # frozen at the warm-up's last rate


def policy_factor(base: float, warmup: int, decay_start: int, decay_steps: int) -> Callable[[int], float]:
    """LambdaLR's factor at its step e (0 before the first step): the reference's count is e + 1."""
    return lambda e: policy_lr(e + 1, base, warmup, decay_start, decay_steps) / base


class DLRMBenchmark:
    def __init__(self, ctx: RunContext[DLRMOptions]):
        hp = self.hp = ctx.options
        self.rank, self.world_size, self.device = ctx.rank, ctx.world_size, ctx.device
        self.global_batch = hp.batch_size * ctx.world_size
        self.shared_seed = ctx.shared_seed
        self.data = criteo.load(ctx.data_dir) if ctx.data_dir is not None else None
        if self.data is not None and self.data.train.hotness() != MULTI_HOT_SIZES:
            raise criteo.DatasetError(f"{ctx.data_dir}: multi-hot widths {self.data.train.hotness()}, not the "
                                      f"reference's {MULTI_HOT_SIZES}")
        self.shape = DLRMShape(tuple(hp.num_embeddings_per_feature), hp.embedding_dim, tuple(hp.bottom_mlp),
                               tuple(hp.top_mlp), hp.dcn_layers, hp.dcn_low_rank)
        self.sparse_gradients = hp.sparse_gradients and ctx.world_size == 1
        if hp.sparse_gradients and not self.sparse_gradients and ctx.rank == 0:
            log.info("model.sparse_gradients: dense table gradients on %d ranks (DDP's NCCL all-reduce takes no "
                     "sparse tensor)", ctx.world_size)
        with ctx.device:  # made where it runs: the real tables are 105 GB, no host copy to make and move
            self.model = DLRMDCNv2(self.shape, self.sparse_gradients)
        if self.sparse_gradients:
            # Adagrad builds the sparse updates itself, from a coalesced gradient: torch's default for them
            # (no invariant checks), said explicitly so that it does not warn on every run
            torch.sparse.check_sparse_tensor_invariants.disable()
        if hp.compile and ctx.device.type == "cuda":
            self.model.compile_dense()
        self.lr = scaled_learning_rate(hp.learning_rate, hp.lr_scaling, self.global_batch, hp.lr_reference_batch)
        # One Adagrad over every parameter: the reference applies Adagrad to the tables in the backward
        # pass (FBGEMM's fused EXACT_ADAGRAD) and to the dense parts after it, with the same settings;
        # rows no sample touched get a zero gradient here (or none, with sparse gradients), which leaves
        # them and their state unchanged: the same update either way (lr_decay and weight decay are 0).
        self.optimizer = torch.optim.Adagrad(self.model.parameters(), lr=self.lr, lr_decay=ADAGRAD_LR_DECAY,
                                             weight_decay=WEIGHT_DECAY, initial_accumulator_value=ADAGRAD_INIT_ACC,
                                             eps=ADAGRAD_EPS)
        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, policy_factor(self.lr, hp.lr_warmup_steps, hp.lr_decay_start, hp.lr_decay_steps))
        self.grad_clip_norm = None

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {
            "global_batch_size": self.global_batch,
            "gradient_accumulation_steps": 1,
            "opt_name": "adagrad",
            "opt_base_learning_rate": self.lr,
            "opt_adagrad_learning_rate_decay": ADAGRAD_LR_DECAY,
            "opt_weight_decay": WEIGHT_DECAY,
            "opt_adagrad_initial_accumulator_value": ADAGRAD_INIT_ACC,
            "opt_adagrad_epsilon": ADAGRAD_EPS,
            "opt_learning_rate_warmup_steps": hp.lr_warmup_steps,
            "opt_learning_rate_decay_start_step": hp.lr_decay_start,
            "opt_learning_rate_decay_steps": hp.lr_decay_steps,
        }

    def _loaded(self) -> criteo.CriteoMultiHot:
        if self.data is None:
            raise RuntimeError("no dataset: mode=throughput trains on synthetic_batch() alone")
        return self.data

    def train_samples(self) -> int:
        return len(self._loaded().train)

    def eval_samples(self) -> int:
        return len(self._loaded().validation)

    def steps_per_epoch(self) -> int:
        return -(-self.train_samples() // self.global_batch)

    def train_batches(self, epoch: int) -> Iterator[Batch]:
        """Global batches of consecutive rows in file order, as the reference reads the days (the
        preprocessing shuffled them, and the reference's multi-hot reader shuffles nothing), each rank
        its contiguous share; the last, shorter batch too."""
        rows = self._loaded().train
        for start in range(0, len(rows), self.global_batch):
            stop = min(start + self.global_batch, len(rows))
            if stop - start < self.world_size:
                break  # a tail too short to give every rank a sample
            lo, hi = bounds(stop - start, self.rank, self.world_size)
            yield _tensors(*rows.take(start + lo, start + hi))

    def synthetic_batch(self) -> Batch:
        """Random samples of the real shapes: dense values in the stored range, ids below each table's
        rows, a third of the labels clicks; drawn on the device."""
        b, gen = self.hp.batch_size, torch.Generator(device=self.device).manual_seed(self.shared_seed)
        dense = torch.rand((b, DENSE_FEATURES), generator=gen, device=self.device) * 8
        sparse = [torch.randint(0, n, (b, hot), generator=gen, device=self.device, dtype=torch.int32)
                  for n, hot in zip(self.shape.cardinalities, MULTI_HOT_SIZES)]
        labels = (torch.rand(b, generator=gen, device=self.device) < 1 / 3).float()
        return dense, sparse, labels

    def loss(self, model: torch.nn.Module, batch: Batch) -> tuple[torch.Tensor, int]:
        dense, sparse, labels = batch
        return binary_cross_entropy_with_logits(model(dense, sparse).float(), labels), labels.numel()

    def evaluate(self, model: torch.nn.Module, epoch: int) -> float:
        """ROC AUC over the whole validation set (the first half of the last day), of the click
        probabilities sigmoid(logit) in fp32 as the reference scores them: each rank scores a
        contiguous share, rank 0 ranks them all together (an AUC is no sum of parts)."""
        rows = self._loaded().validation
        lo, hi = bounds(len(rows), self.rank, self.world_size)
        scores, labels = [], []
        for start in range(lo, hi, self.hp.eval_batch_size):
            dense, sparse, y = _tensors(*rows.take(start, min(start + self.hp.eval_batch_size, hi)))
            logits = model(dense.to(self.device), [ids.to(self.device) for ids in sparse])
            scores.append(torch.sigmoid(logits.float()).cpu().numpy())
            labels.append(y.numpy())
        mine = (np.concatenate(scores or [np.empty(0, np.float32)]), np.concatenate(labels or [np.empty(0, np.float32)]))
        return score_on_main([mine], lambda parts: auc(np.concatenate([p[0] for p in parts]),
                                                       np.concatenate([p[1] for p in parts])))


def _tensors(dense: np.ndarray, sparse: list[np.ndarray], labels: np.ndarray) -> Batch:
    return torch.from_numpy(dense), [torch.from_numpy(ids) for ids in sparse], torch.from_numpy(labels)
