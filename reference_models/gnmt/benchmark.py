"""GNMT plugged into the harness: bucketed WMT16 batches, label-smoothed loss, beam search, BLEU.

    python -m harness.train model=gnmt seed=1
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, cast

import torch
from omegaconf import DictConfig
from torch.utils.data import DataLoader

from harness.interface import Logged, RunContext, scaled_learning_rate
from harness.interface.gather import score_on_main
from harness.interface.workers import start_workers, stop_with_parent, worker_options
from reference_models.gnmt import data as wmt
from reference_models.gnmt.beam import beam_search
from reference_models.gnmt.loss import compiled_kernels, fused_smoothed_loss, smoothed_loss
from reference_models.gnmt.metric import bleu
from reference_models.gnmt.model import GNMT
from reference_models.gnmt.options import AttentionGrads, GNMTOptions
from reference_models.gnmt.schedule import Schedule, warmup_steps
from reference_models.gnmt.tokenizer import BOS_ID, EOS_ID, PAD_ID, Detokenizer, join_bpe

# processes that pad a GPU run's batches ahead of the step: one batch of 512 pairs takes them about
# a millisecond (one gather per side), so two keep far ahead of a step of tens of milliseconds
COLLATE_WORKERS = 2


def prepare(cfg: DictConfig) -> Path:
    """Generate the embedded corpus if it is missing; check that a real one has every file."""
    path = Path(cfg.dataset.path)
    if cfg.dataset.get("generator"):
        # imported here: `python -m reference_models.gnmt.generate` must not find itself already imported
        from reference_models.gnmt.generate import LanguageSpec, ensure

        ensure(LanguageSpec(**cfg.dataset.generator), path)
    wmt.check_layout(path)
    return path


class GNMTBenchmark:
    def __init__(self, ctx: RunContext[GNMTOptions]):
        hp = self.hp = ctx.options
        self.rank, self.world_size, self.device = ctx.rank, ctx.world_size, ctx.device
        self.global_batch = hp.batch_size * ctx.world_size
        self.shared_seed = ctx.shared_seed
        # without a dataset (mode=throughput): the configured vocabulary, and the schedule's length
        # in measured steps
        self.data = None if ctx.data_dir is None else wmt.load(ctx.data_dir, hp.min_length, hp.max_length)
        vocab_size, self._steps = hp.vocab_size, ctx.throughput_epoch_steps
        if self.data is not None:
            vocab_size = len(self.data.vocab)
            self.buckets = wmt.bucket_of(self.data.train_src.lengths, self.data.train_tgt.lengths, hp.max_length)
            self._steps = wmt.steps_per_epoch(self.buckets, self.global_batch)
            if self._steps == 0:
                raise wmt.DatasetError(
                    f"{len(self.data.train_src)} training pairs cannot fill one global batch of {self.global_batch}")
            self.detokenize = Detokenizer()

        self.lr = scaled_learning_rate(hp.learning_rate, hp.lr_scaling, self.global_batch, hp.lr_reference_batch)
        self.vocab_size = vocab_size  # the synthetic batch draws its tokens from the model's own vocabulary
        self.model = GNMT(vocab_size, hp.hidden_size, hp.num_layers, hp.dropout, PAD_ID).to(ctx.device)
        # training's buckets bring many sentence lengths, each a graph of its own if compiled static
        dynamic = hp.dynamic_shapes(training=self.data is not None)
        one_pass = hp.attention_grads == AttentionGrads.one_pass
        if hp.compile_attention and ctx.device.type == "cuda":
            # Inductor's reductions compute tanh(q + k + b).v and its gradients: eager materialises the
            # (batch, T_tgt, T_src, 1024) sum, 1.9 GB at batch 1024, and walks it ~10 times per step
            self.model.decoder.attention.fuse_scores(dynamic, one_pass=one_pass)
        self._smoothed_loss: Callable[..., torch.Tensor] = partial(smoothed_loss, smoothing=hp.label_smoothing)
        if hp.compile_loss and ctx.device.type == "cuda":
            # at b2048 the logits are 59,392 x 32,320: eager copies them to fp32 (7.7 GB) and walks that copy
            # in log-softmax, the smoothing sum and each backward; compiled, one read of the fp16 logits
            # forward and one backward (reference_models/gnmt/loss.py)
            self._smoothed_loss = partial(fused_smoothed_loss, smoothing=hp.label_smoothing,
                                          kernels=compiled_kernels(dynamic))
        fused = ctx.device.type == "cuda"  # one kernel for all parameters; the CPU has no fused Adam
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=self.lr, betas=(hp.adam_beta1, hp.adam_beta2), eps=hp.adam_eps,
            fused=fused)
        warmup = warmup_steps(hp.lr_warmup_steps, hp.lr_warmup_samples, self.global_batch)
        self.schedule = Schedule.for_run(
            self.lr, self._steps * ctx.cfg.max_epochs, warmup, hp.remain_steps,
            hp.decay_interval, hp.decay_steps, hp.decay_factor)
        self.lr_scheduler = self.schedule.scheduler(self.optimizer)
        self.grad_clip_norm = hp.grad_clip

    def hyperparameters(self) -> dict[str, Any]:
        hp = self.hp
        return {
            "global_batch_size": self.global_batch,
            "opt_name": "adam",
            "opt_base_learning_rate": self.lr,
            "opt_adam_beta_1": hp.adam_beta1,
            "opt_adam_beta_2": hp.adam_beta2,
            "opt_adam_epsilon": hp.adam_eps,
            **self.schedule.mlperf_keys(),
            "max_sequence_length": Logged(hp.max_length, {"method": "discard"}),
        }

    def steps_per_epoch(self) -> int:
        return self._steps

    def train_samples(self) -> int:
        return self._steps * self.global_batch  # the pairs an epoch trains on, after bucket trimming

    def eval_samples(self) -> int:
        return 0 if self.data is None else len(self.data.test_src)

    def train_batches(self, epoch: int) -> Iterator[wmt.Batch]:
        """Host batches (pinned on CUDA); Batch.to keeps the source lengths on the host for cuDNN."""
        assert self.data is not None  # mode=train, where there is a dataset
        # one order per epoch, the same on every rank, from the run's shared seed
        order = wmt.epoch_order(self.buckets, self.global_batch, self.shared_seed + epoch)
        epoch_batches = wmt.EpochBatches(self.data.train_src, self.data.train_tgt, order, self.rank, self.world_size)
        if self.device.type != "cuda":  # a CPU's cores train: collated here, as the embedded default was timed
            yield from (epoch_batches[k] for k in range(len(epoch_batches)))
            return
        # on a GPU the padding and pinning run in worker processes ahead of the step, not in the
        # training thread between two steps (6.6% data wait on an H200 with that,
        # docs/benchmarks/pipeline_2026-12-01.md); the same batches in the same order
        yield from start_workers(DataLoader(epoch_batches, batch_size=None, shuffle=False, num_workers=COLLATE_WORKERS,
                                            pin_memory=True, prefetch_factor=4,
                                            **worker_options(COLLATE_WORKERS, stop_with_parent)))

    def synthetic_batch(self) -> wmt.Batch:
        """Random tokens at fixed lengths (model.synthetic), made on the device."""
        syn = self.hp.synthetic
        return self._random_batch(syn.src_len, syn.tgt_len, self.device)

    def warmup_batches(self) -> list[wmt.Batch]:
        """Random batches at the lengths a compiled step must have met before run_start (wmt.warmup_lengths),
        on the host as train_batches yields them, drawn from the shared seed: the same on every rank."""
        cpu = torch.device("cpu")
        return [self._random_batch(s, t, cpu) for s, t in wmt.warmup_lengths(self.hp.max_length)]

    def _random_batch(self, src_len: int, tgt_len: int, device: torch.device) -> wmt.Batch:
        """batch_size sentences of random tokens between BOS and EOS, from a generator of its own."""
        b = self.hp.batch_size
        gen = torch.Generator(device=device).manual_seed(self.shared_seed)
        vocab = self.vocab_size

        def sentences(length: int) -> torch.Tensor:
            body = torch.randint(EOS_ID + 1, vocab, (length - 2, b), generator=gen, device=device)
            ends = [torch.full((1, b), t, device=device, dtype=torch.long) for t in (BOS_ID, EOS_ID)]
            return torch.cat((ends[0], body, ends[1]))

        src, tgt = sentences(src_len), sentences(tgt_len)
        return wmt.Batch(src, torch.full((b,), src_len, dtype=torch.long), tgt[:-1], tgt[1:],
                         b * (src_len + tgt_len - 1))

    def loss(self, model: torch.nn.Module, batch: wmt.Batch) -> tuple[torch.Tensor, int]:
        logits = model(batch.src, batch.src_len, batch.tgt_in)
        # per sentence: the reference's normalisation
        return self._smoothed_loss(logits, batch.tgt_out) / batch.src.shape[1], batch.tokens

    def evaluate(self, model: torch.nn.Module, epoch: int) -> float:
        """BLEU of beam-search translations of the whole test set; every rank returns the same value."""
        assert self.data is not None  # mode=train, where there is a dataset
        hp, vocab = self.hp, self.data.vocab
        mine: list[tuple[int, str]] = []
        for idx, src, src_len in wmt.test_batches(self.data.test_src, hp.eval_batch_size, self.rank, self.world_size):
            hyps = beam_search(cast(GNMT, model), src.to(self.device), src_len, beam=hp.beam_size, max_len=hp.max_length_test,
                               len_norm_factor=hp.len_norm_factor, len_norm_const=hp.len_norm_const,
                               cov_penalty_factor=hp.cov_penalty_factor)
            mine.extend((int(i), self.detokenize(join_bpe(vocab.units(h)))) for i, h in zip(idx, hyps))
        refs = self.data.test_refs
        return score_on_main(mine, lambda pairs: bleu([text for _, text in sorted(pairs)], refs))
