"""The Transformer's loss and learning rate are the reference's."""
from __future__ import annotations

import math

import pytest
import torch

from reference_models.transformer.benchmark import smoothed_cross_entropy
from reference_models.transformer.schedule import InverseSqrt


def test_smoothed_loss_is_the_references_padded_cross_entropy():
    """metrics.padded_cross_entropy_loss: soft targets 1 - s on the label and s / (V - 1) elsewhere,
    less the entropy of that distribution, averaged over the non-padding target tokens."""
    torch.manual_seed(0)
    vocab, s = 11, 0.1
    logits = torch.randn(3, 5, vocab)
    target = torch.randint(1, vocab, (3, 5))
    target[1, 3:] = 0
    soft = torch.full((3, 5, vocab), s / (vocab - 1))
    soft.scatter_(2, target[..., None], 1 - s)
    xent = -(soft * torch.log_softmax(logits, -1)).sum(-1)
    xent -= -((1 - s) * math.log(1 - s) + (vocab - 1) * s / (vocab - 1) * math.log(s / (vocab - 1) + 1e-20))
    weights = (target != 0).float()
    expected = (xent * weights).sum() / weights.sum()
    torch.testing.assert_close(smoothed_cross_entropy(logits, target, s), expected)
    perfect = torch.where(soft > 0.5, math.log(1 - s), math.log(s / (vocab - 1)))  # logits whose softmax is `soft`
    assert float(smoothed_cross_entropy(perfect, target, s)) == pytest.approx(0.0, abs=1e-5)


def test_linear_warmup_then_inverse_square_root():
    s = InverseSqrt(2.0, 1024, 16000)
    assert s.peak == pytest.approx(4.941e-4, rel=1e-3) and s.rate(16000) == pytest.approx(s.peak)
    assert s.rate(0) == 0.0 and s.rate(8000) == pytest.approx(s.peak / 2)
    assert s.rate(64000) == pytest.approx(s.peak / 2)  # 1/sqrt(step) after the warm-up
    params = [torch.zeros(1, requires_grad=True)]
    opt = torch.optim.Adam(params, lr=1.0)
    sched = s.scheduler(opt)
    assert opt.param_groups[0]["lr"] == 0.0  # the first update runs at step 0, as in the reference's graph
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(s.rate(1))
