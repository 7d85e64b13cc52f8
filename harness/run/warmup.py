"""The warm-up before run_start (warm_up=true): the model's forward and backward stepped on synthetic batches
of every shape it will train on, so that torch.compile's compilations and CUDA-graph recordings happen in
the model's initialization rather than on the clock, then every trace of them wiped.

    python -m harness.train model=resnet warm_up=true          # the compiled step's first compilation before run_start

MLPerf's training rules allow this: "Prior to starting the clock, a system may use a maximum of 20 minutes
of model initialization time", and the clock "must start before any part of the system touches the
dataset" (training_rules.adoc, Run Results). So the batches are the model's synthetic ones, never its
data: `warmup_batches()` where the model has it (one batch per shape training sees: GNMT's bucket lengths,
Mask R-CNN's padded image sizes), else its one `synthetic_batch()`. There is no optimizer step: the
optimizer's work does not change shape. What the passes touched is put back as it was: the buffers
(batch-norm statistics and their counters), the gradients (none, as before a first step) and every random
generator (dropout and the synthetic batches draw from them), so that a run warmed up trains exactly as it
would have without (tests/run/test_warmup.py compares every loss and quality, run for run). The seconds it
took are result.json's warm_up_s, inside init_time_s.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Iterable

import torch

from harness.run.build import BuiltRun
from harness.run.seeding import random_states, restore_random_states
from harness.run.step import forward_backward

log = logging.getLogger("harness.warmup")

# passes over each shape: torch.compile compiles on the first; the CUDA graphs of mode=reduce-overhead are
# recorded on the second and replayed from the third
PASSES = 3


def batches_of(built: BuiltRun) -> Iterable[Any]:
    """The model's synthetic batches, one per shape it trains on (its optional `warmup_batches()`)."""
    shapes = getattr(built.bench, "warmup_batches", None)
    return shapes() if shapes is not None else [built.bench.synthetic_batch()]


def warm_up(built: BuiltRun, passes: int = PASSES) -> float:
    """Step the forward and backward `passes` times on each synthetic batch, leave the model, its
    gradients and the random generators as they were, and return the seconds it took."""
    start = time.perf_counter()
    drawn = random_states()
    module = built.module
    kept = [b.detach().clone() for b in module.buffers()]
    was_training = module.training
    built.trained.train()
    shapes = 0
    for batch in batches_of(built):
        on_device = built.feed.once(batch)
        for _ in range(passes):
            forward_backward(built, on_device)
            module.zero_grad(set_to_none=True)
        shapes += 1
    with torch.no_grad():
        for b, saved in zip(module.buffers(), kept):
            b.copy_(saved)
    built.trained.train(was_training)
    restore_random_states(drawn)
    if built.feed.cuda:
        torch.cuda.synchronize(built.ctx.device)  # sync point: the warm-up's kernels end before the clock starts
    seconds = time.perf_counter() - start
    log.info("warmed up on %d synthetic batch shape(s), %d passes each, in %.1f s before run_start", shapes,
             passes, seconds)
    return seconds
