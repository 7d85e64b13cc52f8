"""Model FLOPs a sample, the achieved TFLOP/s and MFU of a run.

Every model is counted the same way, through the contract: one forward of `loss(model, synthetic_batch())`
under torch.utils.flop_counter.FlopCounterMode (matmuls, convolutions, attention; elementwise work is
not counted), on the run's device at the run's sizes, under no_grad (no graph kept, no DDP or FSDP
gradient hooks) and with torch.compile set to run eagerly (a compiled region hides its ops from the
counter). The training FLOPs are 3 times the forward's: the backward computes the gradient of each
matmul's input and of its weights, each as costly as the forward (PaLM's MFU convention, which
torchtitan and Megatron follow; recomputed activations count nothing). Divided by the samples (or
tokens) the batch counts, as the throughput meter counts them. A model whose shapes vary from batch to
batch (GNMT's and the Transformer's sentence lengths, Mask R-CNN's proposals) is counted on its
synthetic batch. LSTMs run as one fused op (cuDNN's, oneDNN's) that FlopCounterMode has no formula for;
RNN_FORMULAS counts them as their matmuls, and fused attention with grouped-query heads.

achieved TFLOP/s = throughput (summed over ranks) x FLOPs a sample / 1e12; MFU = achieved / (the GPU's
dense peak for the run's precision x ranks), the peak from harness/observe/gpu_peaks.py.

    python -m harness.train model=ncf mode=throughput device=cpu    # result.json: model_flops_per_sample
"""
from __future__ import annotations

import logging
import math
from typing import Any, Optional

import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

from harness.observe.gpu_peaks import peak
from harness.run.build import BuiltRun

log = logging.getLogger("harness.flops")

TRAINING_FACTOR = 3  # forward + backward = 3 x forward (input and weight gradients)


def _rnn_layer_flops(input_shape: Any, w_ih: Any, w_hh: Any, *args: Any, **kwargs: Any) -> int:
    """oneDNN's RNN layer (one layer, one direction): both gate matmuls at every step of every sequence."""
    steps = math.prod(input_shape[:-1])
    return 2 * steps * (math.prod(w_ih) + math.prod(w_hh))


def _cudnn_rnn_flops(input_shape: Any, weights: Any, *args: Any, **kwargs: Any) -> int:
    """cuDNN's whole RNN: every layer's and direction's gate matmuls (the 2-D weights) at every step; a
    packed input is (steps, features) already."""
    steps = math.prod(input_shape[:-1])
    return 2 * steps * sum(math.prod(w) for w in weights if len(w) == 2)


def _sdpa_flops(q: Any, k: Any, v: Any, *args: Any, **kwargs: Any) -> int:
    """Fused attention, (batch, heads, length, width) shapes, with grouped-query attention: the CUDA kernels
    take keys and values of fewer heads than the queries (`enable_gqa=True`, Llama's 8 of 32), which torch's
    own formula refuses (its heads must match); each query head still multiplies a whole key and value, so
    the count is the one of keys and values repeated to the queries' heads."""
    heads = q[1]
    return sdpa_flop_count(q, (k[0], heads, *k[2:]), (v[0], heads, *v[2:]))


aten = torch.ops.aten
# the CPU flash kernel has no formula in torch; the CUDA ones have one that refuses grouped-query shapes
RNN_FORMULAS = {aten.mkldnn_rnn_layer: _rnn_layer_flops, aten._cudnn_rnn: _cudnn_rnn_flops,
                aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_flops,
                aten._scaled_dot_product_flash_attention: _sdpa_flops,
                aten._scaled_dot_product_efficient_attention: _sdpa_flops,
                aten._scaled_dot_product_cudnn_attention: _sdpa_flops}


class _AllModules:
    """FlopCounterMode's module tracker, reduced to the one total the count needs: the tracker hooks each
    module's inputs for the backward, which fails under no_grad on a view of a parameter (a tensor that
    requires grad with no gradient function: Tacotron 2's location kernel)."""

    parents = frozenset({"Global"})  # the names FlopCounterMode adds each op's FLOPs to

    def __enter__(self) -> "_AllModules":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


class _Totals(FlopCounterMode):
    """FlopCounterMode counting the total alone (get_total_flops), over every module."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mod_tracker = _AllModules()  # type: ignore[assignment]


class _Frozen:
    """The backward work frozen weights skip, measured during the counted forward: the FLOPs inside each
    leaf module whose parameters are all frozen, once (input gradient only) after a trained parameter
    has run, twice (no backward at all) before one has."""

    def __init__(self, model: Any, counter: FlopCounterMode) -> None:
        self.counter, self.skipped, self.trained_ran = counter, 0, False
        self.starts: list[int] = []
        self.handles: list[Any] = []
        for module in model.modules() if isinstance(model, torch.nn.Module) else ():
            own = list(module.parameters(recurse=False))
            if any(p.requires_grad for p in own):
                self.handles.append(module.register_forward_pre_hook(self._trained))
            elif own and next(module.children(), None) is None:
                self.handles += [module.register_forward_pre_hook(self._enter), module.register_forward_hook(self._leave)]

    def _trained(self, *_: Any) -> None:
        self.trained_ran = True

    def _enter(self, *_: Any) -> None:
        self.starts.append(self.counter.get_total_flops())

    def _leave(self, *_: Any) -> None:
        inside = self.counter.get_total_flops() - self.starts.pop()
        self.skipped += inside if self.trained_ran else 2 * inside

    def __enter__(self) -> "_Frozen":
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self.handles:
            handle.remove()


def forward_flops(run: BuiltRun, batch: Any) -> tuple[int, int, int]:
    """(FLOPs of one forward of the loss on `batch`, the backward FLOPs its frozen weights skip, the samples
    the batch counts)."""
    with _Totals(display=False, custom_mapping=RNN_FORMULAS) as counter, _Frozen(run.trained, counter) as frozen, \
            torch.no_grad(), torch.compiler.set_stance("force_eager"), run.precision.autocast():
        _, samples = run.bench.loss(run.trained, batch)
    return counter.get_total_flops(), frozen.skipped, int(samples)


def flops_per_sample(run: BuiltRun, batch: Any) -> tuple[Optional[float], Optional[str]]:
    """(training FLOPs a sample, None) or (None, why not counted): a count that fails never fails the run."""
    try:
        forward, skipped, samples = forward_flops(run, batch)
    except Exception as err:  # the figure is a report's, not the run's: say why and go on
        log.warning("warning: model FLOPs not counted: %s: %s", type(err).__name__, err)
        return None, f"FLOPs not counted: {type(err).__name__}"
    if forward <= 0 or samples <= 0:
        return None, "FlopCounterMode counted no matmul or convolution"
    return (TRAINING_FACTOR * forward - skipped) / samples, None


def utilisation(flops: Optional[float], throughput: Optional[float], device_name: Optional[str], precision: str,
                world_size: int, why: Optional[str] = None) -> dict[str, Any]:
    """result.json's fields: model_flops_per_sample, achieved_tflops, mfu, peak_tflops, peak_source and,
    where MFU is null, mfu_note saying why."""
    achieved = None if flops is None or not throughput else throughput * flops / 1e12
    top, no_peak = peak(device_name, precision)
    mfu = None if achieved is None or top is None else achieved / (top.tflops * max(world_size, 1))
    note = why or (no_peak if top is None else None) or (None if mfu is not None else "no throughput")
    return {"model_flops_per_sample": flops, "achieved_tflops": achieved, "mfu": mfu,
            "peak_tflops": None if top is None else top.tflops,
            "peak_source": None if top is None else f"{top.gpu} {top.column}: {top.source}", "mfu_note": note}


def device_name(device: torch.device) -> Optional[str]:
    """The GPU's name as torch reports it ("NVIDIA H200"), None on a CPU."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else None


def describe(flops: Optional[float], achieved: Optional[float], mfu: Optional[float], note: Optional[str]) -> str:
    """The console's words: "12.3 GFLOP a sample, 457 TFLOP/s, MFU 46.2%"."""
    if flops is None:
        return f"model FLOPs n/a ({note})" if note else "model FLOPs n/a"
    words = f"{si(flops)}FLOP a sample"
    if achieved is not None:
        words += f", {si(achieved * 1e12)}FLOP/s"
    return words + (f", MFU {100 * mfu:.1f}%" if mfu is not None else f", MFU n/a ({note})" if note else "")


def si(x: float) -> str:
    """A count with its SI prefix and three significant figures: "15.6 k", "989 T", "1,979 T"."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= scale:
            value = x / scale
            return f"{value:,.0f} {prefix}" if value >= 100 else f"{value:.3g} {prefix}"
    return f"{x:.3g} "
