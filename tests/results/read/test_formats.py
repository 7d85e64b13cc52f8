"""Every MLPerf log format from v0.5 on, read into the same run: v0.5's :::MLPv0.5.0, v0.6's :::MLL and
v0.7's :::MLLOG, with shell noise between the lines."""
from __future__ import annotations

import json

import pytest

from harness.results.read.parse import LogError, parse_lines


T0_S = 1_540_000_000  # 2018-10-20 in seconds: a log's times are relative to it, on a round's calendar


def _v05(t, key, value=None, bench="gnmt"):
    text = f":::MLPv0.5.0 {bench} {T0_S + t:.3f} (estimator.py:502) {key}"
    return text + (f": {json.dumps(value)}" if value is not None else "") + "\n"


def _mll(t, key, value=None, **meta):
    return f"0: :::MLL {T0_S + t:.3f} {key}: " + json.dumps({"value": value, "metadata": {"file": "train.py", **meta}}) + "\n"


def test_a_v05_log_counts_epochs_from_zero_and_reads_success_and_the_target():
    lines = [
        "+ echo 'Beginning trial 1 of 1'\n", _v05(1000.0, "run_start"), _v05(1000.1, "eval_target", 21.8),
        _v05(1000.2, "train_epoch", 0), _v05(1000.3, "input_size", 3_000_000), "srun: noise\n",
        _v05(1600.0, "eval_start"), _v05(1610.0, "eval_accuracy", {"epoch": 0, "value": 18.7}),
        _v05(1610.1, "train_epoch", 1), _v05(1610.2, "input_size", 3_000_000),
        _v05(2210.0, "eval_start"), _v05(2220.0, "eval_accuracy", {"epoch": 1, "value": 22.57}),
        _v05(2220.0, "run_stop", {"success": True}), _v05(2220.1, "run_final"),
    ]
    run = parse_lines(lines)
    assert run.scorable, run.problems
    assert (run.round, run.log_format, run.benchmark) == ("v0.5", "MLPv0.5.0", "gnmt")
    assert run.status == "success" and run.time_to_train_s == pytest.approx(1220.0)
    assert run.epochs_to_converge == 2  # eval epoch 1, counted from 0: two epochs trained
    assert run.target == 21.8 and run.evals[-1] == (1, 22.57)
    # derived: 2 x 3,000,000 samples over the two training intervals (599.8 s + 599.9 s)
    assert run.throughput_derived and run.throughput_unit == "samples/s"
    assert run.throughput == pytest.approx(6_000_000 / 1199.7)

    failed = lines[:-2] + [_v05(2220.0, "run_stop", {"success": False})]
    run = parse_lines(failed)
    assert run.status == "aborted" and run.epochs_to_converge is None


def test_a_v06_log_reads_its_status_epochs_and_its_own_system_entry():
    entry = str({"framework": "PyTorch NVIDIA Release 19.05",
                 "nodes": str({"num_nodes": "2", "accelerator": "Tesla V100-SXM2-16GB", "num_accelerators": "8"})})
    lines = [
        "Beginning trial 1 of 1\n", _mll(100.0, "submission_benchmark", "gnmt"), _mll(100.0, "submission_entry", entry),
        _mll(100.0, "submission_platform", "2xDGX-1 with V100"), _mll(101.0, "init_start"), _mll(110.0, "init_stop"),
        _mll(110.0, "run_start"), "0: TRAIN [0][160/1938]\tTime 0.065 (0.151)\n",
    ]
    for e in (1, 2):
        t = 110.0 + 300 * (e - 1)
        lines += [_mll(t, "epoch_start", epoch_num=e), _mll(t + 290, "epoch_stop", epoch_num=e),
                  _mll(t + 292, "eval_accuracy", 20.0 + 2 * e, epoch_num=e)]
    lines.append(_mll(710.0, "run_stop", status="success"))
    run = parse_lines(lines)
    assert run.scorable, run.problems
    assert (run.round, run.log_format, run.status) == ("v0.6", "MLL", "success")
    assert run.epochs_to_converge == 2 and run.time_to_train_s == pytest.approx(600.0)
    assert run.world_size == 16 and run.accelerator == "Tesla V100-SXM2-16GB"
    assert run.framework == "PyTorch NVIDIA Release 19.05"
    # no sample count in the log: epochs per second of training, marked as derived
    assert run.throughput_unit == "epochs/s" and run.throughput == pytest.approx(2 / 580.0)


def test_an_unreadable_line_of_any_format_is_named_and_the_rest_read():
    lines = [_mll(100.0, "submission_benchmark", "gnmt"), _mll(100.0, "run_start"), "0: :::MLL 101.0 oops {\n",
             _mll(200.0, "eval_accuracy", 24.1, epoch_num=1), _mll(200.0, "run_stop", status="success")]
    run = parse_lines(lines)
    assert run.problems == ["1 line(s) are not valid MLL records (first at line 3)"]
    assert run.time_to_train_s == pytest.approx(100.0)


def test_a_file_with_no_record_of_any_format_is_refused():
    with pytest.raises(LogError, match="no :::MLLOG lines"):
        parse_lines(["+ echo hello\n", "srun: nothing here\n"])


DEEP = "[" * 3000 + "]" * 3000  # a 6 kB value nested deeper than Python's JSON parser recurses


def test_a_value_nested_too_deep_is_a_bad_line_of_any_format_and_the_rest_is_read():
    lines = [_mll(100.0, "submission_benchmark", "gnmt"), _mll(100.0, "run_start"),
             f"0: :::MLL 101.0 weights: {{\"value\": {DEEP}}}\n",
             f":::MLLOG {{\"key\": \"x\", \"time_ms\": 1, \"value\": {DEEP}}}\n",
             _mll(200.0, "eval_accuracy", 24.1, epoch_num=1), _mll(200.0, "run_stop", status="success")]
    run = parse_lines(lines)
    assert run.problems[0] == "2 line(s) are not valid MLL records (first at line 3)"  # the MLLOG line too
    assert run.time_to_train_s == pytest.approx(100.0)
    v05 = parse_lines([_v05(1000.0, "run_start"), f":::MLPv0.5.0 gnmt {T0_S + 1001:.3f} (x.py:1) opt: {DEEP}\n"])
    assert v05.status == "incomplete"  # v0.5's bare words: the line read as text, no RecursionError
