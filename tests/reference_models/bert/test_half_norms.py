"""model.half_norms: under autocast the LayerNorms read and write the autocast dtype, so the residual stream
between BERT's layers is 2 bytes an element instead of autocast's fp32; without autocast nothing changes. On
a CPU, autocast's bf16 stands in for a GPU's fp16 (the same policy puts LayerNorm in fp32 on both)."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from harness.config import compose
from reference_models.bert.model import BertEncoder, BertForQuestionAnswering, HalfIONorm

SHAPE = dict(vocab=64, hidden=32, layers=2, heads=4, intermediate=64, positions=16, dropout=0.0,
             attention_dropout=0.0, pooler=False)  # SQuAD reads no pooler, as build_model makes it


def _pair() -> tuple[BertForQuestionAnswering, BertForQuestionAnswering]:
    torch.manual_seed(0)
    plain = BertForQuestionAnswering(BertEncoder(**SHAPE))
    half = BertForQuestionAnswering(BertEncoder(**SHAPE, half_norms=True))
    half.load_state_dict(plain.state_dict())  # the same parameters under the same names
    return plain, half


def _batch() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return {"tokens": torch.randint(0, 64, (3, 16), generator=g), "token_types": torch.zeros(3, 16, dtype=torch.long),
            "start": torch.randint(0, 16, (3,), generator=g), "end": torch.randint(0, 16, (3,), generator=g)}


def _stream_dtypes(model: nn.Module) -> list[torch.dtype]:
    """The dtype of each layer's output: the residual stream the next layer reads."""
    seen: list[torch.dtype] = []
    for layer in model.bert.layers:
        layer.register_forward_hook(lambda m, args, out: seen.append(out.dtype))
    return seen


def test_without_autocast_the_loss_and_every_gradient_are_layer_norm_s_exactly():
    plain, half = _pair()
    for model in (plain, half):
        model(**_batch()).backward()
    torch.testing.assert_close(half(**_batch()), plain(**_batch()), rtol=0, atol=0)
    for (name, a), (_, b) in zip(plain.named_parameters(), half.named_parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=0, atol=0, msg=name)


def test_under_autocast_the_stream_is_half_the_bytes_and_the_step_autocast_s_to_its_rounding():
    plain, half = _pair()
    plain_stream, half_stream = _stream_dtypes(plain), _stream_dtypes(half)
    losses = []
    for model in (plain, half):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(**_batch())
        loss.backward()
        losses.append(loss)
    assert plain_stream == [torch.float32] * 2 and half_stream == [torch.bfloat16] * 2
    torch.testing.assert_close(losses[1], losses[0], rtol=2e-2, atol=2e-2)
    for name, b in half.named_parameters():
        assert b.dtype == b.grad.dtype == torch.float32, name  # the weights and their gradients stay fp32
        assert torch.isfinite(b.grad).all(), name
    # the whole gradient, as the optimizer's step sees it: a parameter of small gradient (a LayerNorm bias near
    # the head sums cancelling bf16 terms) may differ by more than its own size, and by little against the step
    every = [torch.cat([p.grad.flatten() for p in m.parameters()]) for m in (plain, half)]
    assert nn.functional.cosine_similarity(*every, dim=0) > 0.999
    assert (every[1] - every[0]).abs().max() < 0.02 * every[0].abs().max()


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf:UserWarning")
def test_the_norm_compiles_under_autocast_without_a_graph_break():
    """fullgraph: the layers are compiled one by one on a GPU (model.compile); a graph break at the autocast
    query or the disabled region would fail here, not there."""
    torch.manual_seed(0)
    norm = HalfIONorm(32)
    compiled = torch.compile(norm, backend="aot_eager", fullgraph=True)
    x = torch.randn(4, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = compiled(x), norm(x)
    assert got.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(got, want)
    torch._dynamo.reset()


def test_on_in_the_cuda_fast_path_of_both_presets_and_off_eager_or_on_a_cpu():
    from harness.fastpath import resolve

    for name in ("bert_base", "bert_large"):
        for extra, cuda, want in (([], True, True), (["eager=true"], True, False), ([], False, False),
                                  (["model.half_norms=false"], True, False)):
            cfg = compose([f"model={name}", "mode=throughput", *extra])
            resolve(cfg, cuda=cuda, given=extra)
            assert cfg.model.half_norms is want, (name, extra, cuda)
