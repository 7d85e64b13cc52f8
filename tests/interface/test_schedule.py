"""Evaluation schedules cut a run into MLPerf blocks the way the references did."""
from __future__ import annotations

import pytest

from harness.interface import EvalSchedule, ScheduleError
from harness.interface.schedule import Block


def test_every_epoch_is_one_block_per_epoch():
    assert EvalSchedule().blocks(3) == [(1, 1), (2, 1), (3, 1)]


def test_an_offset_schedule_matches_mlperf_resnet_blocks():
    # MLPerf v0.7 ResNet logs: blocks 1-3, 4-7, 8-11, ... with evaluations after epochs 3, 7, 11
    assert EvalSchedule.of(every=4, offset=1).blocks(12) == [(1, 3), (4, 4), (8, 4), (12, 1)]


def test_listed_epochs_and_the_last_epoch_are_evaluated():
    s = EvalSchedule.of(epochs=[2, 5])
    assert s.blocks(6) == [(1, 2), (3, 3), (6, 1)]
    assert [e for e in range(1, 7) if s.evaluates_after(e, 6)] == [2, 5, 6]


def test_a_sample_schedule_counts_samples():
    s = EvalSchedule.of(every_samples=1000)
    # a block opened after 1,024 samples: logged as first_epoch_num 1024, epoch_count 1000, evaluated at 2,024
    assert s.block_at(2, 1024, max_epochs=5) == Block(1024, 1000, at_samples=2024)
    assert not any(s.evaluates_after(e, 5) for e in range(1, 6))  # its evaluations fall inside epochs
    assert s.epoch_num(2, 2048) == 2048 and s.where(2048, 5) == "samples 2,048"
    assert s.describe() == "every 1,000 samples"
    with pytest.raises(ScheduleError):
        s.blocks(3)


def test_an_epoch_schedule_opens_its_blocks_at_their_first_epoch_and_evaluates_after_their_last():
    s = EvalSchedule.of(every=4, offset=1)
    assert [s.block_at(e, 0, max_epochs=12) for e in (1, 4, 12)] == [Block(1, 3), Block(4, 4), Block(12, 1)]
    assert s.epoch_num(7, 123_456) == 7 and s.where(7, 12) == "epoch 7/12"


@pytest.mark.parametrize("kwargs,message", [
    ({"every": 0}, "eval_every=0"), ({"every": 4, "offset": 4}, "eval_offset=4"),
    ({"epochs": [3, 2]}, "increasing"), ({"every_samples": 0}, "eval_every_samples=0"),
])
def test_schedules_that_cannot_be_followed_are_refused(kwargs, message):
    with pytest.raises(ScheduleError, match=message):
        EvalSchedule.of(**kwargs)


def test_a_schedule_by_samples_logs_samples_count_beside_epoch_num():
    by_samples, by_epochs = EvalSchedule.of(every_samples=1000), EvalSchedule.of(every=2)
    assert by_samples.metadata(3000) == {"epoch_num": 3000, "samples_count": 3000}
    assert by_epochs.metadata(4) == {"epoch_num": 4}
    block = by_samples.block_at(1, 2000, 5)
    assert by_samples.block_metadata(block, start=True) == {"first_epoch_num": 2000, "epoch_count": 1000,
                                                            "samples_count": 2000}
    assert by_epochs.block_metadata(by_epochs.block_at(1, 0, 4), start=False) == {"first_epoch_num": 1}
