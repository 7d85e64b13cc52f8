"""GNMT end to end on CPU with a small corpus: the MLPerf GNMT keys, BLEU as a fraction, the checker's verdict.
(Convergence of the embedded default is measured, not tested: docs/gnmt.md has the figures.)"""
from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.e2e

GNMT_KEYS = {  # closed_gnmt.yaml of ruleset 0.7.0
    "global_batch_size", "opt_base_learning_rate", "opt_learning_rate_alt_decay_func",
    "opt_learning_rate_alt_warmup_func", "opt_learning_rate_decay_factor", "opt_learning_rate_decay_interval",
    "opt_learning_rate_decay_steps", "opt_learning_rate_remain_steps", "opt_learning_rate_warmup_steps",
    "max_sequence_length",
}


def test_short_gnmt_run_logs_every_key_and_fails_the_target_as_it_should(tmp_path):
    out = run_cli(
        "harness.train", "model=gnmt", "seed=2", "max_epochs=1", "output_root=out", "progress=false",
        "dataset.generator.train_pairs=1280", "dataset.generator.test_pairs=40", "model.hidden_size=32",
        "warmup_steps=5",
        cwd=tmp_path, timeout=900,
    )
    assert out.returncode == 0, out.stderr
    (log,) = (tmp_path / "out").rglob("mlperf.log")
    records = [json.loads(line[9:]) for line in log.read_text().splitlines()]
    keys = {r["key"] for r in records}
    assert GNMT_KEYS <= keys
    msl = next(r for r in records if r["key"] == "max_sequence_length")
    assert msl["value"] == 75 and msl["metadata"]["method"] == "discard"
    (bleu,) = [r["value"] for r in records if r["key"] == "eval_accuracy"]
    assert 0.0 <= bleu < 0.24  # one epoch on 1,280 pairs: far from the target, and a fraction
    result = json.loads((log.parent / "result.json").read_text())
    assert result["status"] == "aborted" and result["throughput_unit"] == "tokens/s" and result["throughput"] > 0
    check = run_cli("harness.check", str(log))
    assert check.returncode == 1 and "(gnmt, 0.7.0)" in check.stdout and "0.240" in check.stdout
