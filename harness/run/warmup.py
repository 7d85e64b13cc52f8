"""The warm-up before run_start (`warm_up`, on by default in mode=train wherever the step compiles): the model's
forward and backward stepped on synthetic batches of every shape it will train on, so that torch.compile's
compilations and CUDA-graph recordings happen in the model's initialization rather than on the clock, then
every trace of them wiped.

    python -m harness.train model=resnet                 # on a GPU: the compiled step's first compilation before run_start
    python -m harness.train model=resnet warm_up=false   # ... on the clock, as before

MLPerf's training rules allow this: "Prior to starting the clock, a system may use a maximum of 20 minutes
of model initialization time", and the clock "must start before any part of the system touches the
dataset" (training_rules.adoc, Run Results). So the batches are the model's synthetic ones, never its
data: `warmup_batches()` where the model has it (one batch per shape training sees, or the few shapes a
compile with symbolic sizes needs: GNMT's lengths for its kernels compiled with dynamic shapes), else its
one `synthetic_batch()`. There is no optimizer step: the optimizer's work does not change
shape. What the passes touched is put back as it was: the buffers by name (batch-norm statistics and their
counters; a buffer the forward replaced, as a longer position table, is put back whole), the gradients (none,
as before a first step), and every random generator: the process's (dropout draws from them) and those the
benchmark holds as attributes (NCF's synthetic batch draws from the generator its epochs' negatives come
from). A run warmed up then trains exactly as it would have without (tests/run/test_warmup.py compares every
loss and quality, run for run; on an H200 the embedded presets of ResNet-50, DLRM-DCNv2 and RetinaNet reached
the same top-1, AUC and mAP in 0.45-0.74x the time to train, docs/benchmarks/fast_path_2026-12-04.md). What a
model's `loss` or `synthetic_batch` keeps elsewhere (a step counter, a cache) is the model's to leave alone: the
contract says so. The seconds it took are result.json's warm_up_s, inside init_time_s.
"""
from __future__ import annotations

import logging
import time
from functools import partial
from typing import Any, Callable, Iterable

import numpy as np
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
    drawn, held = random_states(), held_generators(built.bench)
    module = built.module
    kept = {name: b.detach().clone() for name, b in module.named_buffers()}
    was_training = module.training
    built.trained.train()
    shapes = 0
    for batch in batches_of(built):
        on_device = built.feed.once(batch)
        for _ in range(passes):
            forward_backward(built, on_device)
            module.zero_grad(set_to_none=True)
        shapes += 1
    put_back_buffers(module, kept)
    built.trained.train(was_training)
    restore_random_states(drawn)
    for restore in held:
        restore()
    if built.feed.cuda:
        torch.cuda.synchronize(built.ctx.device)  # sync point: the warm-up's kernels end before the clock starts
    seconds = time.perf_counter() - start
    log.info("warmed up on %d synthetic batch shape(s), %d passes each, in %.1f s before run_start", shapes,
             passes, seconds)
    return seconds


def held_generators(bench: Any) -> list[Callable[[], Any]]:
    """For each random generator the benchmark holds as an attribute (torch's, numpy's), a call that puts
    its state back as it is now."""
    back: list[Callable[[], Any]] = []
    for g in vars(bench).values():
        if isinstance(g, torch.Generator):
            back.append(partial(g.set_state, g.get_state()))
        elif isinstance(g, np.random.RandomState):
            back.append(partial(g.set_state, g.get_state()))
        elif isinstance(g, np.random.Generator):
            back.append(partial(setattr, g.bit_generator, "state", g.bit_generator.state))
    return back


def put_back_buffers(module: torch.nn.Module, kept: dict[str, torch.Tensor]) -> None:
    """Each buffer as `kept` holds it: copied into the tensor it is now (a compiled graph holds that
    tensor), or, where the forward replaced it with another shape, the kept one put back in its place."""
    with torch.no_grad():
        for name, saved in kept.items():
            owner_name, _, leaf = name.rpartition(".")
            owner = module.get_submodule(owner_name)
            now = owner._buffers.get(leaf)
            if now is not None and now.shape == saved.shape and now.dtype == saved.dtype:
                now.copy_(saved)
            else:
                owner._buffers[leaf] = saved
