"""Bahdanau's additive attention scores, s[b, i, j] = sum_n v[n] tanh(q[b, i, n] + k[b, j, n] + bias[n]), for
every query-key pair, without the (batch, T_q, T_k, units) tensor between them.

    python -m harness.train model=gnmt dataset=wmt16 mode=throughput model.batch_size=2048   # compiled on CUDA

At GNMT's b2048 that tensor has 1.8 billion elements. Compiled as one expression, Inductor fuses the forward
into a reduction but writes the backward's gradient of it out and reduces it three times, for the queries,
the keys and the bias: 15.6 ms of a 140 ms step on an H200 (docs/benchmarks/fast_path_2026-12-04.md). The
backward here is written out by hand: two reductions that each recompute tanh from q and k, one over the
keys (the queries' gradient, and v's before its last sum) and one over the queries (the keys'), the
bias's gradient the queries' summed. Each is compiled on its own, so that no common-subexpression pass
can merge the two into one materialized tensor again. `model.attention_grads=one_pass` computes all three
gradients in one Triton kernel instead, each tanh once (scores_grads.py: the fast path's, 2.3x these two).
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Mapping, NamedTuple, Optional

import torch

from harness.errors import ConfigError


def additive_scores(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """q (B, T_q, n), k (B, T_k, n) -> (B, T_q, T_k), autograd's way: the eager path and the reference."""
    return torch.tanh(q.unsqueeze(2) + k.unsqueeze(1) + bias).matmul(v)


def wide(x: torch.Tensor) -> torch.Tensor:
    """fp16 and bf16 widened to fp32 for the arithmetic; fp64 kept (the tests' gradient checks)."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def _tanh_of_sums(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.tanh(wide(q).unsqueeze(2) + wide(k).unsqueeze(1) + wide(bias))


def scores_math(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The scores in fp32, a reduction over the units for each pair."""
    return (_tanh_of_sums(q, k, bias) * wide(v)).sum(-1)


def query_grads_math(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor, v: torch.Tensor,
                     grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Reduced over the keys: the queries' gradient (B, T_q, n) and sum_j grad * tanh, v's before its sum."""
    t, g = _tanh_of_sums(q, k, bias), wide(grad).unsqueeze(-1)
    return (g * (1 - t * t)).sum(2) * wide(v), (g * t).sum(2)


def key_grads_math(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor, v: torch.Tensor,
                   grad: torch.Tensor) -> torch.Tensor:
    """Reduced over the queries: the keys' gradient (B, T_k, n)."""
    t, g = _tanh_of_sums(q, k, bias), wide(grad).unsqueeze(-1)
    return (g * (1 - t * t)).sum(1) * wide(v)


class Kernels(NamedTuple):
    scores: Callable[..., torch.Tensor]
    query_grads: Callable[..., tuple[torch.Tensor, torch.Tensor]]
    key_grads: Callable[..., torch.Tensor]
    # the three gradients at once, in place of the two reductions (scores_grads.py: model.attention_grads=one_pass)
    one_pass: Optional[Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]] = None


PLAIN = Kernels(scores_math, query_grads_math, key_grads_math)


# for each argument of a kernel, by position, the sizes it compiles as symbols
Dims = Mapping[int, tuple[int, ...]]


def compiled(fn: Callable[..., Any], dims: Optional[Dims], **options: Any) -> Callable[..., Any]:
    """`fn` compiled by torch.compile at its first call. `dims` None: every size specialised, one graph per
    shape (mode=throughput's one batch, as measured). Else, for each argument by position, the sizes that
    compile as symbols: one graph for all of their values, the others specialised."""
    kernel = torch.compile(fn, dynamic=False, **options)
    return kernel if dims is None else partial(_marked, kernel, dims)


def _marked(kernel: Callable[..., Any], dims: Dims, *args: Any) -> Any:
    # marked on each call's own tensors; maybe_: a size of 1 (the beam search's one query a step) specialises
    # to a graph of its own where mark_dynamic would raise
    for i, sizes in dims.items():
        for d in sizes:
            torch._dynamo.maybe_mark_dynamic(args[i], d)
    return kernel(*args)


# the batch and the query and key times (q, k, the incoming gradient): the units stay static, so that the
# forward's reduction over them is compiled for its size
_QK: Dims = {0: (0, 1), 1: (0, 1)}
_QK_GRAD: Dims = {**_QK, 4: (0, 1, 2)}


def compiled_kernels(dynamic: bool = False, one_pass: bool = False, **options: Any) -> Kernels:
    """The three reductions, each compiled on its own; `dynamic`: one graph for every batch and sentence
    length (training's buckets), else one per shape; `one_pass`: the gradients from scores_grads.py's kernel
    instead (no graph: any shape); `options`: torch.compile's (a test's backend)."""
    grads: Optional[Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]]] = None
    if one_pass:  # refused before anything compiles: torch.compile itself may import Triton first
        try:
            from reference_models.gnmt.scores_grads import one_pass_grads  # imports Triton: CUDA runs alone
        except ImportError as err:
            raise ConfigError(f"model.attention_grads=one_pass runs a Triton kernel, and this torch has no Triton "
                              f"({err}): leave it out (the default, reductions, needs none)") from None
        grads = one_pass_grads
    dims: list[Optional[Dims]] = [_QK, _QK_GRAD, _QK_GRAD] if dynamic else [None] * 3
    scores, query_grads, key_grads = (compiled(fn, d, **options) for fn, d in zip(PLAIN[:3], dims))
    return Kernels(scores, query_grads, key_grads, one_pass=grads)


class FusedScores(torch.autograd.Function):
    """additive_scores' values and gradients, through `kernels`; the scores in q's dtype."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor, v: torch.Tensor,
                kernels: Kernels) -> torch.Tensor:
        ctx.save_for_backward(q, k, bias, v)
        ctx.kernels = kernels
        # detached: the kernel's graph is guarded on its inputs' requires_grad, so that training's inputs
        # (which require it) and the beam search's (which do not) share one graph of a shape
        return kernels.scores(q.detach(), k.detach(), bias.detach(), v.detach()).to(q.dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        q, k, bias, v = ctx.saved_tensors
        kernels: Kernels = ctx.kernels
        if kernels.one_pass is not None:
            grad_q, weighted, grad_k = kernels.one_pass(q, k, bias, v, grad)
        else:
            grad_q, weighted = kernels.query_grads(q, k, bias, v, grad)
            grad_k = kernels.key_grads(q, k, bias, v, grad)
        return (grad_q.to(q.dtype), grad_k.to(k.dtype), grad_q.sum((0, 1)).to(bias.dtype),
                weighted.sum((0, 1)).to(v.dtype), None)
