"""cuda_graph=true: the step's forward, loss and backward captured once in a CUDA graph and replayed at
every step, as NVIDIA's MLPerf submissions graph their steps. What follows backward (master weights,
unscaling, clipping, the optimizer, the scheduler) runs eagerly after each replay: GradScaler.step reads
its found-inf flags on the host, which a capture cannot hold (torch's CUDA-graph notes, "Usage with
torch.cuda.amp").

    python -m harness.train model=tacotron2 mode=throughput precision=amp cuda_graph=true
    python -m harness.train model=resnet dataset=imagenet cuda_graph=true    # mode=train (on one GPU, ResNet's default)

For a model whose step is bound by the host launching small kernels (Tacotron 2's decoder runs one
step a mel frame, ~100 kernels each, forward and backward), a replay launches the whole step at once.
mode=throughput trains on one batch held on the device, so the batch's own tensors are the graph's
inputs and nothing is copied into static buffers (`CapturedStep`). mode=train copies each batch into
the inputs of a graph captured on an early batch (`GraphedTraining`). A step that syncs with the host
(.item(), nonzero, a host copy), or needs CUDA graphs of its own (model.compile_mode=reduce-overhead),
cannot be captured: the run goes on with the eager step and says why in one line and in result.json.

torch.cuda.make_graphed_callables graphs a module's forward and backward too, but it refuses
autocast's weight cache, which a step under amp would then pay for at every use of a weight (870
times a step in Tacotron 2's decoder); one capture of the whole forward and backward keeps the cache
inside the graph.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

import torch

from harness.errors import ConfigError
from harness.interface.batches import tensors
from harness.run.build import BuiltRun
from harness.run.step import Step, forward_backward, train_step, update

# Eager steps on a side stream before the capture, as torch's recipe has them: cuBLAS and cuDNN make
# their handles and workspaces, cuDNN's benchmark picks its kernels, the scaler makes its scale and
# torch.compile compiles, all outside the graph.
EAGER_STEPS = 3
log = logging.getLogger("harness.graph")


class CaptureFailed(ConfigError):
    """The step could not be captured; the message names the cause. The loop falls back to the eager step."""


class CapturedStep:
    """A step whose forward and backward are a CUDA graph: call it as harness.run.step.train_step."""

    def __init__(self, graph: torch.cuda.CUDAGraph, batch: Any, loss: torch.Tensor,
                 terms: Optional[dict[str, torch.Tensor]], samples: int, warmup_steps: int):
        self.graph, self.batch, self.loss, self.terms, self.samples = graph, batch, loss, terms, samples
        self.warmup_steps = warmup_steps  # steps the capture trained: the eager ones and the first replay

    @classmethod
    def capture(cls, run: BuiltRun, batch: Any, eager_steps: int = EAGER_STEPS) -> "CapturedStep":
        """Warm up on a side stream, capture one forward and backward of `batch` (the run's synthetic
        batch, on the device) and replay it once. ConfigError when the run cannot be graphed, CaptureFailed when its step cannot
        (its eager steps have trained by then)."""
        name, device = run.ctx.cfg.model.name, run.ctx.device
        if device.type != "cuda":
            raise ConfigError(f"cuda_graph=true needs a CUDA device and this run is on {device.type}: run it on a "
                              "GPU or leave cuda_graph out")
        if run.ctx.world_size > 1:
            raise ConfigError(f"cuda_graph=true runs on one GPU and this run has {run.ctx.world_size} ranks: use "
                              "gpus=1 nodes=1 or leave cuda_graph out")
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(eager_steps):
                train_step(run, batch)
        torch.cuda.current_stream(device).wait_stream(side)
        torch.cuda.synchronize(device)  # sync point (once): the warm-up's memory is free before the capture
        torch.cuda.empty_cache()  # the graph's pool holds the step's memory from now on, not this cache too
        run.bench.optimizer.zero_grad(set_to_none=True)
        run.module.zero_grad(set_to_none=True)  # the capture allocates the gradients it writes at every replay
        graph = torch.cuda.CUDAGraph()
        first: list[BaseException] = []  # the capture's own error, before its end reports a broken capture
        try:
            # thread_local: the harness's other threads (telemetry, heartbeat) may still call CUDA
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                try:
                    loss, terms, samples = forward_backward(run, batch)
                except BaseException as err:
                    first.append(err)
                    raise
        except Exception as err:
            cause = first[0] if first else err
            why = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
            torch.cuda.synchronize(device)  # sync point (once): the broken capture's work is over
            raise CaptureFailed(f"model={name}'s step cannot be captured in a CUDA graph ({why})") from None
        step = cls(graph, batch, loss.detach(), None if terms is None else {k: v.detach() for k, v in terms.items()},
                   samples, eager_steps + 1)
        step(run, batch)  # the first replay uploads the graph to the device: a warm-up step, not a window's
        return step

    def __call__(self, run: BuiltRun, batch: Any) -> tuple[torch.Tensor, Optional[dict[str, torch.Tensor]], int]:
        if batch is not self.batch:
            raise ValueError("a captured step replays the batch it was captured with (mode=throughput's)")
        self.graph.replay()
        update(run, keep_grads=True)
        # copies: the next replay overwrites the graph's outputs, and a hook may read these later
        terms = None if self.terms is None else {k: v.clone() for k, v in self.terms.items()}
        return self.loss.clone(), terms, self.samples


class GraphedTraining:
    """mode=train's step replayed from a CUDA graph: the first `eager_steps` batches train eagerly
    (compiling and choosing cuDNN's kernels as any first steps do), the next is copied into buffers of
    its own and captured, and each later batch of the same shapes is copied into those buffers and
    replayed. A batch of other shapes (an epoch's short last batch) trains eagerly. Every batch trains
    once, in the loader's order: the eager loop's steps.

    Why (docs/benchmarks/gpu_check_2026-12-06.md, its last section): ResNet-50's compiled step spends
    15 ms of host time on its forward and 17.5 ms on its backward a 43 ms step on an H100, beside the
    thread that decodes the next batches on the GPU; replayed, the step frees the host, and with a
    hardware queue per stream (build.hardware_queues) trained on files at 1.10x the eager step's rate."""

    def __init__(self, eager_steps: int = EAGER_STEPS):
        self.eager_steps = eager_steps
        self.captured: Optional[CapturedStep] = None
        self.fallback: Optional[str] = None  # why the capture failed: every step then runs eagerly
        self.replays = 0

    def __call__(self, run: BuiltRun, batch: Any) -> tuple[torch.Tensor, Optional[dict[str, torch.Tensor]], int]:
        if self.captured is not None and _copy_into(self.captured.batch, batch):
            self.replays += 1
            return self.captured(run, self.captured.batch)
        if self.captured is not None or self.fallback is not None or self.eager_steps > 0:
            self.eager_steps -= 1
            return train_step(run, batch)
        try:
            # its one replay inside is this batch's step: no eager steps on it first (each would train it again)
            self.captured = CapturedStep.capture(run, _cloned(batch, str(run.ctx.cfg.model.name)), eager_steps=0)
        except CaptureFailed as err:  # never a failed run for a failed optimisation
            log.warning("warning: %s: the eager step runs instead", err)
            self.fallback = str(err)
            return train_step(run, batch)
        self.replays += 1
        terms = None if self.captured.terms is None else {k: v.clone() for k, v in self.captured.terms.items()}
        return self.captured.loss.clone(), terms, self.captured.samples


def step_for(run: BuiltRun) -> Step:
    """The step the loop takes in `run`: mode=train's graphed step with cuda_graph=true (one per run, kept
    across epochs), else the eager one."""
    if run.mode != "train" or not run.ctx.cfg.get("cuda_graph"):
        return train_step
    if run.train_graph is None:
        run.train_graph = GraphedTraining()
    return run.train_graph


def _cloned(batch: Any, name: str) -> Any:
    """The batch with each tensor copied into a buffer of its own (the capture's inputs), same strides."""
    if isinstance(batch, torch.Tensor):
        return batch.clone()
    if isinstance(batch, (list, tuple)):
        items = [_cloned(x, name) for x in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else type(batch)(items)
    if isinstance(batch, dict):
        return {k: _cloned(v, name) for k, v in batch.items()}
    # a number or a string would be baked into the graph as it was at the capture
    raise CaptureFailed(f"model={name}'s training batches hold a {type(batch).__name__}, which a CUDA graph's "
                        "inputs cannot follow from batch to batch")


def _copy_into(static: Any, batch: Any) -> bool:
    """Copy `batch`'s tensors into the captured batch's where every shape, dtype and structure agrees;
    False (nothing copied) where one differs."""
    got, held = list(tensors(batch)), list(tensors(static))
    if len(got) != len(held) or any(a.shape != b.shape or a.dtype != b.dtype or a.device != b.device
                                    for a, b in zip(got, held)):
        return False
    for a, b in zip(got, held):
        b.copy_(a, non_blocking=True)  # on the step's stream, after the batch's own event (DeviceBatches)
    return True
