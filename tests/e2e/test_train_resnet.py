"""ResNet end to end on CPU with a small generated folder: MLPerf's ResNet keys, the evaluation blocks
with an offset, top-1 as a fraction, and the official checker's verdict under 0.7.0 and 4.0.0.
(Convergence of the embedded default is measured, not tested: docs/resnet.md has the figures.)"""
from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.e2e

SMALL = ["dataset.generator.classes=4", "dataset.generator.train_per_class=24", "dataset.generator.val_per_class=6",
         "model.width=8", "model.batch_size=16", "model.eval_batch_size=12", "model.workers=1", "warmup_steps=2"]


def _records(log):
    return [json.loads(line[len(":::MLLOG "):]) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("optimizer", ["sgd", "lars"])
def test_a_short_run_logs_every_key_and_fails_only_the_target(tmp_path, optimizer):
    out = run_cli("harness.train", "model=resnet", "seed=3", "max_epochs=3", "model.eval_every=2", "model.eval_offset=1",
                  f"model.optimizer={optimizer}", "output_root=out", "progress=false", *SMALL, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    (log,) = (tmp_path / "out").rglob("mlperf.log")
    records = _records(log)
    keys = {r["key"] for r in records}
    assert {"global_batch_size", "opt_name", "model_bn_span", "gradient_accumulation_steps",
            f"{optimizer}_opt_base_learning_rate", f"{optimizer}_opt_end_learning_rate"} <= keys
    blocks = [(r["metadata"]["first_epoch_num"], r["metadata"]["epoch_count"]) for r in records if r["key"] == "block_start"]
    assert blocks == [(1, 1), (2, 2)]  # evaluations after epoch 1 and 3: every 2 epochs, offset 1
    accuracies = [r["value"] for r in records if r["key"] == "eval_accuracy"]
    assert len(accuracies) == 2 and all(0.0 <= a <= 1.0 for a in accuracies)
    result = json.loads((log.parent / "result.json").read_text())
    assert result["status"] == "aborted" and result["throughput_unit"] == "images/s" and result["throughput"] > 0
    for ruleset in ("0.7.0", "4.0.0"):  # the declared one, and the newest with ResNet rules
        check = run_cli("harness.check", str(log), "--ruleset", ruleset)
        failed = [line for line in check.stdout.splitlines() if line.startswith("FAIL")]
        assert check.returncode == 1 and len(failed) == 1 and "eval_accuracy" in failed[0], check.stdout
    official = run_cli("mlperf_logging.compliance_checker", "--usage", "training", "--ruleset", "4.0.0", str(log),
                       cwd=tmp_path)
    assert "eval_accuracy" in official.stdout + official.stderr
    assert [line for line in (official.stdout + official.stderr).splitlines() if "Failed" in line and
            "eval_accuracy" not in line] == []


def test_throughput_mode_builds_the_real_scale_network_without_data(tmp_path):
    out = run_cli("harness.train", "model=resnet", "dataset=imagenet", "mode=throughput", "model.batch_size=2",
                  "model.image_size=64", "warmup_steps=1", "throughput_steps=2", "throughput_repeats=2",
                  "output_root=out", "data_root=nowhere", "progress=false", cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    (path,) = (tmp_path / "out").rglob("result.json")
    result = json.loads(path.read_text())
    assert result["mode"] == "throughput" and result["throughput"] > 0 and result["global_batch_size"] == 2
    assert result["hyperparameters"]["sgd_opt_base_learning_rate"] == pytest.approx(0.75 * 2 / 408)
    assert not (tmp_path / "nowhere").exists()
    assert "THROUGHPUT:" in out.stdout
