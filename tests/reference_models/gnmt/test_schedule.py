"""GNMT's warm-up / remain / decay schedule reproduces the values of NVIDIA's MLPerf v0.7 logs."""
from __future__ import annotations

import pytest
import torch

from reference_models.gnmt.schedule import Schedule, warmup_steps


def test_derived_steps_match_nvidia_dgx1_v0_7_log():
    # result_0.txt: 1938 iterations per epoch, 5 planned epochs -> remain_steps 6453, decay_interval 809
    s = Schedule.for_run(2e-3, 1938 * 5)
    assert (s.remain_steps, s.decay_interval, s.warmup_steps, s.decay_steps) == (6453, 809, 200, 4)


def test_warmup_decay_and_the_first_update():
    s = Schedule.for_run(2e-3, 1000, warmup_steps=100, remain_steps=0.5)
    assert s.factor(1) * 2e-3 == pytest.approx(2e-3 * 0.01 ** (99 / 100))
    assert s.factor(100) == 1.0 and s.factor(499) == 1.0
    assert s.factor(500) == 0.5 and s.factor(625) == 0.25 and s.factor(10_000) == 0.5 ** 4
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=2e-3)
    sched = s.scheduler(opt)
    assert opt.param_groups[0]["lr"] == pytest.approx(2e-3 * s.factor(1))  # the first update uses step 1
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(2e-3 * s.factor(2))


def test_a_warmup_in_sentences_takes_the_same_share_of_an_epoch_on_more_ranks():
    # 12,800 sentences: 200 steps at the embedded preset's batch of 64 on one rank, 25 at 512 on eight
    assert [warmup_steps(200, 12_800, 64 * n) for n in (1, 2, 4, 8)] == [200, 100, 50, 25]
    assert warmup_steps(200, None, 512) == 200  # unset: MLPerf's step count at any batch
    assert warmup_steps(200, 10, 512) == 1  # never no warm-up at all
