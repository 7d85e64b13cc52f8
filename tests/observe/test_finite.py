"""The non-finite-loss check names the first bad step, its epoch and term, and reads the device only
once per interval (the two-rank case end to end: tests/e2e/test_run_ends.py)."""
from __future__ import annotations

import pytest
import torch

from harness.observe import finite
from harness.observe.finite import FiniteLossCheck, NonFiniteLoss
from harness.observe.hooks import EpochStats, StepDone


def _step(check: FiniteLossCheck, n: int, loss: float, terms: dict[str, float] | None = None, epoch: int = 1) -> None:
    check.after_step(StepDone(epoch, n, n, 8, 8 * n, torch.tensor(loss),
                              None if terms is None else {k: torch.tensor(v) for k, v in terms.items()}))


def test_a_nan_is_found_at_the_next_check_naming_its_step_and_term(monkeypatch):
    reads = []
    real_item = torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "item", lambda t: reads.append(1) or real_item(t))
    check = FiniteLossCheck(torch.device("cpu"), rank=0, every=5)
    for n in range(1, 7):
        _step(check, n, 1.0, {"box": 0.4, "class": 0.6})
    assert len(reads) == 1  # one read for the five steps of the interval, none per step
    with pytest.raises(NonFiniteLoss) as raised:
        for n in range(7, 11):
            _step(check, n, float("nan"), {"box": 0.4, "class": float("nan")} if n == 8 else {"box": 0.4, "class": 0.6})
    err = raised.value
    assert (err.step, err.epoch, err.term, err.rank) == (7, 1, "loss", 0)  # step 7: the loss itself
    assert str(err) == ("the loss is nan at step 7 (epoch 1) on rank 0; the run stopped at step 10 (checked every 5 "
                        "steps): lower the learning rate or check the data")


def test_a_bad_term_is_named_and_the_epochs_end_checks_what_is_left():
    check = FiniteLossCheck(torch.device("cpu"), every=100)
    _step(check, 1, 1.0, {"box": 0.5, "class": 0.5})
    _step(check, 2, float("inf"), {"box": float("inf"), "class": 0.5}, epoch=3)
    with pytest.raises(NonFiniteLoss, match="^loss term box is inf at step 2 \\(epoch 3\\)"):
        check.end_epoch(EpochStats(3, 2))


def test_finite_losses_pass_every_check():
    check = FiniteLossCheck(torch.device("cpu"), every=3)
    for n in range(1, 10):
        _step(check, n, 0.5)
    check.before_eval(1)
    check.end_epoch(EpochStats(1, 9))
    assert finite.CHECK_EVERY >= 10  # a read per hundred steps, not per step, in a run
