"""cuda_graph=true: mode=throughput's step with its forward, loss and backward captured once in a CUDA
graph and replayed at every step, as NVIDIA's MLPerf submissions graph their steps. What follows
backward (master weights, unscaling, clipping, the optimizer, the scheduler) runs eagerly after each
replay: GradScaler.step reads its found-inf flags on the host, which a capture cannot hold (torch's
CUDA-graph notes, "Usage with torch.cuda.amp").

    python -m harness.train model=tacotron2 mode=throughput precision=amp cuda_graph=true

For a model whose step is bound by the host launching small kernels (Tacotron 2's decoder runs one
step a mel frame, ~100 kernels each, forward and backward), a replay launches the whole step at once.
mode=throughput trains on one batch held on the device, so the batch's own tensors are the graph's
inputs and nothing is copied into static buffers. A step that syncs with the host (.item(),
nonzero, a host copy), or needs CUDA graphs of its own (model.compile_mode=reduce-overhead), cannot
be captured: the run goes on with the eager step and says why in one line and in result.json.

torch.cuda.make_graphed_callables graphs a module's forward and backward too, but it refuses
autocast's weight cache, which a step under amp would then pay for at every use of a weight (870
times a step in Tacotron 2's decoder); one capture of the whole forward and backward keeps the cache
inside the graph.
"""
from __future__ import annotations

from typing import Any, Optional

import torch

from harness.errors import ConfigError
from harness.run.build import BuiltRun
from harness.run.step import forward_backward, train_step, update

# Eager steps on a side stream before the capture, as torch's recipe has them: cuBLAS and cuDNN make
# their handles and workspaces, cuDNN's benchmark picks its kernels, the scaler makes its scale and
# torch.compile compiles, all outside the graph.
EAGER_STEPS = 3


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
