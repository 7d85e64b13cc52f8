"""NCF plugged into the harness: data on the device, fresh negatives per epoch, HR@10 evaluation.

    python -m harness.train model=ncf seed=1
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
from omegaconf import DictConfig
from torch.nn.functional import binary_cross_entropy_with_logits

from harness.interface import RunContext, scaled_learning_rate
from harness.interface.gather import sum_over_ranks
from harness.interface.sharding import bounds, shard
from reference_models.ncf import data as ncf_data
from reference_models.ncf.model import NeuMF
from reference_models.ncf.options import NCFOptions

Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def prepare(cfg: DictConfig) -> Path:
    """Generate the embedded dataset if it is missing; check that a real one is where it should be."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.ncf.generate` must not find itself already imported
        from reference_models.ncf.generate import GeneratorSpec, ensure

        ensure(GeneratorSpec(**cfg.dataset.generator), path)
    ncf_data.ratings_path(path)
    return path


class NCFBenchmark:
    def __init__(self, ctx: RunContext[NCFOptions]):
        hp = self.hp = ctx.options
        self.rank, self.world_size, self.device = ctx.rank, ctx.world_size, ctx.device
        # without a dataset (mode=throughput) the model has the configured real-scale counts
        self.data = (ncf_data.load(ctx.data_dir) if ctx.data_dir is not None
                     else counts_only(hp.synthetic.n_users, hp.synthetic.n_items))
        d, dev = self.data, ctx.device

        # The whole dataset lives on the device, as MLPerf's GPU implementations keep it: an epoch
        # is built with a few tensor ops instead of a DataLoader's per-sample Python work.
        self.train_users = torch.from_numpy(d.train_users).to(dev)
        self.train_items = torch.from_numpy(d.train_items).to(dev)
        self.positive_keys = torch.sort(self.train_users * d.n_items + self.train_items).values
        self.test_items = torch.from_numpy(d.test_items).to(dev)
        self.test_negatives = torch.from_numpy(d.test_negatives).to(dev)
        # Every rank draws the same negatives and order from the shared seed, then takes its shard.
        self.generator = torch.Generator(device=dev).manual_seed(ctx.shared_seed)

        self.lr = scaled_learning_rate(hp.learning_rate, hp.lr_scaling, hp.batch_size * ctx.world_size,
                                       hp.lr_reference_batch)
        self.model = NeuMF(d.n_users, d.n_items, hp.factors, list(hp.layers), hp.dropout).to(dev)
        self.optimizer = torch.optim.Adam(
            self.model.parameters(),
            lr=self.lr,
            betas=(hp.adam_beta1, hp.adam_beta2),
            eps=hp.adam_eps,
            fused=dev.type == "cuda",  # one kernel for every parameter; the CPU has no fused Adam
        )
        self.lr_scheduler = None
        self.grad_clip_norm = None

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {
            "global_batch_size": hp.batch_size * self.world_size,
            "opt_name": "adam",
            "opt_base_learning_rate": self.lr,
            "opt_adam_beta_1": hp.adam_beta1,
            "opt_adam_beta_2": hp.adam_beta2,
            "opt_adam_epsilon": hp.adam_eps,
            # NCF's own keys, named as in MLPerf's v0.5 NCF reference logs
            "model_hp_mf_dim": hp.factors,
            "model_hp_mlp_layer_sizes": list(hp.layers),
            "input_hp_num_neg": hp.train_negatives,
            "eval_hp_num_neg": int(self.test_negatives.shape[1]),
            "eval_hp_num_users": self.data.n_users,
        }

    def train_samples(self) -> int:
        return self.data.n_train * (1 + self.hp.train_negatives)

    def eval_samples(self) -> int:
        return self.data.n_users * (1 + int(self.test_negatives.shape[1]))

    def steps_per_epoch(self) -> int:
        return -(-self.train_samples() // (self.hp.batch_size * self.world_size))

    def train_batches(self, epoch: int) -> Iterator[Batch]:
        """Fresh negatives and a fresh order each epoch, made on the device (no copy to make)."""
        n_pos, n_neg = self.data.n_train, self.hp.train_negatives
        neg_users = self.train_users.repeat(n_neg)
        neg_items = ncf_data.sample_train_negatives(
            neg_users, self.positive_keys, self.data.n_items, self.generator
        )
        users = torch.cat((self.train_users, neg_users))
        items = torch.cat((self.train_items, neg_items))
        labels = torch.zeros(users.numel(), device=self.device)
        labels[:n_pos] = 1.0
        order = torch.randperm(users.numel(), generator=self.generator, device=self.device)
        # the epoch permuted once, three gathers in all: each step's batch is then a contiguous slice
        # (a view), not three gathers of 2^20 random positions per step (0.85-0.90 of the held-batch
        # step on an H200, docs/benchmarks/pipeline_2026-12-01.md); the same samples in the same order
        users, items, labels = users[order], items[order], labels[order]

        global_batch = self.hp.batch_size * self.world_size
        for start in range(0, users.numel(), global_batch):
            stop = min(start + global_batch, users.numel())
            if stop - start < self.world_size:
                break  # a tail too short to give every rank a sample
            mine = shard(range(start, stop), self.rank, self.world_size)  # this rank's contiguous part
            yield users[mine.start:mine.stop], items[mine.start:mine.stop], labels[mine.start:mine.stop]

    def synthetic_batch(self) -> Batch:
        """Uniform random (user, item) pairs at the configured sizes, one positive in five as in
        real epochs, drawn on the device."""
        b, d = self.hp.batch_size, self.data
        users = torch.randint(0, d.n_users, (b,), generator=self.generator, device=self.device)
        items = torch.randint(0, d.n_items, (b,), generator=self.generator, device=self.device)
        labels = (torch.arange(b, device=self.device) % (1 + self.hp.train_negatives) == 0).float()
        return users, items, labels

    def loss(self, model: torch.nn.Module, batch: Batch) -> tuple[torch.Tensor, int]:
        users, items, labels = batch
        logits = model(users, items)
        return binary_cross_entropy_with_logits(logits.float(), labels), users.numel()

    def evaluate(self, model: torch.nn.Module, epoch: int) -> float:
        """HR@K over each user's held-out item and its 999 negatives.

        A negative that scores exactly as high as the positive counts against it, so a model
        that scores everything alike gets no hits rather than all of them.
        """
        n_users = self.data.n_users
        mine = torch.arange(*bounds(n_users, self.rank, self.world_size), device=self.device)
        hits = torch.zeros((), dtype=torch.int64, device=self.device)
        for chunk in torch.split(mine, self.hp.eval_batch_users):
            cand = torch.cat((self.test_items[chunk, None], self.test_negatives[chunk]), dim=1)
            users = chunk[:, None].expand_as(cand)
            scores = model(users.reshape(-1), cand.reshape(-1)).view(cand.shape).float()
            beaten_by = (scores[:, 1:] >= scores[:, :1]).sum(dim=1)
            hits += (beaten_by < self.hp.topk).sum()
        sum_over_ranks(hits)  # integer hit counts: the same result as one rank gets
        return hits.item() / n_users  # sync point: the quality decides whether to stop


def counts_only(n_users: int, n_items: int) -> ncf_data.NCFData:
    """The model's sizes without a dataset (mode=throughput): one positive per user, no evaluation set."""
    users = np.arange(n_users, dtype=np.int64)
    empty = np.empty((n_users, 0), dtype=np.int64)
    return ncf_data.NCFData(n_users, n_items, users, users % n_items, users % n_items, empty,
                            users + 1, np.arange(1, n_items + 1))
