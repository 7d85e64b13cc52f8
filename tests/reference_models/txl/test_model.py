"""Transformer-XL at NVIDIA's WikiText-103 scale (parameter counts), its relative attention, memory
and adaptive softmax."""
from __future__ import annotations

import pytest
import torch

from harness.config import compose
from harness.run.build import build_run, context_for
from reference_models.txl.model import MemTransformerLM, rel_shift
from tests.reference_models.txl.spread import spread_adaptive

CUTOFFS = [19997, 39997, 199997]


def txl_params(n_token: int, layers: int, d: int, heads: int, d_head: int, inner: int, div_val: int) -> int:
    """MemTransformerLM's parameters from NVIDIA's module shapes (mem_transformer.py, tie_weight and
    tie_projs [False, True, True, True]): per layer the fused QKV, r_net and o_net (no biases), two
    LayerNorms and the feed-forward; the global u and v biases; adaptive embedding tables (and, with
    div_val > 1, a d x d_i projection per cluster); the softmax's cluster weights and biases, its
    output biases and, with div_val > 1, its own head projection. Output weights are the embeddings."""
    layer = 3 * d * heads * d_head + d * heads * d_head + heads * d_head * d + 2 * d + (d * inner + inner + inner * d + d) + 2 * d
    edges = [0, *CUTOFFS, n_token]
    sizes = [b - a for a, b in zip(edges, edges[1:])]
    widths = [d // div_val ** i for i in range(len(sizes))]
    embedding = sum(s * w for s, w in zip(sizes, widths)) + (sum(d * w for w in widths) if div_val > 1 else 0)
    softmax = len(CUTOFFS) * (d + 1) + n_token + (d * d if div_val > 1 else 0)
    return layers * layer + 2 * heads * d_head + embedding + softmax


@pytest.mark.parametrize("name,shape,segment,expected", [
    ("txl_base", (16, 512, 8, 64, 2048, 1), 192, 191_950_298),
    ("txl_large", (18, 1024, 16, 64, 4096, 4), 384, 285_167_482),
])
def test_nvidias_wikitext103_configurations_have_their_parameter_counts(name, shape, segment, expected):
    layers, d, heads, d_head, inner, div_val = shape
    assert txl_params(267735, *shape) == expected
    m = compose([f"model={name}", "mode=throughput"]).model
    assert (m.n_layer, m.d_model, m.n_head, m.d_head, m.d_inner, m.div_val) == shape
    assert (m.n_token, list(m.cutoffs), m.tgt_len, m.mem_len) == (267735, CUTOFFS, segment, segment)
    with torch.device("meta"):
        model = MemTransformerLM(m.n_token, list(m.cutoffs), layers, d, heads, d_head, inner, div_val=div_val,
                                 mem_len=m.mem_len)
    assert sum(p.numel() for p in model.parameters()) == expected


def test_rel_shift_lines_each_query_up_with_its_distance_to_each_key():
    qlen, mlen = 4, 3
    klen = qlen + mlen
    x = torch.randn(2, 3, qlen, klen)  # scores against relative distances klen-1 .. 0
    shifted = rel_shift(x)
    for i in range(qlen):
        for j in range(mlen + i + 1):  # keys a query may see
            assert shifted[..., i, j].equal(x[..., i, qlen - 1 - i + j])


@pytest.mark.parametrize("div_val,d_embed", [(1, 16), (2, 16), (1, 8)])
def test_the_adaptive_softmax_is_a_distribution_over_the_whole_vocabulary(div_val, d_embed):
    torch.manual_seed(0)
    emb, crit = spread_adaptive(50, d_embed, [10, 20, 35], div_val)
    hidden = torch.randn(1, 16)
    logprob = torch.stack([-crit(hidden, torch.tensor([t])) for t in range(50)])
    assert torch.logsumexp(logprob, 0).item() == pytest.approx(0.0, abs=1e-5)
    assert emb(torch.tensor([3, 15, 40])).shape == (3, 16)


def test_memory_carries_mem_len_states_of_every_layer_from_step_to_step(tmp_path):
    cfg = compose(["model=txl_large", "+debug=txl_large", "mode=throughput", "device=cpu", "seed=1",
                   f"output_root={tmp_path}"])
    bench = build_run(cfg, context_for(cfg)).bench
    segment = bench.synthetic_batch()
    assert segment[0].shape == (16, 4) and segment[1].shape == (16, 4)
    assert segment[1][:-1].equal(segment[0][1:])  # the stream, one token on
    loss, tokens = bench.loss(bench.model, segment)
    assert tokens == 64 and bench.mems.shape == (2, 16, 4, 32) and not bench.mems.requires_grad
    loss.backward()
    assert all(p.grad is not None for p in bench.model.parameters())  # every cluster was in the segment
    first_mems = bench.mems
    bench.loss(bench.model, segment)  # the next step attends over the memory the first one left
    assert bench.mems.shape == (2, 16, 4, 32) and not bench.mems.equal(first_mems)
