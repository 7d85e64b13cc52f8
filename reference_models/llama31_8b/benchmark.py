"""Llama 3.1 8B pretraining plugged into the harness: packed C4 sequences, next-token cross-entropy,
AdamW with a linear warm-up and a cosine decay, and the validation loss (log perplexity) of the first
eval_samples validation sequences.

    python -m harness.train model=llama31_8b seed=1
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any, Iterator, cast

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf

from harness.interface import Logged, RunContext, scaled_learning_rate
from harness.interface.gather import sum_over_ranks
from harness.interface.sharding import shard
from reference_models.llama import parallel
from reference_models.llama.model import Llama, LlamaShape, RopeScaling
from reference_models.llama.schedule import cosine_with_warmup
from reference_models.llama31_8b import c4
from reference_models.llama31_8b.options import Llama31Options
from reference_models.llama31_8b.tokenizer import load


def prepare(cfg: DictConfig) -> Path:
    """Generate the embedded corpus if it is missing; check that a real one has its splits."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.llama31_8b.generate` must not find itself imported
        from reference_models.llama31_8b.generate import CorpusSpec, ensure

        ensure(CorpusSpec(**cast(dict, OmegaConf.to_container(cfg.dataset.generator))), path)
    c4.split_files(path, c4.TRAIN_GLOB)
    c4.split_files(path, c4.VALIDATION_GLOB)
    return path


def tokenizer_path(hp: Llama31Options, data_dir: Path) -> Path:
    """The tokenizer: model.tokenizer, or the dataset folder's own tokenizer.model."""
    return Path(hp.tokenizer) if hp.tokenizer else data_dir / c4.TOKENIZER_FILE


class Llama31Benchmark:
    def __init__(self, ctx: RunContext[Llama31Options]):
        hp = self.hp = ctx.options
        self.rank, self.world_size, self.device = ctx.rank, ctx.world_size, ctx.device
        self.global_batch = hp.batch_size * ctx.world_size
        self.shared_seed = ctx.shared_seed
        vocab, self._steps = hp.vocab_size, ctx.cfg.throughput_steps
        if ctx.data_dir is not None:
            path = tokenizer_path(hp, ctx.data_dir)
            tokenizer = load(path)
            key = hashlib.sha256(path.read_bytes()).hexdigest()
            self.train = c4.load_split(ctx.data_dir, c4.TRAIN_GLOB, tokenizer, key, hp.seq_len)
            self.valid = c4.load_split(ctx.data_dir, c4.VALIDATION_GLOB, tokenizer, key, hp.seq_len)
            vocab, self._steps = tokenizer.vocab_size, len(self.train) // self.global_batch
            if self._steps == 0:
                raise c4.C4Error(f"{ctx.data_dir}: {len(self.train)} training sequences of {hp.seq_len} tokens make "
                                 f"no global batch of {self.global_batch}: lower model.batch_size or use fewer ranks")
            if len(self.valid) < hp.eval_samples:
                raise c4.C4Error(f"{ctx.data_dir}: the validation files make {len(self.valid)} sequences of "
                                 f"{hp.seq_len} tokens, fewer than model.eval_samples={hp.eval_samples}")
        self.shape = LlamaShape(vocab_size=vocab, dim=hp.dim, layers=hp.layers, heads=hp.heads, kv_heads=hp.kv_heads,
                                ffn_dim=hp.ffn_dim, max_seq_len=hp.seq_len, norm_eps=hp.norm_eps,
                                rope_theta=hp.rope_theta, rope_scaling=RopeScaling() if hp.rope_scaling else None)
        with ctx.device:  # made where it runs: no host copy of 8B parameters to initialise and move
            self.model = Llama(self.shape, hp.init_std)
        ctx.convert_layers(self.model)  # fp8=true: before the blocks are wrapped, compiled and sharded
        if hp.activation_checkpointing:
            parallel.checkpoint_blocks(self.model)
        if hp.compile and ctx.device.type == "cuda":
            parallel.compile_blocks(self.model)
        # FSDP shards the model itself, before the optimizer takes its parameters: the harness trains it
        # as built instead of wrapping it in DDP (the contract's `sharded`)
        self.sharded = hp.fsdp and ctx.world_size > 1
        if self.sharded:
            parallel.shard(self.model, ctx.device, hp.fsdp_bf16)
        self.peak_lr = scaled_learning_rate(hp.learning_rate, hp.lr_scaling, self.global_batch, hp.lr_reference_batch)
        matrices, vectors = parallel.decayed(self.model)
        self.optimizer = torch.optim.AdamW(
            [{"params": matrices, "weight_decay": hp.weight_decay}, {"params": vectors, "weight_decay": 0.0}],
            lr=self.peak_lr, betas=(hp.adam_beta1, hp.adam_beta2), eps=hp.adam_eps,
            fused=ctx.device.type == "cuda" or None)
        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, cosine_with_warmup(hp.lr_warmup_steps, hp.max_steps, hp.end_lr_factor))
        self.grad_clip_norm = hp.grad_clip

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {
            "global_batch_size": self.global_batch,
            "gradient_accumulation_steps": 1,
            "max_sequence_length": hp.seq_len,
            "max_steps": hp.max_steps,
            "opt_name": "adamw",
            "opt_base_learning_rate": self.peak_lr,
            "opt_end_learning_rate": self.peak_lr * hp.end_lr_factor,
            "opt_learning_rate_warmup_steps": hp.lr_warmup_steps,
            "opt_learning_rate_decay_steps": hp.max_steps - hp.lr_warmup_steps,
            "opt_learning_rate_decay_schedule": "cosine with linear warmup",
            "opt_adamw_beta_1": hp.adam_beta1,
            "opt_adamw_beta_2": hp.adam_beta2,
            "opt_adamw_epsilon": hp.adam_eps,
            "opt_adamw_weight_decay": hp.weight_decay,
            "opt_gradient_clip_norm": Logged(hp.grad_clip, {"norm": "global L2"}),
        }

    def steps_per_epoch(self) -> int:
        return self._steps

    def train_samples(self) -> int:
        return len(self.train)  # sequences of seq_len tokens in one pass over the training stream

    def eval_samples(self) -> int:
        return self.hp.eval_samples

    def train_batches(self, epoch: int) -> Iterator[torch.Tensor]:
        """This rank's share of each global batch of sequences, (batch_size, seq_len + 1) int64 on the
        host, in an order drawn from the shared seed each epoch (the same on every rank)."""
        order = np.random.default_rng(self.shared_seed + epoch).permutation(len(self.train))
        for step in range(self._steps):
            mine = shard(order[step * self.global_batch:(step + 1) * self.global_batch], self.rank, self.world_size)
            yield torch.from_numpy(self.train.rows(mine))

    def synthetic_batch(self) -> torch.Tensor:
        gen = torch.Generator(device=self.device).manual_seed(self.shared_seed)
        return torch.randint(0, self.shape.vocab_size, (self.hp.batch_size, self.hp.seq_len + 1), generator=gen,
                             device=self.device)

    def loss(self, model: torch.nn.Module, batch: torch.Tensor) -> tuple[torch.Tensor, int]:
        logits = model(batch[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1).float(), batch[:, 1:].flatten()), batch.shape[0]

    def evaluate(self, model: torch.nn.Module, epoch: int) -> float:
        """The mean next-token cross-entropy (log perplexity) over the first eval_samples validation
        sequences, each rank a contiguous share; every rank runs as many forward passes (FSDP gathers
        each block's parameters from all ranks at each), a rank with none left on a repeated batch
        that counts for nothing."""
        hp = self.hp
        mine = shard(np.arange(hp.eval_samples), self.rank, self.world_size)
        most = math.ceil(hp.eval_samples / self.world_size)  # the largest rank's share
        passes = math.ceil(most / hp.eval_batch_size)
        totals = torch.zeros(2, dtype=torch.float64, device=self.device)
        for i in range(passes):
            rows = mine[i * hp.eval_batch_size:(i + 1) * hp.eval_batch_size]
            batch = torch.from_numpy(self.valid.rows(rows if len(rows) else np.arange(1))).to(self.device)
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.flatten(0, 1).float(), batch[:, 1:].flatten(), reduction="sum")
            if len(rows):
                totals += torch.stack([loss.double(), torch.tensor(batch[:, 1:].numel(), dtype=torch.float64,
                                                                   device=self.device)])
        sum_over_ranks(totals)
        return float(totals[0] / totals[1])
