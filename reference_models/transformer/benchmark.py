"""The Transformer plugged into the harness: token-bucketed batches, the reference's smoothed loss and
learning rate, beam search, and the reference's BLEU.

    python -m harness.train model=transformer seed=1
"""
from __future__ import annotations

import contextlib
import math
from functools import partial
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Optional, cast

import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.data import DataLoader

from harness.interface import Logged, RunContext, scaled_learning_rate
from harness.interface.gather import score_on_main
from harness.interface.workers import start_workers, stop_with_parent, worker_options
from reference_models.transformer import data as wmt
from reference_models.transformer import metric
from reference_models.transformer.beam import beam_search
from reference_models.transformer.model import Transformer
from reference_models.transformer.options import Attention, TransformerOptions
from reference_models.transformer.schedule import InverseSqrt
from reference_models.transformer.tokenizer import EOS_ID, PAD_ID

def prepare(cfg: DictConfig) -> Path:
    """Generate the embedded corpus if it is missing; check that a real one has every file."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.transformer.generate` must not find itself imported
        from reference_models.transformer.generate import CorpusSpec, ensure

        ensure(CorpusSpec.from_flat(cast(dict, OmegaConf.to_container(cfg.dataset.generator))), path)
    wmt.check_layout(path)
    return path


def smoothed_cross_entropy(logits: torch.Tensor, target: torch.Tensor, smoothing: float) -> torch.Tensor:
    """The reference's loss, mean over the target's real tokens: cross-entropy against 1 - smoothing
    on the target and smoothing / (V - 1) on every other token, less its minimum (the entropy of
    that distribution). PyTorch's label_smoothing=e puts e / V on every token instead, so
    e = smoothing x V / (V - 1) gives the reference's weights (the target's 1 - e + e / V is then
    1 - smoothing) and one fused kernel computes it."""
    vocab = logits.shape[-1]
    low = smoothing / (vocab - 1)
    floor = -((1 - smoothing) * math.log(1 - smoothing) + smoothing * math.log(low + 1e-20)) if smoothing else 0.0
    loss = F.cross_entropy(logits.reshape(-1, vocab), target.reshape(-1), ignore_index=PAD_ID,
                           label_smoothing=smoothing * vocab / (vocab - 1))
    return loss - floor


class TransformerBenchmark:
    def __init__(self, ctx: RunContext[TransformerOptions]):
        hp = self.hp = ctx.options
        self.rank, self.world_size, self.device = ctx.rank, ctx.world_size, ctx.device
        self.global_batch = hp.batch_size * ctx.world_size  # tokens
        self.shared_seed = ctx.shared_seed
        self.collate_workers = hp.collate_workers if ctx.device.type == "cuda" else 0
        self.pad_multiple = hp.pad_multiple
        self._order, self._feeding = wmt.EpochOrder(), object()
        self._loader: Optional[DataLoader[wmt.Batch]] = None  # built at the first epoch that uses workers
        # without a dataset (mode=throughput): the configured vocabulary, and the schedule's length
        # in measured steps
        self.data = None if ctx.data_dir is None else wmt.load(ctx.data_dir, hp.max_length)
        vocab, self._steps = hp.vocab_size, ctx.throughput_epoch_steps
        if self.data is not None:
            vocab = len(self.data.vocab)
            self.buckets = wmt.bucket_of(self.data.train_src.lengths, self.data.train_tgt.lengths, hp.max_length)
            self._steps = wmt.batch_count(self.buckets, hp.max_length, hp.batch_size) // ctx.world_size
            if self._steps == 0:
                raise wmt.DatasetError(f"{len(self.data.train_src)} training pairs make fewer batches than the "
                                       f"{ctx.world_size} ranks: lower model.batch_size or use fewer ranks")
            metric.bleu_tokenize("")  # builds its expressions (2 s) here, at initialisation
        self.vocab_size = vocab  # the synthetic batch draws its tokens from the model's own vocabulary
        rows = -(-vocab // hp.vocab_multiple) * hp.vocab_multiple
        with ctx.device:  # made where it runs: no host copy of Transformer-big's 843 MB to initialise and move
            self.model = Transformer(rows, hp.hidden_size, hp.num_layers, hp.num_heads, hp.filter_size, hp.dropout,
                                     hp.attention_dropout, hp.relu_dropout)
        self._loss = smoothed_cross_entropy
        self._attention: Callable[[], ContextManager[Any]] = contextlib.nullcontext
        if hp.attention == Attention.efficient and ctx.device.type == "cuda":
            # every new (batch, length) shape costs cuDNN's attention a plan built on the host, and real
            # batches of sentences have many such shapes (docs/transformer.md)
            self._attention = partial(sdpa_kernel, [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])
        if hp.compile and ctx.device.type == "cuda":
            # fuses each layer norm, dropout and residual add into the kernels around it, and the
            # log-softmax of the loss; DDP, applied later, calls the compiled forward
            self.model.compile()
            self._loss = torch.compile(smoothed_cross_entropy)
        lr = scaled_learning_rate(hp.learning_rate, hp.lr_scaling, self.global_batch, hp.lr_reference_batch)
        self.schedule = InverseSqrt(lr, hp.hidden_size, hp.lr_warmup_steps)
        fused = ctx.device.type == "cuda"  # one kernel for all parameters; the CPU has no fused Adam
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.schedule.peak,
                                          betas=(hp.adam_beta1, hp.adam_beta2), eps=hp.adam_eps, fused=fused)
        self.lr_scheduler = self.schedule.scheduler(self.optimizer)
        self.grad_clip_norm = None  # the reference clips nothing

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {
            "global_batch_size": self.global_batch,
            "opt_name": "adam",
            "opt_base_learning_rate": self.schedule.peak,
            "opt_learning_rate_warmup_steps": hp.lr_warmup_steps,
            "opt_adam_beta_1": hp.adam_beta1,
            "opt_adam_beta_2": hp.adam_beta2,
            "opt_adam_epsilon": hp.adam_eps,
            "max_sequence_length": Logged(hp.max_length, {"method": "discard"}),
        }

    def steps_per_epoch(self) -> int:
        return self._steps

    def train_samples(self) -> int:
        assert self.data is not None  # mode=train, where there is a dataset
        return len(self.data.train_src)  # sentence pairs, as MLPerf's Transformer logs count them

    def eval_samples(self) -> int:
        return 0 if self.data is None else len(self.data.test_src)

    def train_batches(self, epoch: int) -> Iterator[wmt.Batch]:
        """Host batches (pinned on CUDA, by the DataLoader's pin thread)."""
        assert self.data is not None  # mode=train, where there is a dataset
        hp, world = self.hp, self.world_size
        # one order per epoch, the same on every rank, from the run's shared seed
        order = wmt.epoch_batches(self.buckets, hp.max_length, hp.batch_size, self.shared_seed + epoch)
        mine = order[self.rank: self._steps * world: world]
        if not self.collate_workers:  # a CPU's cores train: collated here, as the embedded default was timed
            for idx in mine:
                yield wmt.collate(self.data.train_src, self.data.train_tgt, idx, self.pad_multiple)
            return
        # model.collate_workers > 0 on a GPU: the padding, the padding mask, the token count and the
        # pinning run in worker processes (and the pin thread) ahead of the step. The same batches in
        # the same order.
        if self._loader is None:
            self._loader = DataLoader(wmt.Collated(self.data.train_src, self.data.train_tgt, self.pad_multiple),
                                      batch_size=None,
                                      sampler=self._order, num_workers=self.collate_workers,
                                      pin_memory=self.device.type == "cuda", prefetch_factor=4,
                                      persistent_workers=True,
                                      **worker_options(self.collate_workers, stop_with_parent))
        self._order.batches = mine
        # a new iteration drops what the workers still had in flight for the last one (an epoch cut
        # short); a generator of that epoch advanced again would get this one's batches: refused
        feeding = self._feeding = object()
        for batch in start_workers(self._loader):
            self._check_feeding(feeding, epoch)
            yield batch
        self._check_feeding(feeding, epoch)

    def _check_feeding(self, feeding: object, epoch: int) -> None:
        if self._feeding is not feeding:
            raise RuntimeError(f"epoch {epoch}'s batches were taken after another epoch's had started: "
                               "train one epoch's batches at a time")

    def synthetic_batch(self) -> wmt.Batch:
        """Random sentences of fixed lengths without padding (model.synthetic), made on the device."""
        syn, hp = self.hp.synthetic, self.hp
        count = max(hp.batch_size // max(syn.src_len, syn.tgt_len), 1)
        gen = torch.Generator(device=self.device).manual_seed(self.shared_seed)

        def sentences(length: int) -> torch.Tensor:
            ids = torch.randint(EOS_ID + 1, self.vocab_size, (count, length), generator=gen, device=self.device)
            ids[:, -1] = EOS_ID
            return ids

        return wmt.Batch(sentences(syn.src_len), sentences(syn.tgt_len), None, count * (syn.src_len + syn.tgt_len))

    def loss(self, model: torch.nn.Module, batch: wmt.Batch) -> tuple[torch.Tensor, int]:
        with self._attention():  # the backward runs the kernels its forward chose
            logits = model(batch.src, batch.tgt, batch.src_pad)
        return self._loss(logits, batch.tgt, self.hp.label_smoothing), batch.tokens

    def evaluate(self, model: torch.nn.Module, epoch: int) -> float:
        """Uncased BLEU of beam-search translations of the whole test set; the same on every rank."""
        assert self.data is not None  # mode=train, where there is a dataset
        hp, vocab = self.hp, self.data.vocab
        mine: list[tuple[int, str]] = []
        for idx, src in wmt.test_batches(self.data.test_src, hp.eval_batch_size, self.rank, self.world_size):
            src_pad = (src == PAD_ID) if bool((src == PAD_ID).any()) else None  # on the host: no device sync
            hyps = beam_search(cast(Transformer, model), src.to(self.device), None if src_pad is None else src_pad.to(self.device),
                               beam=hp.beam_size, alpha=hp.alpha, extra_length=hp.extra_decode_length)
            mine.extend((int(i), vocab.decode(h)) for i, h in zip(idx, hyps))
        refs = self.data.test_refs
        return score_on_main(mine, lambda pairs: metric.bleu([text for _, text in sorted(pairs)], refs))
