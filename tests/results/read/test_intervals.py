"""Throughput derived from a log's own timing where it logs none (harness.results.read.intervals), on the forms
of the published v0.7 logs that counted BERT and Google's TPU runs differently from an epoch of a dataset."""
from __future__ import annotations

import pytest

from harness.results.read.formats import Record
from harness.results.read.intervals import _epochs
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


def test_blocks_that_count_samples_trained_the_samples_between_their_ends(trees_dir):
    # stable diffusion from v4.0 and Llama 2 70B LoRA: samples_count at both ends of each block, train_samples the
    # dataset (6,513,144; 3,901); read as epochs of it they made SD 457,871 images/s and LoRA 80 samples/s
    lines = _head("llama2_70b_lora", 8, train_samples=3901)
    now = T0 + 1_000
    for done in range(0, 1536 * 3, 1536):
        lines += [mllog("block_start", None, now, "INTERVAL_START", samples_count=done),
                  mllog("block_stop", None, now + 120_000, "INTERVAL_END", samples_count=done + 1536),
                  mllog("eval_start", None, now + 120_000, "INTERVAL_START", samples_count=done + 1536),
                  mllog("eval_accuracy", 0.93, now + 128_000, samples_count=done + 1536),
                  mllog("eval_stop", None, now + 128_000, "INTERVAL_END", samples_count=done + 1536)]
        now += 128_000
    lines.append(mllog("run_stop", None, now, "INTERVAL_END", status="success"))
    run = parse_lines(lines)
    assert run.throughput_derived and run.throughput == pytest.approx(1536 / 120.0) and run.throughput_unit == "samples/s"
    from harness.results.read.parse import parse_file

    nemo = trees_dir / "v4.0" / "NVIDIA" / "results" / "eos_n8_ngc24.04_nemo"
    sd, lora = (parse_file(nemo / bench / "result_0.txt") for bench in ("stable_diffusion", "llama2_70b_lora"))
    assert sd.throughput == pytest.approx(7198.68, rel=1e-4) and lora.throughput == pytest.approx(11.8286, rel=1e-4)


@pytest.mark.parametrize("blocks", ["one per evaluation", "one for the run"])
def test_gpt3_counts_tokens_in_its_epoch_numbers_and_reads_tokens_per_second(blocks):
    # every epoch number of a GPT-3 log counts tokens (a block of 50,331,648); Habana's logs open one block for
    # the whole run, and train_samples is the run's tokens: as epochs x train_samples they read 5e12 "samples/s"
    tokens, step = 50_331_648, 130_000
    lines = _head("gpt3", 2048) + [mllog("max_sequence_length", 2048, T0)]
    now = T0 + 1_000
    if blocks == "one for the run":
        lines.append(mllog("block_start", None, now, "INTERVAL_START", first_epoch_num=0, epoch_count=tokens))
    for k in range(1, 4):
        if blocks == "one per evaluation":
            lines.append(mllog("block_start", None, now, "INTERVAL_START", first_epoch_num=(k - 1) * tokens,
                               epoch_count=tokens))
        now += step
        if blocks == "one per evaluation":
            lines.append(mllog("block_stop", None, now, "INTERVAL_END", first_epoch_num=(k - 1) * tokens))
        lines += [mllog("eval_start", None, now, "INTERVAL_START", epoch_num=k * tokens),
                  mllog("eval_accuracy", 2.8 - k / 100, now + 13_000, epoch_num=k * tokens),
                  mllog("eval_stop", None, now + 13_000, "INTERVAL_END", epoch_num=k * tokens)]
        now += 13_000
    lines += [mllog("run_stop", None, now, "INTERVAL_END", status="success"),
              mllog("train_samples", 3 * tokens, now)]
    run = parse_lines(lines)
    # the last evaluation's tokens over the time to it, less the two evaluations before it
    assert run.throughput_unit == "tokens/s" and run.throughput == pytest.approx(3 * tokens / (3 * 130.0))


def test_a_run_that_converges_inside_its_first_epoch_trained_its_last_evaluations_share_of_it():
    # DLRM-DCNv2 (v3.1 on): epoch_start alone, evaluations at fractions of Criteo's 4,195,197,692 samples
    lines = _head("dlrm_dcnv2", 55_296, train_samples=4_195_197_692)
    now = T0 + 1_000
    lines.append(mllog("epoch_start", None, now, "INTERVAL_START", epoch_num=0))
    for k in range(1, 5):
        now += 25_000
        lines += [mllog("eval_start", None, now, "INTERVAL_START", epoch_num=0.05 * k),
                  mllog("eval_accuracy", 0.79 + k / 1000, now + 3_600, epoch_num=0.05 * k),
                  mllog("eval_stop", None, now + 3_600, "INTERVAL_END", epoch_num=0.05 * k)]
        now += 3_600
    lines.append(mllog("run_stop", None, now, "INTERVAL_END", status="success"))
    run = parse_lines(lines)
    assert run.throughput_derived and run.throughput == pytest.approx(0.2 * 4_195_197_692 / 100.0)


def test_bert_evaluated_at_sample_counts_trained_those_samples_whatever_its_blocks_say():
    # Graphcore's v1.0 form: a block of 175,523 samples logged as epoch_count 1, and no train_samples
    lines = _head("bert", 3072)
    now = T0 + 1_000
    for k in range(1, 17):
        lines += [mllog("block_start", None, now, "INTERVAL_START", first_epoch_num=k - 1, epoch_count=1),
                  mllog("block_stop", None, now + 126_000, "INTERVAL_END", first_epoch_num=k - 1),
                  mllog("eval_accuracy", 0.48 + k / 100, now + 135_000, epoch_num=175_000 * k)]
        now += 135_000
    lines.append(mllog("run_stop", None, now, "INTERVAL_END", status="success"))
    run = parse_lines(lines)
    assert run.throughput == pytest.approx(16 * 175_000 / (16 * 135.0))  # no eval_start: its time is not told apart


def test_a_block_that_claims_more_epochs_than_the_next_one_leaves_it_trained_only_up_to_that_one():
    # Google's v1.0 DLRM: every block says epoch_count 1 while first_epoch_num steps by 0.05
    lines = _head("dlrm", 55_296, train_samples=4_195_197_692)
    now = T0 + 1_000
    for k in range(1, 9):
        first = round(1 + 0.05 * k, 2)
        lines += [mllog("block_start", None, now, "INTERVAL_START", first_epoch_num=first, epoch_count=1),
                  mllog("block_stop", None, now + 1_000, "INTERVAL_END", first_epoch_num=first),
                  mllog("eval_start", None, now + 1_000, "INTERVAL_START", epoch_num=first),
                  mllog("eval_accuracy", 0.77 + k / 1000, now + 2_500, epoch_num=first),
                  mllog("eval_stop", None, now + 2_500, "INTERVAL_END", epoch_num=first)]
        now += 2_500
    lines.append(mllog("run_stop", None, now, "INTERVAL_END", status="success"))
    run = parse_lines(lines)
    assert run.throughput == pytest.approx(8 * 0.05 * 4_195_197_692 / 8.0)


@pytest.mark.parametrize("opened", [0, 1])
def test_evaluations_counted_from_zero_are_read_so_whatever_epoch_the_log_opens(opened):
    # R-GAT's v4.1 logs open epoch_start 1 and evaluate at 0.05 .. 0.85 of an epoch: 0.85 - 1 read as no training
    lines = _head("gnn", 16_384, train_samples=157_675_969)
    now = T0 + 1_000
    lines.append(mllog("epoch_start", None, now, "INTERVAL_START", epoch_num=opened))
    for k in range(1, 18):
        now += 25_000
        lines += [mllog("eval_start", None, now, "INTERVAL_START", epoch_num=round(0.05 * k, 2)),
                  mllog("eval_accuracy", 0.67 + k / 1000, now + 1_000, epoch_num=round(0.05 * k, 2)),
                  mllog("eval_stop", None, now + 1_000, "INTERVAL_END", epoch_num=round(0.05 * k, 2))]
        now += 1_000
    lines.append(mllog("run_stop", None, now, "INTERVAL_END", status="success"))
    run = parse_lines(lines)
    assert run.throughput == pytest.approx(0.85 * 157_675_969 / (17 * 25.0))


def test_a_retinanet_log_under_its_v5_name_counting_steps_trained_steps_times_its_batch():
    # from v5.0 the benchmark logs as `retinanet`, its train_samples still an epoch's 4,572 steps of 256: read as
    # samples, 8 B200s trained 2 images/s a chip
    run = parse_lines(_epochs_log("retinanet", 256, 4572, seconds=330.0))
    assert run.throughput == pytest.approx(4572 * 256 / 330.0)


def _named_blocks(benchmark: str, batch: int, train_samples: int, per_block: int, blocks: int,
                  block_count=lambda start: start) -> list[str]:
    """mlperf_common's form: each block_stop repeats its block_start's samples_count (the block's first sample, or
    `block_count` of it: v5.1's Llama 3.1 8B logs the block's size); the evaluation after it gives the count."""
    lines = _head(benchmark, batch, train_samples=train_samples)
    now = T0 + 1_000
    for i in range(blocks):
        start, done = i * per_block, (i + 1) * per_block
        lines.append(mllog("block_start", None, now, "INTERVAL_START", samples_count=block_count(start)))
        now += 1_000_000
        lines += [mllog("block_stop", None, now, "INTERVAL_END", samples_count=block_count(start)),
                  mllog("eval_start", None, now, "INTERVAL_START", samples_count=done),
                  mllog("eval_accuracy", 6.5, now + 46_000, samples_count=done),
                  mllog("eval_stop", None, now + 46_000, "INTERVAL_END", samples_count=done)]
        now += 46_000
    return lines + [mllog("run_stop", None, now, "INTERVAL_END", samples_count=blocks * per_block, status="success")]


@pytest.mark.parametrize("benchmark, per_block, block_count", [
    ("llama31_405b", 46_592, lambda start: start), ("llama31_8b", 12_288, lambda start: 12_288)])
def test_blocks_whose_ends_repeat_one_count_trained_from_one_evaluation_to_the_next(benchmark, per_block, block_count):
    # read as blocks of 0 samples, v5.0's Llama 3.1 405B fell back on its blocks as epochs of train_samples (1.57e9):
    # 3,059 samples/s a GB200 where tracked_stats says 0.09; v5.1's 8B must not count its k-th block k times
    run = parse_lines(_named_blocks(benchmark, 896, 1_574_207_408, per_block, 6, block_count))
    assert run.throughput_derived and run.throughput_unit == "samples/s"
    assert run.throughput == pytest.approx(per_block / 1000.0)


def test_stable_diffusion_blocks_named_by_their_first_sample_end_where_the_next_block_begins():
    # NVIDIA's v5.0 form: blocks of 512,000 samples, their FID and CLIP evaluated offline after the last of them
    lines = _head("stable_diffusion", 256, train_samples=6_513_144)
    now = T0 + 1_000
    for start in range(0, 2_048_001, 512_000):
        lines += [mllog("block_start", None, now, "INTERVAL_START", samples_count=start),
                  mllog("block_stop", None, now + 215_000, "INTERVAL_END", samples_count=start)]
        now += 216_000
    for done in (1_024_000, 1_536_000):
        lines += [mllog("eval_start", None, now, "INTERVAL_START", samples_count=done),
                  mllog("eval_accuracy", 88.0, now + 600_000, samples_count=done, metric="FID"),
                  mllog("eval_accuracy", 0.17, now + 700_000, samples_count=done, metric="CLIP"),
                  mllog("eval_stop", None, now + 700_000, "INTERVAL_END", samples_count=done)]
        now += 700_000
    run = parse_lines(lines + [mllog("run_stop", None, T0 + 1_000 + 3 * 216_000, "INTERVAL_END", status="success")])
    assert run.throughput == pytest.approx(512_000 / 215.0)


def test_a_samples_benchmark_whose_blocks_count_nothing_has_no_throughput():
    lines = _head("llama2_70b_lora", 8, train_samples=3901)
    now = T0 + 1_000
    for i in range(3):
        lines += [mllog("block_start", None, now, "INTERVAL_START", first_epoch_num=i, epoch_count=1),
                  mllog("block_stop", None, now + 300_000, "INTERVAL_END", first_epoch_num=i),
                  mllog("eval_accuracy", 0.93, now + 300_000, samples_count=(i + 1) * 384)]
        now += 300_000
    run = parse_lines(lines + [mllog("run_stop", None, now, "INTERVAL_END", status="success")])
    assert run.throughput is None  # not 3 x 3,901 samples: a block is no epoch of its dataset


def test_epoch_stops_that_count_the_epochs_completed_close_the_epoch_before_their_number():
    """MosaicML's v2.0 ResNet logs (Composer): epoch_start 0, epoch_stop 1, epoch_start 1, ...; a block_start every
    epoch but a block_stop only at each fourth, beside its evaluation. Read by blocks, 2 of 8 epochs over the whole
    run gave a quarter of the throughput (511 images/s an A100 for 2,052)."""
    lines = _head("resnet", 2048, train_samples=1_281_167)
    now = T0 + 1_000
    for epoch in range(8):
        lines += [mllog("epoch_start", None, now, epoch_num=epoch),
                  mllog("block_start", None, now, first_epoch_num=epoch, epoch_count=1),
                  mllog("epoch_stop", None, now + 76_000, epoch_num=epoch + 1)]
        now += 76_100
        if epoch % 4 == 3:
            lines += [mllog("eval_start", None, now, epoch_num=epoch + 1),
                      mllog("eval_stop", None, now + 10_000, epoch_num=epoch + 1),
                      mllog("eval_accuracy", 0.5 + epoch / 100, now + 10_000, epoch_num=epoch + 1),
                      mllog("block_stop", None, now + 10_000, first_epoch_num=epoch + 1)]
            now += 10_000
    run = parse_lines(lines + [mllog("run_stop", None, now, "INTERVAL_END", status="success")])
    assert run.throughput_derived and run.throughput == pytest.approx(8 * 1_281_167 / (8 * 76.0))
    # one such epoch spanning the run (Dell's v1.0 DLRM: start 1, stop 2 at run_stop) times its evaluations too:
    # not read as an epoch
    single = [Record(1, "epoch_start", None, {"epoch_num": 1}, T0), Record(2, "epoch_stop", None, {"epoch_num": 2}, T0 + 9e4)]
    assert _epochs(single) == (0, 0.0)
