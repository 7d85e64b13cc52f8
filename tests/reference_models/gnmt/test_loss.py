"""GNMT's loss written out pass by pass (reference_models/gnmt/loss.py) against torch's label-smoothed
cross-entropy, its definition."""
from __future__ import annotations

import pytest
import torch

from reference_models.gnmt.loss import fused_smoothed_loss, smoothed_loss
from reference_models.gnmt.tokenizer import PAD_ID


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_the_written_out_loss_and_its_gradient_are_the_definition_s(smoothing):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 4, 11, generator=g)  # fp32: the definition computes in fp32
    target = torch.randint(PAD_ID + 1, 11, (6, 4), generator=g)
    target[4:, 1] = PAD_ID  # a shorter sentence: its padding counts for nothing
    target[5, 3] = PAD_ID
    a, b = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    expected, got = smoothed_loss(a, target, smoothing), fused_smoothed_loss(b, target, smoothing)
    torch.testing.assert_close(got, expected)
    (expected * 3).backward()
    (got * 3).backward()
    torch.testing.assert_close(b.grad, a.grad)
    assert b.grad is not None and not b.grad[5, 3].any()  # no gradient flows into a pad position


def test_fp16_logits_get_an_fp16_gradient_computed_in_fp32():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(5, 3, 13, generator=g).half()
    target = torch.randint(PAD_ID + 1, 13, (5, 3), generator=g)
    a, b = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    expected, got = smoothed_loss(a, target, 0.1), fused_smoothed_loss(b, target, 0.1)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected)
    expected.backward()
    got.backward()
    assert b.grad is not None and b.grad.dtype == torch.float16
    torch.testing.assert_close(b.grad, a.grad)
