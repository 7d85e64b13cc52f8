"""MLPerf v0.5 logs as the whole published round writes them (training_results_v0.5): no official tool reads
them, so each quirk below is read by the report's own rule (harness/results/read/v05.py), and a folder that
MLPerf scored must not come out void."""
from __future__ import annotations

import json

import pytest

from harness.results.read import checking
from harness.results.read.parse import parse_lines
from harness.results.read.submission import listing
from harness.results.read.tree import from_entry

T0_S = 1_541_000_000


def _v05(t, key, value=None, bench="resnet", prefix=""):
    text = f"{prefix}:::MLPv0.5.0 {bench} {T0_S + t:.9f} (mlperf_log_utils.py:49) {key}"
    return text + (f": {json.dumps(value)}" if value is not None else "") + "\n"


def _run(stop_value, last=0.7522, target=0.749):
    lines = [_v05(0, "run_start"), _v05(0.1, "eval_target", target), _v05(1, "train_epoch", 0),
             _v05(100, "eval_start"), _v05(101, "eval_accuracy", {"epoch": 0, "value": last}),
             _v05(102, "run_stop", stop_value) if stop_value is not None else _v05(102, "run_stop")]
    return parse_lines(lines)


@pytest.mark.parametrize("stop, last, status, said", [
    ({"success": "true"}, 0.7522, "success", 'run_stop\'s success is the text "true": read as true'),
    ({"success": "false"}, 0.7522, "aborted", 'run_stop\'s success is the text "false": read as false'),
    (None, 0.7522, "success", "run_stop states no success: its last evaluation (0.7522) reaches the eval_target it "
                              "logs (0.749)"),
    (None, 0.70, "aborted", "run_stop states no success: its last evaluation (0.7) is below the eval_target it logs "
                            "(0.749)"),
    ({"success": True}, 0.7522, "success", None),
])
def test_a_run_stop_without_a_boolean_is_read_not_left_unknown(stop, last, status, said):
    """Google's logs write success as text and NVIDIA's ResNet and Transformer logs write a bare run_stop: read
    as "unknown", each of those 100 logs voided its folder's score."""
    run = _run(stop, last)
    assert run.status == status and run.scorable, run.problems
    assert [w for w in run.warnings if "run_stop" in w] == ([said] if said else [])


def test_a_float32_quality_at_its_target_reaches_it(tmp_path):
    """NVIDIA's v0.5 GNMT logs write BLEU 21.8 as the float32 21.799999237: read as below 21.8 ("21.8 below
    21.8"), two converged runs were dropped and the folder's score voided."""
    log = tmp_path / "result_0.txt"
    log.write_text(_v05(0, "run_start", bench="gnmt") + _v05(0.1, "eval_target", 21.8, bench="gnmt")
                   + _v05(1, "train_epoch", 0, bench="gnmt")
                   + _v05(50, "eval_accuracy", {"epoch": 0, "value": 21.799999237060547}, bench="gnmt")
                   + _v05(51, "run_stop", {"success": True}, bench="gnmt"))
    run = checking.checked_file(log)
    assert run.status == "success" and run.problems == [] and run.scorable
    log.write_text(log.read_text().replace("21.799999237060547", "21.79999"))  # below at float32 too
    assert checking.checked_file(log).problems[0].startswith("success, but its last evaluation (21.8")


def test_echoed_records_a_seed_of_none_and_a_space_before_the_colon_are_one_readable_run():
    """NVIDIA's MXNet logs print each record twice, bare and through Python's logging (read as two runs: the log
    refused); Google's TPU logs say `run_set_random_seed: "none"` (refused as a bad seed); Google's V100 logs write
    `opt_learning_rate : {...}` (382 lines counted as unreadable)."""
    lines = []
    for t, key, value in ((0, "run_start", None), (0.1, "eval_target", 0.749), (0.2, "run_set_random_seed", "none"),
                          (1, "train_epoch", 0), (100, "eval_start", None),
                          (101, "eval_accuracy", {"epoch": 0, "value": 0.75}), (102, "run_stop", {"success": True})):
        lines += [_v05(t, key, value), _v05(t, key, value, prefix="INFO:mlperf_compliance::")]
    lines.insert(8, ":::MLPv0.5.0 resnet 1541000050.5 (benchmark_cnn.py:1202) opt_learning_rate : "
                    '{ "deferred": true, "value": 0.0019 }\n')
    run = parse_lines(lines)
    assert run.problems == [] and run.status == "success" and run.seed is None
    assert run.time_to_train_s == pytest.approx(102.0)


def test_epochs_logged_in_one_burst_after_training_are_timed_by_evaluation_instead():
    """Google's v0.5 TensorFlow ResNet logs write all their train_epoch records within a second after training:
    timed by them, the run made 469 epochs a second. Each `input_size` before an eval_start is the samples since
    the evaluation before: 2 x 1,000,000 samples over 2 x 100 s of training."""
    lines = [_v05(0, "run_start"), _v05(10, "train_loop"), _v05(110, "input_size", 1_000_000), _v05(110, "eval_start"),
             _v05(115, "eval_accuracy", {"epoch": 1, "value": 0.5}), _v05(215, "input_size", 1_000_000),
             _v05(215, "eval_start"), _v05(220, "eval_accuracy", {"epoch": 3, "value": 0.76})]
    lines += [_v05(230 + e / 1000, "train_epoch", e) for e in range(4)] + [_v05(231, "run_stop", {"success": True})]
    run = parse_lines(lines)
    assert (run.throughput, run.throughput_unit) == (pytest.approx(10_000.0), "samples/s")


def test_a_tpu_slice_counts_its_cores_once_and_the_submitter_is_the_organisation(tmp_path):
    """Google's entries count the slice's cores in num_accelerators over its host VMs (tpuv3-512: 32 nodes): read
    as per node, the slice was 16,384 accelerators. v0.5's trees put submission folders between the organisation
    and results/: the round view named 'submission' and 'resnet-tpuv3-512' as submitters."""
    entry = {"framework": "TensorFlow 1.12", "nodes": [{"num_nodes": 32, "accelerator": "tpuv3-512",
                                                         "num_accelerators": 512}]}
    assert from_entry(entry, "entry.json").world_size == 512
    gpus = {"nodes": [{"num_nodes": 36, "accelerator": "Tesla V100-SXM3-H-32GB", "num_accelerators": 16}]}
    assert from_entry(gpus, "entry.json").world_size == 576
    for path, org in (("v0.5.0/google/research_v3.512/resnet-tpuv3-512/results/tpu/resnet", "google"),
                      ("v0.5.0/nvidia/submission/results/dgx1_ngc18.11_mxnet/resnet", "nvidia"),
                      ("v0.7/NVIDIA/results/dgx1/resnet", "NVIDIA")):
        (tmp_path / path).mkdir(parents=True)
        assert listing(str(tmp_path / path)).submitter == org


def test_one_train_epoch_and_evaluations_numbered_by_epoch_are_timed_by_the_evaluations():
    """Google's TPU SSD logs write one train_epoch, then eval_start with the epoch (32, 42, 48), evaluated on
    another slice while training runs on (the next eval_start comes before the result): read by train_epoch, the
    whole run was one epoch. Epoch 48 (49 counted from 0) over 920 s of training."""
    lines = [_v05(0, "run_start", bench="ssd"), _v05(20, "train_epoch", 0, bench="ssd"),
             _v05(21, "input_size", 300, bench="ssd"),  # the image's side, not samples
             _v05(640, "eval_start", 32, bench="ssd"), _v05(700, "eval_accuracy", {"epoch": 32, "value": 0.15}, bench="ssd"),
             _v05(840, "eval_start", 42, bench="ssd"), _v05(1000, "eval_start", 48, bench="ssd"),
             _v05(1010, "eval_accuracy", {"epoch": 42, "value": 0.2}, bench="ssd"),
             _v05(1100, "eval_accuracy", {"epoch": 48, "value": 0.215}, bench="ssd"),
             _v05(1101, "run_stop", {"success": "true"}, bench="ssd")]
    run = parse_lines(lines)
    # stretches: 20 -> 640 (620 s), the result at 700 -> 840 (140 s), 840 -> 1000 (on through the evaluation: 160 s)
    assert (run.throughput, run.throughput_unit) == (pytest.approx(49 / 920), "epochs/s")
