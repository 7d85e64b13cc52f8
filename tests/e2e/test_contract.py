"""The model contract end to end, with the test stand-ins of tests/models: a quality of two parts reaches
its target through the real loop and its log passes a rules file that needs both parts, a loss of two
named terms is logged per term, and the data wait is in every place a run reports it; a schedule by
samples logs sample counts; a throughput-only model measures and refuses mode=train in one line."""
from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.e2e

ENV = {"HARNESS_MODELS": "tests.models.twopart,tests.models.tputonly"}


def _result(root):
    (path,) = root.rglob("result.json")
    return path.parent, json.loads(path.read_text())


def test_a_two_part_quality_trains_to_both_targets_and_shows_both_parts(tmp_path):
    out = run_cli("harness.train", "model=twopart", "seed=1", "output_root=out", "progress=false", cwd=tmp_path,
                  env=ENV)
    assert out.returncode == 0, out.stderr
    run_dir, result = _result(tmp_path / "out")
    assert result["status"] == "success" and result["target"] == {"A": 0.9, "B": 0.85}
    assert set(result["final_quality"]) == {"A", "B"} and result["quality_direction"] == "higher"
    assert "target A >= 0.9 and B >= 0.85, reached" in out.stdout
    check = run_cli("harness.check", str(run_dir / "mlperf.log"), env=ENV)
    assert check.returncode == 0 and "(twopart, harness-twopart-0.7.0)" in check.stdout, check.stdout

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = EventAccumulator(str(run_dir / "tb"))
    board.Reload()
    assert {"eval/acc/A", "eval/acc/B", "train/loss/A", "train/loss/B", "train/data_wait_s"} <= set(
        board.Tags()["scalars"])
    epochs = result["epochs"]
    assert all(set(e["loss_terms"]) == {"A", "B"} for e in epochs)
    assert all(abs(e["loss_terms"]["A"] + e["loss_terms"]["B"] - e["train_loss"]) < 1e-4 for e in epochs)
    # the data wait: in total and per epoch, a share of training time, in the log and on the console
    assert 0 <= result["data_wait_share"] <= 1 and result["data_wait_s"] == pytest.approx(
        sum(e["data_wait_s"] for e in epochs))
    stats = [json.loads(line[len(":::MLLOG "):])["value"] for line in (run_dir / "mlperf.log").read_text().splitlines()
             if '"key": "tracked_stats"' in line]
    assert [s["data_wait_s"] for s in stats] == [e["data_wait_s"] for e in epochs]
    # the 20 warm-up steps' wait, kept apart: the first epoch's, in its tracked_stats too
    assert result["data_wait_warmup_s"] == epochs[0]["data_wait_warmup_s"] == stats[0]["data_wait_warmup_s"] >= 0
    assert all(e["data_wait_warmup_s"] is None and "data_wait_warmup_s" not in s for e, s in zip(epochs[1:], stats[1:]))
    assert [s["loss_terms"] for s in stats] == [e["loss_terms"] for e in epochs]
    assert f"data wait: {result['data_wait_s']:.2f} s, {100 * result['data_wait_share']:.1f}% of training time" in out.stdout


def test_a_slow_loader_start_is_kept_apart_from_the_data_wait_and_named_by_the_run_and_the_report(tmp_path):
    out = run_cli("harness.train", "model=twopart", "seed=1", "output_root=out", "progress=false",
                  "model.first_batch_delay_s=1.5", cwd=tmp_path, env=ENV)
    assert out.returncode == 0, out.stderr
    run_dir, result = _result(tmp_path / "out")
    assert result["data_wait_warmup_s"] >= 1.5 and result["data_wait_s"] < 1.0  # the steady share stays the loop's
    share = result["data_wait_warmup_s"] / result["time_to_train_s"]
    assert (f"warning: the loaders' start-up held the time to train back: its first 20 steps waited "
            f"{result['data_wait_warmup_s']:.2f} s for their batches, {100 * share:.1f}% of it") in out.stdout + out.stderr
    report = run_cli("harness.report", str(tmp_path / "out"), env=ENV)
    assert report.returncode == 0, report.stderr
    assert "1 run(s) held back by the loaders' start-up" in report.stdout and f"{share:.0%} of the time to train" in report.stdout


def test_a_rank_whose_batches_come_late_is_the_data_wait_of_a_run_of_several(tmp_path):
    # the last rank's loader takes 20 ms a batch: rank 0 waits in DDP's all-reduce, not for its batches
    out = run_cli("harness.train", "model=twopart", "seed=1", "output_root=out", "progress=false", "device=cpu",
                  "gpus=2", "model.last_rank_batch_delay_s=0.02", cwd=tmp_path, env=ENV)
    assert out.returncode == 0, out.stderr
    _, result = _result(tmp_path / "out")
    assert result["data_wait_rank"] == 1 and result["data_wait_share"] > 0.3  # rank 0's own: 2%
    assert result["data_wait_s"] >= 0.02 * sum(e["steps"] for e in result["epochs"][1:]) / 2
    assert (f"data wait: {result['data_wait_s']:.2f} s, {100 * result['data_wait_share']:.1f}% of training time "
            "(rank 1, the longest of 2 ranks' waits for batches") in out.stdout + out.stderr


def test_a_log_that_misses_one_part_fails_the_rules(tmp_path):
    out = run_cli("harness.train", "model=twopart", "seed=1", "output_root=out", "progress=false", "max_epochs=1",
                  "model.target={A: 0.5, B: 0.999}", cwd=tmp_path, env=ENV)
    assert out.returncode == 0, out.stderr
    run_dir, result = _result(tmp_path / "out")
    assert result["status"] == "aborted"  # A reached, B not: the run did not converge
    check = run_cli("harness.check", str(run_dir / "mlperf.log"), env=ENV)
    assert check.returncode == 1 and "v['value']['B'] >= 0.85" in check.stdout, check.stdout


def test_a_schedule_by_samples_evaluates_inside_epochs(tmp_path):
    out = run_cli("harness.train", "model=twopart", "seed=1", "output_root=out", "progress=false",
                  "model.eval_every_samples=1000", cwd=tmp_path, env=ENV)
    assert out.returncode == 0, out.stderr
    run_dir, result = _result(tmp_path / "out")
    epochs = [e["epoch"] for e in result["evals"]]
    assert result["epoch_unit"] == "samples" and epochs == sorted(epochs) and epochs[:3] == [1024, 2048, 3072]
    assert run_cli("harness.check", str(run_dir / "mlperf.log"), env=ENV).returncode == 0


def test_a_throughput_only_model_measures_and_refuses_to_train(tmp_path):
    refused = run_cli("harness.train", "model=tputonly", cwd=tmp_path, env=ENV)
    assert refused.returncode == 2 and not (tmp_path / "outputs").exists()
    assert refused.stderr.strip() == ("harness.train: error: model=tputonly is throughput-only (no dataset, target "
                                      "or evaluation): run it with mode=throughput")
    out = run_cli("harness.train", "model=tputonly", "mode=throughput", "throughput_steps=5", "throughput_repeats=2",
                  "warmup_steps=2", "output_root=out", "progress=false", cwd=tmp_path, env=ENV)
    assert out.returncode == 0, out.stderr
    run_dir, result = _result(tmp_path / "out")
    assert result["mode"] == "throughput" and result["throughput"] > 0 and len(result["epochs"]) == 2
    assert not (run_dir / "mlperf.log").exists() and result["quality_metric"] == ""
