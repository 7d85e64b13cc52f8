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


def _epochs_log(benchmark: str, batch: int, train_samples: int, seconds: float, epochs: int = 3) -> list[str]:
    lines = _head(benchmark, batch, train_samples=train_samples)
    now = T0 + 1_000
    for epoch in range(1, epochs + 1):
        lines += [mllog("epoch_start", None, now, "INTERVAL_START", epoch_num=epoch),
                  mllog("epoch_stop", None, now + int(seconds * 1000), "INTERVAL_END", epoch_num=epoch),
                  mllog("tracked_stats", {"throughput": 96.0}, now + int(seconds * 1000), step=epoch)]
        now += int(seconds * 1000) + 500
    return lines + [mllog("eval_accuracy", 0.35, now, epoch_num=epochs),
                    mllog("run_stop", None, now, "INTERVAL_END", status="success")]


@pytest.mark.parametrize("batch, steps", [(256, 4572), (2048, 576)])
def test_a_retinanet_log_counting_steps_as_train_samples_trained_steps_times_its_batch(batch, steps):
    # v3.x RetinaNet logs write the steps of an epoch under train_samples (steps x batch is OpenImages' 1,170,301
    # images) and a throughput per rank in tracked_stats: 576 read as samples made 2,048 H100s train 0.05 a chip
    run = parse_lines(_epochs_log("ssd", batch, steps, seconds=6.0))
    assert run.throughput_derived and run.throughput == pytest.approx(steps * batch / 6.0)


def test_an_ssd_log_counting_its_coco_epoch_reads_as_written():
    run = parse_lines(_epochs_log("ssd", 1024, 117_266, seconds=20.0))
    assert run.throughput == pytest.approx(117_266 / 20.0)


def test_a_maskrcnn_log_writing_its_step_budget_as_train_samples_trained_coco_epochs():
    # 20,000 is the run's step budget at a batch of 256 (40,000 at 96): each epoch is COCO's 117,266 images
    run = parse_lines(_epochs_log("maskrcnn", 256, 20_000, seconds=4.9))
    assert run.throughput == pytest.approx(117_266 / 4.9)


def test_stable_diffusion_blocks_of_steps_trained_steps_times_the_batch_not_the_dataset():
    # the reference's training_step blocks of 100 steps; train_samples is the dataset (6,513,144), of which the
    # run trains part: read per block as an epoch it made 8 H100s train 14,900 images/s a chip
    lines = _head("stable_diffusion", 512, train_samples=6_513_144)
    now = T0 + 1_000
    for step in range(0, 600, 100):
        lines += [mllog("block_start", "training_step", now, "INTERVAL_START", step_num=step),
                  mllog("block_stop", "training_step", now + 54_000, "INTERVAL_END", step_num=step + 100)]
        now += 54_100
    lines += [mllog("block_start", "validation_step", now, "INTERVAL_START", step_num=50),
              mllog("block_stop", "validation_step", now + 9_000, "INTERVAL_END", step_num=50),
              mllog("eval_accuracy", 90.0, now + 9_000, step_num=600),
              mllog("run_stop", None, now + 9_000, "INTERVAL_END", status="success")]
    run = parse_lines(lines)
    assert run.throughput_derived and run.throughput == pytest.approx(600 * 512 / (6 * 54.0))
