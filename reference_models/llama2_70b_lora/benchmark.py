"""Llama 2 70B LoRA fine-tuning plugged into the harness: a frozen Llama base read from a Hugging Face
checkpoint, LoRA adapters on its attention projections, packed GovReport rows, the reference's loss
(next-token cross-entropy over the labelled tokens), AdamW on the adapters with a cosine rate, and the
validation loss over the summaries.

    python -m harness.train model=llama2_70b_lora seed=1
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterator, cast

import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf

from harness.interface import Logged, RunContext
from harness.interface.gather import sum_over_ranks
from harness.interface.sharding import shard
from reference_models.llama import parallel
from reference_models.llama.model import Llama, LlamaShape
from reference_models.llama.schedule import cosine_with_warmup
from reference_models.llama2_70b_lora import checkpoint, govreport
from reference_models.llama2_70b_lora.lora import adapters, apply_lora
from reference_models.llama2_70b_lora.options import Llama2LoraOptions


def prepare(cfg: DictConfig) -> Path:
    """Generate the embedded dataset and its base if missing; check that a real one has its splits."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.llama2_70b_lora.generate` must not find itself imported
        from reference_models.llama2_70b_lora.generate import CorpusSpec, ensure

        ensure(CorpusSpec(**cast(dict, OmegaConf.to_container(cfg.dataset.generator))), path)
    govreport.split_path(path, govreport.TRAIN_FILE)
    govreport.split_path(path, govreport.VALIDATION_FILE)
    return path


def base_path(hp: Llama2LoraOptions, data_dir: Path) -> Path:
    """The base model's folder: model.base, or the dataset folder's own base/."""
    from reference_models.llama2_70b_lora.generate import BASE_DIR

    return Path(hp.base) if hp.base else data_dir / BASE_DIR


def sequence_losses(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(each row's mean cross-entropy over its labelled next tokens, whether it has any): position t
    predicts labels[t + 1], -100 is no loss, as Hugging Face's causal LM loss over one sequence."""
    targets = labels[:, 1:]
    per_token = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), targets.flatten(),
                                ignore_index=govreport.IGNORE, reduction="none").view(targets.shape)
    counted = (targets != govreport.IGNORE).sum(1)
    return per_token.sum(1) / counted.clamp(min=1), counted > 0


class Llama2LoraBenchmark:
    def __init__(self, ctx: RunContext[Llama2LoraOptions]):
        hp = self.hp = ctx.options
        self.rank, self.world_size, self.device = ctx.rank, ctx.world_size, ctx.device
        self.global_batch = hp.batch_size * ctx.world_size
        self.shared_seed = ctx.shared_seed
        self.shape = LlamaShape(vocab_size=hp.vocab_size, dim=hp.dim, layers=hp.layers, heads=hp.heads,
                                kv_heads=hp.kv_heads, ffn_dim=hp.ffn_dim, max_seq_len=hp.seq_len,
                                norm_eps=hp.norm_eps, rope_theta=hp.rope_theta, rope_scaling=None,
                                fused_qkv=hp.fused_qkv)
        base = None
        self._steps = ctx.cfg.throughput_steps
        if ctx.data_dir is not None:
            self.train = govreport.read_split(govreport.split_path(ctx.data_dir, govreport.TRAIN_FILE))
            self.valid = govreport.read_split(govreport.split_path(ctx.data_dir, govreport.VALIDATION_FILE))
            self._steps = len(self.train) // self.global_batch
            if self._steps == 0:
                raise govreport.GovReportError(f"{ctx.data_dir}: {len(self.train)} training rows make no global "
                                               f"batch of {self.global_batch}: lower model.batch_size or use fewer ranks")
            base = base_path(hp, ctx.data_dir)
            self.shape = checkpoint.read_shape(base, self.train.seq_len, hp.fused_qkv)
        # made without memory first: a base is then given its weights shard by shard (70B in fp32 fits no
        # single GPU); with no base (mode=throughput) the decoder's own initialisation stands in for it
        with torch.device("meta"):
            self.model = Llama(self.shape)
            apply_lora(self.model, hp.lora_targets, hp.lora_rank, hp.lora_alpha, hp.lora_dropout)
        ctx.convert_layers(self.model)  # fp8=true: before the blocks are wrapped, compiled and sharded
        if hp.activation_checkpointing:
            parallel.checkpoint_blocks(self.model)
        if hp.compile and ctx.device.type == "cuda":
            parallel.compile_blocks(self.model)
        self.sharded = hp.fsdp and ctx.world_size > 1
        if self.sharded:
            parallel.shard(self.model, ctx.device, hp.fsdp_bf16)
        self.model.to_empty(device=ctx.device)
        self.model.init_rope()
        if base is None:
            self.model.init_weights(0.02)
        shared = torch.Generator().manual_seed(ctx.shared_seed)  # the same adapters on every rank
        for adapter in adapters(self.model):
            adapter.reset_adapter(shared)
        if base is not None:
            checkpoint.load_base(self.model, self.shape, base)
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(trainable, lr=hp.learning_rate, betas=(hp.adam_beta1, hp.adam_beta2),
                                           eps=hp.adam_eps, weight_decay=hp.weight_decay,
                                           fused=ctx.device.type == "cuda" or None)
        self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, cosine_with_warmup(0, hp.max_steps, 0.0))  # HF cosine, no warm-up
        self.grad_clip_norm = hp.grad_clip

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {
            "global_batch_size": self.global_batch,
            "gradient_accumulation_steps": 1,
            "max_sequence_length": self.shape.max_seq_len,
            "opt_name": "adamw",
            "opt_base_learning_rate": hp.learning_rate,
            "opt_learning_rate_warmup_factor": 0.0,
            "opt_learning_rate_training_steps": hp.max_steps,
            "opt_learning_rate_decay_schedule": "cosine",
            "opt_adamw_beta_1": hp.adam_beta1,
            "opt_adamw_beta_2": hp.adam_beta2,
            "opt_adamw_epsilon": hp.adam_eps,
            "opt_adamw_weight_decay": hp.weight_decay,
            "opt_gradient_clip_norm": Logged(hp.grad_clip, {"norm": "global L2"}),
            "lora_rank": hp.lora_rank,
            "lora_alpha": hp.lora_alpha,
            "lora_dropout": hp.lora_dropout,
        }

    def steps_per_epoch(self) -> int:
        return self._steps

    def train_samples(self) -> int:
        return len(self.train)  # packed rows of one pass

    def eval_samples(self) -> int:
        return len(self.valid)

    def train_batches(self, epoch: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """This rank's share of each global batch of rows, (tokens, labels) int64 on the host, in an order
        drawn from the shared seed each epoch (the same on every rank)."""
        order = np.random.default_rng(self.shared_seed + epoch).permutation(len(self.train))
        for step in range(self._steps):
            mine = shard(order[step * self.global_batch:(step + 1) * self.global_batch], self.rank, self.world_size)
            tokens, labels = self.train.rows(mine)
            yield torch.from_numpy(tokens), torch.from_numpy(labels)

    def synthetic_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator(device=self.device).manual_seed(self.shared_seed)
        tokens = torch.randint(0, self.shape.vocab_size, (self.hp.batch_size, self.shape.max_seq_len),
                               generator=gen, device=self.device)
        return tokens, tokens.clone()

    def loss(self, model: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, int]:
        """The mean over this rank's rows of each row's mean token loss: with one row per GPU, as the
        reference runs, exactly its loss; ranks then average, as its data-parallel gradients do."""
        tokens, labels = batch
        losses, counted = sequence_losses(model(tokens), labels)
        return (losses * counted).sum() / counted.sum().clamp(min=1), tokens.shape[0]

    def evaluate(self, model: torch.nn.Module, epoch: int) -> float:
        """The validation loss as the reference's Trainer gives it (one row per forward pass): the mean over
        the validation rows of each row's mean cross-entropy over its labelled (summary) tokens; a row
        without any is left out. Every rank runs as many forward passes (FSDP gathers each block's
        parameters from all ranks at each), a rank with none left on a repeated row that counts for nothing."""
        hp = self.hp
        mine = shard(np.arange(len(self.valid)), self.rank, self.world_size)
        most = math.ceil(len(self.valid) / self.world_size)
        totals = torch.zeros(2, dtype=torch.float64, device=self.device)
        for i in range(math.ceil(most / hp.eval_batch_size)):
            rows = mine[i * hp.eval_batch_size:(i + 1) * hp.eval_batch_size]
            tokens, labels = (torch.from_numpy(a).to(self.device) for a in self.valid.rows(rows if len(rows) else
                                                                                           np.arange(1)))
            losses, counted = sequence_losses(model(tokens), labels)
            if len(rows):
                totals += torch.stack([(losses * counted).sum().double(), counted.sum().double()])
        sum_over_ranks(totals)
        return float(totals[0] / totals[1])
