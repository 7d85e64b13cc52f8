"""Throughput derived from a log's own timing where it logs none (harness.results.read.intervals), on the forms
of the published v0.7 logs that counted BERT and Google's TPU runs differently from an epoch of a dataset."""
from __future__ import annotations

import pytest

from harness.results.read.parse import parse_lines
from tests.results.roundlogs import mllog

T0 = 1_593_000_000_000


def _head(benchmark: str, batch: int, train_samples=None) -> list[str]:
    lines = [mllog("submission_benchmark", benchmark, T0), mllog("submission_division", "closed", T0),
             mllog("global_batch_size", batch, T0), mllog("init_start", None, T0, "INTERVAL_START"),
             mllog("init_stop", None, T0 + 1_000, "INTERVAL_END"), mllog("run_start", None, T0 + 1_000, "INTERVAL_START")]
    return lines + ([mllog("train_samples", train_samples, T0 + 1_000)] if train_samples else [])


def test_a_one_epoch_bert_log_trained_its_train_samples_in_that_epoch():
    # NVIDIA's v0.7 form: one epoch spans the run; train_samples, logged at its end, is what it trained
    lines = _head("bert", 256) + [mllog("epoch_start", None, T0 + 1_000, "INTERVAL_START", epoch_num=1),
                                  mllog("block_start", None, T0 + 1_000, "INTERVAL_START", first_epoch_num=1, epoch_count=1),
                                  mllog("eval_accuracy", 0.7122, T0 + 2_851_000, epoch_num=1),
                                  mllog("block_stop", None, T0 + 2_851_000, "INTERVAL_END", first_epoch_num=1),
                                  mllog("epoch_stop", None, T0 + 2_851_000, "INTERVAL_END", epoch_num=1),
                                  mllog("train_samples", 3_000_064, T0 + 2_851_000),
                                  mllog("run_stop", None, T0 + 2_851_000, "INTERVAL_END", status="success")]
    run = parse_lines(lines)
    assert run.throughput_derived and run.throughput == pytest.approx(3_000_064 / 2_850.0)


def test_a_bert_log_whose_epochs_are_steps_trained_steps_times_its_batch():
    # Google's v0.7 form: blocks of 163 optimizer steps; train_samples is the budget (1,141 steps x 3,072), not an
    # epoch: 978 steps trained 978 x 3,072 samples, not 978 x 3,505,152 (which read 165,000 samples/s a chip)
    lines = _head("bert", 3072, train_samples=1141 * 3072)
    now = T0 + 1_000
    for first in range(163, 979, 163):
        lines += [mllog("block_start", None, now, "INTERVAL_START", first_epoch_num=first, epoch_count=163),
                  mllog("block_stop", None, now + 54_000, "INTERVAL_END", first_epoch_num=first)]
        now += 54_000
        lines.append(mllog("eval_accuracy", 0.70 + first / 100_000, now, epoch_num=first))
    lines.append(mllog("run_stop", None, now, "INTERVAL_END", status="success"))
    run = parse_lines(lines)
    assert run.throughput == pytest.approx(978 * 3072 / (6 * 54.0))


def test_blocks_around_evaluations_time_the_run_less_its_evaluations():
    # Google's v0.7 TPU form: a block opens around each evaluation (2 s) and training runs between blocks (160 s)
    lines = _head("transformer", 512, train_samples=566_340)
    now = T0 + 1_000
    for epoch in (1, 2, 3):
        now += 160_000
        lines += [mllog("block_start", None, now, "INTERVAL_START", first_epoch_num=epoch, epoch_count=1),
                  mllog("eval_start", None, now, "INTERVAL_START", epoch_num=epoch),
                  mllog("eval_stop", None, now + 1_500, "INTERVAL_END", epoch_num=epoch),
                  mllog("eval_accuracy", 0.2 + epoch / 50, now + 1_500, epoch_num=epoch),
                  mllog("block_stop", None, now + 2_000, "INTERVAL_END", first_epoch_num=epoch)]
        now += 2_000
    lines.append(mllog("run_stop", None, now, "INTERVAL_END", status="success"))
    run = parse_lines(lines)
    assert run.throughput == pytest.approx(3 * 566_340 / (3 * 162.0 - 3 * 1.5))
