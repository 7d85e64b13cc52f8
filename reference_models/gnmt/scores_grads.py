"""The additive attention scores' three gradients in one pass (model.attention_grads=one_pass): a Triton kernel
that computes each tanh(q[b, i, n] + k[b, j, n] + bias[n]) of the backward once, where the compiled reductions of
scores.py compute it twice (one reduction over the keys, one over the queries: 7.2 ms each at b2048 on an H200).

    python -m harness.train model=gnmt dataset=wmt16 mode=throughput model.batch_size=2048 model.attention_grads=one_pass

With g = dL/ds[b, i, j] and d = g (1 - tanh^2) at each (b, i, j, n):
    grad_q[b, i, n] = v[n] sum_j d          weighted[b, i, n] = sum_j g tanh      grad_k[b, j, n] = v[n] sum_i d
(bias's gradient is grad_q summed over b and i, v's is weighted summed: FusedScores.backward does both).

Each program holds one sentence's keys (up to 32 at a time) for a block of units in registers and walks the
queries: per query one tile of 2 special-function calls and 8 adds and multiplies an element, two sums over the
keys written out, and the keys' sums kept running; the next query's inputs load during this one's arithmetic.
Nothing of size batch x T_q x T_k x units is ever stored. A hand-written kernel, because Inductor compiles the
two sums over different axes of one tensor either as that tensor written out (15.6 ms, the first fused path)
or as two reductions, each with its own tanh. Any batch and any lengths run through it without a recompile,
but for key counts under 32: each power of two is compiled once (8, 16; 32 and above share one).
"""
from __future__ import annotations

import math
import os

import torch
import triton
import triton.language as tl

__all__ = ["one_pass_grads"]

# A program's units are one per thread (BLOCK_N = 32 x WARPS), so each thread holds all of a block's keys and the
# sums over them stay in its registers: for sm_90, Triton 3.8 compiles this with no shared memory and no barrier,
# where a block of 32 keys x 64 units split the keys across threads (8 barriers a query). Up to MAX_KEYS keys a
# pass; longer sentences take more passes.
WARPS = 4
BLOCK_N = 32 * WARPS
MAX_KEYS = 32
# Triton's interpreter (the CPU tests) runs no PTX: there the same arithmetic goes through tl.exp2 and a division
INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
TWO_LOG2E = tl.constexpr(2.0 * math.log2(math.e))


@triton.jit
def _rcp_exp2_plus_1(x, PTX: tl.constexpr):
    # 1 / (2^x + 1) by ex2 and rcp with denormals flushed (an argument under -126 gives 1 flushed or not): the
    # non-flushing ex2 of tl.exp adds a compare and two multiplies an element, a division a multiply
    if PTX:
        return tl.inline_asm_elementwise(
            "{ .reg .f32 e; ex2.approx.ftz.f32 e, $1; add.ftz.f32 e, e, 0f3F800000; rcp.approx.ftz.f32 $0, e; }",
            "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    else:
        return 1.0 / (tl.exp2(x) + 1.0)


@triton.jit
def _grads(q, k, bias, v, grad, grad_q, weighted, grad_k, T_q, T_k, N,
           sq_b, sq_i, sk_b, sk_j, KEYS,
           BLOCK_J: tl.constexpr, BLOCK_N: tl.constexpr, PTX: tl.constexpr):
    # With r = 1 / (exp(2x) + 1): tanh x = 1 - 2r and 1 - tanh^2 x = 4 r (1 - r), so each element costs two
    # special-function calls (ex2, rcp) and eight adds and multiplies; q and k arrive pre-scaled by 2 log2(e)
    # (the factor 4 is applied once, to the sums). The next query's row and gradients are loaded before this
    # query's arithmetic, so that their latency hides behind it (two programs an SM leave few warps to switch to).
    b = tl.program_id(0)
    n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = n < N
    v4 = tl.load(v + n, mask=n_ok, other=0.0).to(tl.float32) * 4.0
    bias_n = tl.load(bias + n, mask=n_ok, other=0.0).to(tl.float32) * TWO_LOG2E
    for j0 in range(0, T_k, BLOCK_J):  # one pass for up to BLOCK_J keys; longer sentences add to the queries' sums
        j = j0 + tl.arange(0, BLOCK_J)
        j_ok = j < T_k
        kj_ok = j_ok[:, None] & n_ok[None, :]
        kb = tl.load(k + b * sk_b + j[:, None] * sk_j + n[None, :], mask=kj_ok, other=0.0).to(tl.float32)
        kb = kb * TWO_LOG2E + bias_n[None, :]
        keys = tl.zeros((BLOCK_J, BLOCK_N), dtype=tl.float32)  # sum over the queries of g r (1 - r), for grad_k
        # grad is zero-padded to KEYS keys a row (one_pass_grads), so its rows load whole, in 16-byte vectors
        # (Triton specializes a KEYS divisible by 16, which 32 keys a pass and more are)
        q_i = tl.load(q + b * sq_b + n, mask=n_ok, other=0.0).to(tl.float32) * TWO_LOG2E
        g = tl.load(grad + b * T_q * KEYS + j)
        for i in range(0, T_q):
            more = i + 1 < T_q
            q_next = tl.load(q + b * sq_b + (i + 1) * sq_i + n, mask=n_ok & more, other=0.0).to(tl.float32)
            g_next = tl.load(grad + (b * T_q + i + 1) * KEYS + j, mask=more, other=0.0)
            r = _rcp_exp2_plus_1(kb + q_i[None, :], PTX)
            g2 = g[:, None]
            d = g2 * (r - r * r)  # zero at padded keys (g is 0 there) and units (v is)
            keys += d
            row = (b * T_q + i) * N + n
            over_q = tl.sum(d, axis=0) * v4  # sums over the keys: in each thread's registers
            over_t = tl.sum(g2 * (1.0 - 2.0 * r), axis=0)
            if j0 > 0:
                over_q += tl.load(grad_q + row, mask=n_ok, other=0.0)
                over_t += tl.load(weighted + row, mask=n_ok, other=0.0)
            tl.store(grad_q + row, over_q, mask=n_ok)
            tl.store(weighted + row, over_t, mask=n_ok)
            q_i = q_next * TWO_LOG2E
            g = g_next
        out = (b * T_k + j[:, None]) * N + n[None, :]
        tl.store(grad_k + out, keys * v4[None, :], mask=kj_ok)


def one_pass_grads(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor, v: torch.Tensor, grad: torch.Tensor,
                   max_keys: int = MAX_KEYS) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q (B, T_q, n) and k (B, T_k, n), each with unit stride along n (the model's transposed projections are),
    bias and v (n,), grad (B, T_q, T_k): the queries' gradient, sum_j grad * tanh (v's before its last sum) and
    the keys' gradient, fp32, contiguous. `max_keys` (a power of two): keys a pass, for
    scripts/tools/gnmt_scores_bench.py to compare."""
    B, T_q, N = q.shape
    T_k = k.shape[1]
    if q.stride(2) != 1 or k.stride(2) != 1:
        raise ValueError("one_pass_grads reads q and k with unit stride along the units")
    block_j = min(max(triton.next_power_of_2(T_k), 8), max_keys)
    keys = triton.cdiv(T_k, block_j) * block_j
    # fp32, each row padded with zeros to whole passes: a few MB where the kernel would else load key by key
    padded = torch.nn.functional.pad(grad.float(), (0, keys - T_k)).contiguous()
    grad_q = torch.empty(B, T_q, N, device=q.device, dtype=torch.float32)
    weighted = torch.empty_like(grad_q)
    grad_k = torch.empty(B, T_k, N, device=q.device, dtype=torch.float32)
    _grads[(B, triton.cdiv(N, BLOCK_N))](
        q, k, bias.contiguous(), v.contiguous(), padded, grad_q, weighted, grad_k, T_q, T_k, N,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), keys,
        BLOCK_J=block_j, BLOCK_N=BLOCK_N, PTX=not INTERPRETED, num_warps=WARPS)
    return grad_q, weighted, grad_k
