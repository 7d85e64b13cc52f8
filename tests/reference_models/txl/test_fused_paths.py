"""Transformer-XL's fused paths against the reference's plain formulation: relative attention as
einsums and an explicit softmax, the adaptive softmax with a nonzero per tail cluster. Same weights,
same batch, fp32 on the CPU: losses within 1e-5 relative, gradients within 1e-4 of their largest
entry (the fused kernels sum in another order)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from reference_models.txl.adaptive import ProjectedAdaptiveLogSoftmax
from reference_models.txl.model import MemTransformerLM, RelPartialLearnableLayer, init_weights, rel_shift
from tests.reference_models.txl.spread import spread_adaptive


def plain_layer(layer: RelPartialLearnableLayer, w, r, r_w_bias, r_r_bias, mask, mem):
    """The reference's layer (mem_transformer.py, RelPartialLearnableMultiHeadAttn, post-norm)."""
    qlen, bsz = w.shape[:2]
    cat = w if mem is None else torch.cat([mem, w], 0)
    q, k, v = layer.qkv_net(cat).chunk(3, dim=-1)
    klen = k.shape[0]
    q = q[-qlen:].reshape(qlen, bsz, layer.n_head, layer.d_head)
    k = k.reshape(klen, bsz, layer.n_head, layer.d_head)
    v = v.reshape(klen, bsz, layer.n_head, layer.d_head)
    r_k = layer.r_net(r).reshape(r.shape[0], layer.n_head, layer.d_head)
    content = torch.einsum("ibnd,jbnd->bnij", q + r_w_bias, k)
    position = rel_shift(torch.einsum("ibnd,jnd->bnij", q + r_r_bias, r_k))
    score = ((content + position) * layer.scale).masked_fill(mask, float("-inf"))
    prob = F.dropout(F.softmax(score, dim=3), layer.dropatt, layer.training)
    attn = torch.einsum("bnij,jbnd->ibnd", prob, v).reshape(qlen, bsz, layer.n_head * layer.d_head)
    h = layer.attn_norm(w + layer.drop(layer.o_net(attn)))
    return layer.ff_norm(h + layer.ff(h))


def plain_cluster(crit: ProjectedAdaptiveLogSoftmax, i: int):
    """Cluster i's output weight, bias and projection, sliced from the tables as the reference does."""
    emb = crit.embedding[0]
    proj = crit.head_proj if i == 0 else emb.projs[0 if emb.div_val == 1 else i] if len(emb.projs) else None
    if emb.div_val == 1:
        first, end = emb.clusters[i]
        return emb.layers[0].weight[first:end], crit.biases[0][first:end], proj  # type: ignore[index]
    return emb.layers[i].weight, crit.biases[i], proj


def plain_nll(crit: ProjectedAdaptiveLogSoftmax, hidden, target):
    """The reference's adaptive softmax: the head, then each tail cluster's rows found by nonzero."""
    weight, bias, proj = plain_cluster(crit, 0)
    head = crit._logits(hidden, torch.cat([weight, crit.cluster_weight]), torch.cat([bias, crit.cluster_bias]), proj)
    head_logprob = F.log_softmax(head.float(), dim=-1)
    shortlist = weight.shape[0]
    in_head = target < shortlist
    total = -(head_logprob.gather(1, target.clamp(max=shortlist - 1)[:, None]).squeeze(1) * in_head).sum()
    for i, (first, end) in enumerate(crit.embedding[0].clusters[1:], start=1):
        rows = ((target >= first) & (target < end)).nonzero().squeeze(1)
        if rows.numel() == 0:
            continue
        weight, bias, proj = plain_cluster(crit, i)
        tail = F.log_softmax(crit._logits(hidden[rows], weight, bias, proj).float(), dim=-1)
        picked = tail.gather(1, (target[rows] - first)[:, None]).squeeze(1)
        total = total - (head_logprob[rows, shortlist + i - 1] + picked).sum()
    return total / target.numel()


def _close_grads(params, fused, plain):
    for p, a, b in zip(params, fused, plain):
        scale = b.abs().max().clamp(min=1e-12)
        assert (a - b).abs().max() <= 1e-4 * scale, p.shape


@pytest.mark.parametrize("mlen,same_length", [(0, False), (6, False), (6, True)])
def test_the_fused_relative_attention_equals_the_einsum_formulation(mlen, same_length):
    torch.manual_seed(0)
    model = MemTransformerLM(300, [100, 200], 1, 32, 4, 8, 64, dropout=0.0, mem_len=6, same_length=same_length)
    init_weights(model, 0.2, 0.2)  # wide: the position term must weigh in the softmax
    layer = model.layers[0]
    qlen, bsz = 5, 3
    w = torch.randn(qlen, bsz, 32, requires_grad=True)
    mem = torch.randn(mlen, bsz, 32) if mlen else None
    pos = torch.arange(qlen + mlen - 1, -1, -1.0)
    sinusoid = torch.outer(pos, model.inv_freq)
    r = torch.cat([sinusoid.sin(), sinusoid.cos()], dim=-1)[:, None]
    mask = model._mask(qlen, mlen, w.device)
    params = [w, *layer.parameters(), model.r_w_bias, model.r_r_bias]
    fused = layer(w, r, model.r_w_bias, model.r_r_bias, mask, mem)
    plain = plain_layer(layer, w, r, model.r_w_bias, model.r_r_bias, mask, mem)
    assert fused.shape == (qlen, bsz, 32)
    assert torch.allclose(fused, plain, rtol=1e-5, atol=1e-5)
    g = torch.randn_like(fused)
    _close_grads(params, torch.autograd.grad(fused, params, g), torch.autograd.grad(plain, params, g))


@pytest.mark.parametrize("div_val,d_embed", [(1, 16), (2, 16), (1, 8)])
def test_the_sorted_cluster_gather_equals_a_nonzero_per_cluster(div_val, d_embed):
    torch.manual_seed(1)
    emb, crit = spread_adaptive(60, d_embed, [10, 25, 40], div_val)
    hidden = torch.randn(50, 16 if crit.head_proj is not None else d_embed)
    target = torch.cat([torch.randint(0, 60, (45,)), torch.tensor([0, 10, 25, 40, 59])])
    target[:8] = 30  # one cluster over-represented, one (25..40) present, none empty
    params = [*emb.parameters(), *crit.parameters()]
    fused = crit(hidden, target)
    known = crit(hidden, target, crit.cluster_counts(target))  # counts handed in: the same loss
    plain = plain_nll(crit, hidden, target)
    assert fused.item() == pytest.approx(plain.item(), rel=1e-5)
    assert known.item() == fused.item()
    used = [p for p in params if p.requires_grad]
    _close_grads(used, torch.autograd.grad(fused, used, allow_unused=True, materialize_grads=True),
                 torch.autograd.grad(plain, used, allow_unused=True, materialize_grads=True))
    assert crit.cluster_counts(target) == [int((target < 10).sum()), int(((target >= 10) & (target < 25)).sum()),
                                           int(((target >= 25) & (target < 40)).sum()), int((target >= 40).sum())]
    no_tail = crit(hidden[:3], torch.tensor([1, 2, 3]))  # empty tail clusters are skipped
    assert no_tail.item() == pytest.approx(plain_nll(crit, hidden[:3], torch.tensor([1, 2, 3])).item(), rel=1e-5)


def test_attention_dropout_draws_as_the_reference_does_on_the_cpu():
    """With dropatt on, the fused kernel's CPU path draws the same mask as nn.Dropout after the
    softmax: the debug presets' golden losses (txl_large's dropatt 0.2) stay as they were."""
    torch.manual_seed(2)
    model = MemTransformerLM(300, [100, 200], 1, 32, 4, 8, 64, dropout=0.0, dropatt=0.3, mem_len=4)
    init_weights(model, 0.2, 0.2)
    layer = model.layers[0].train()
    w, mem = torch.randn(4, 2, 32), torch.randn(4, 2, 32)
    pos = torch.arange(7, -1, -1.0)
    sinusoid = torch.outer(pos, model.inv_freq)
    r = torch.cat([sinusoid.sin(), sinusoid.cos()], dim=-1)[:, None]
    mask = model._mask(4, 4, w.device)
    torch.manual_seed(3)
    fused = layer(w, r, model.r_w_bias, model.r_r_bias, mask, mem)
    torch.manual_seed(3)
    plain = plain_layer(layer, w, r, model.r_w_bias, model.r_r_bias, mask, mem)
    assert torch.allclose(fused, plain, rtol=1e-5, atol=1e-5)


def test_the_benchmark_counts_its_segments_clusters_once_and_trains_on_the_same_loss(tmp_path):
    """The segment trained on at every step has its cluster counts read when it is made: the step
    then reads nothing from the device, and its loss is the one the model computes on its own."""
    from harness.config import compose
    from harness.run.build import build_run, context_for

    cfg = compose(["model=txl_base", "+debug=txl_base", "mode=throughput", "device=cpu", "seed=1",
                   f"output_root={tmp_path}"])
    bench = build_run(cfg, context_for(cfg)).bench
    data, target = bench.synthetic_batch()
    assert bench.counts == bench.model.crit.cluster_counts(target.flatten()) and sum(bench.counts) == target.numel()
    assert all(c > 0 for c in bench.counts)  # every cluster is in the segment
    bench.model.eval()  # no dropout: the two losses must be the same number
    loss, _ = bench.loss(bench.model, (data, target))
    alone, _ = bench.model(data, target, None)
    assert loss.item() == pytest.approx(alone.item(), rel=1e-6)


def test_a_step_on_the_benchmarks_segment_reads_no_value_from_the_device(tmp_path, monkeypatch):
    """The calls that would wait for a GPU (reading a value, or a nonzero's data-dependent shape)
    are not made in the forward once the segment's counts are known."""
    from harness.config import compose
    from harness.run.build import build_run, context_for

    cfg = compose(["model=txl_large", "+debug=txl_large", "mode=throughput", "device=cpu", "seed=1",
                   f"output_root={tmp_path}"])
    bench = build_run(cfg, context_for(cfg)).bench
    batch = bench.synthetic_batch()

    def refuse(*args, **kwargs):
        raise AssertionError("a host sync in the step")

    for name in ("item", "tolist", "nonzero", "__bool__"):
        monkeypatch.setattr(torch.Tensor, name, refuse)
    monkeypatch.setattr(torch, "nonzero", refuse)
    for _ in range(2):  # without, then with the memory
        loss, _ = bench.loss(bench.model, batch)
        loss.backward()
