"""The Transformer end to end on CPU with a small corpus: every key closed_transformer.yaml requires,
BLEU as a fraction, the harness's and the official checker's verdicts. (Convergence of the embedded
default is measured, not tested: docs/transformer.md has the figures.)"""
from __future__ import annotations

import json

import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.e2e

TRANSFORMER_KEYS = {  # closed_transformer.yaml of ruleset 0.7.0
    "global_batch_size", "opt_name", "opt_base_learning_rate", "opt_learning_rate_warmup_steps", "opt_adam_beta_1",
    "opt_adam_beta_2", "opt_adam_epsilon", "max_sequence_length",
}


def test_short_transformer_run_logs_every_key_and_fails_the_target_as_it_should(tmp_path):
    out = run_cli(
        "harness.train", "model=transformer", "seed=2", "max_epochs=1", "output_root=out", "progress=false",
        "dataset.generator.train_pairs=1280", "dataset.generator.test_pairs=40", "model.hidden_size=32",
        "model.num_layers=2", "model.filter_size=64", "model.lr_warmup_steps=10", "warmup_steps=5",
        cwd=tmp_path, timeout=900,
    )
    assert out.returncode == 0, out.stderr
    (log,) = (tmp_path / "out").rglob("mlperf.log")
    records = [json.loads(line[9:]) for line in log.read_text().splitlines()]
    values = {r["key"]: r for r in records}
    assert TRANSFORMER_KEYS <= set(values)
    assert values["opt_name"]["value"] == "adam" and values["opt_adam_epsilon"]["value"] == 1e-9
    assert values["max_sequence_length"]["value"] == 256 and values["max_sequence_length"]["metadata"]["method"] == "discard"
    assert values["train_samples"]["value"] == 1280 and values["eval_samples"]["value"] == 40
    (bleu,) = [r["value"] for r in records if r["key"] == "eval_accuracy"]
    assert 0.0 <= bleu < 0.25  # one epoch on 1,280 pairs: far from the target, and a fraction
    result = json.loads((log.parent / "result.json").read_text())
    assert result["status"] == "aborted" and result["throughput_unit"] == "tokens/s" and result["throughput"] > 0
    check = run_cli("harness.check", str(log))
    assert check.returncode == 1 and "(transformer, 0.7.0)" in check.stdout and "0.2500" in check.stdout
    official = run_cli("mlperf_logging.compliance_checker", "--usage", "training", "--ruleset", "0.7.0", str(log),
                       cwd=tmp_path)
    said = official.stdout + official.stderr
    assert official.returncode == 1 and "training_0.7.0/closed_transformer.yaml" in said
    assert "Failed checks for eval_accuracy" in said and "FAILED" in said  # the target is its only objection
