"""BERT at real scale (parameter counts against the published checkpoints) and each workload's batch."""
from __future__ import annotations

import pytest
import torch

from harness.config import compose
from harness.errors import ConfigError
from harness.run.build import build_run, context_for
from reference_models.bert.model import BertEncoder, BertForPreTraining


def bert_params(vocab: int, hidden: int, layers: int, intermediate: int, positions: int = 512, types: int = 2) -> int:
    """BertModel's parameters from its shapes: embeddings and their LayerNorm; per layer Q, K, V and
    the attention output (4 H^2 + 4 H), two LayerNorms (4 H), the feed-forward (2 H I + I + H); the
    pooler (H^2 + H). The uncased checkpoints hold 109,482,240 (base) and 335,141,888 (large)."""
    embeddings = (vocab + positions + types) * hidden + 2 * hidden
    layer = 4 * hidden * hidden + 4 * hidden + 4 * hidden + 2 * hidden * intermediate + intermediate + hidden
    return embeddings + layers * layer + hidden * hidden + hidden


@pytest.mark.parametrize("shape,published", [((768, 12, 12, 3072), 109_482_240), ((1024, 24, 16, 4096), 335_141_888)])
def test_the_encoder_has_the_published_checkpoints_parameter_count(shape, published):
    hidden, layers, heads, intermediate = shape
    assert bert_params(30522, hidden, layers, intermediate) == published  # about 110M and 335M
    with torch.device("meta"):
        encoder = BertEncoder(30522, hidden, layers, heads, intermediate)
        pretraining = BertForPreTraining(encoder)
    assert sum(p.numel() for p in encoder.parameters()) == published
    # the pre-training heads add a dense transform and its LayerNorm, the decoder bias (weights tied
    # to the word embeddings) and the next-sentence classifier
    heads_only = hidden * hidden + hidden + 2 * hidden + 30522 + 2 * hidden + 2
    assert sum(p.numel() for p in pretraining.parameters()) == published + heads_only


@pytest.mark.parametrize("name,hidden,layers", [("bert_base", 768, 12), ("bert_large", 1024, 24)])
def test_the_real_scale_presets_are_the_checkpoints_shapes(name, hidden, layers):
    cfg = compose([f"model={name}", "mode=throughput"])
    m = cfg.model
    assert (m.hidden_size, m.num_layers, m.num_heads * 64, m.intermediate_size) == (hidden, layers, hidden, 4 * hidden)
    assert (m.vocab_size, m.workload.name, m.batch_size) == (30522, "squad384", 32)


def _built(tmp_path, *extra):
    cfg = compose(["model=bert_base", "+debug=bert_base", "mode=throughput", "device=cpu", "seed=1",
                   f"output_root={tmp_path}", *extra])
    return build_run(cfg, context_for(cfg)).bench


@pytest.mark.parametrize("workload,predictions", [("squad384", None), ("pretrain128", 5), ("pretrain512", 32)])
def test_each_workload_trains_on_batches_of_its_shape_and_logs_its_name(tmp_path, workload, predictions):
    bench = _built(tmp_path, f"model.workload={workload}", f"model.max_predictions={predictions or 'null'}")
    batch = bench.synthetic_batch()
    assert batch["tokens"].shape == (4, 32)
    if workload == "squad384":
        assert (batch["start"] <= batch["end"]).all() and set(batch) == {"tokens", "token_types", "start", "end"}
    else:
        assert batch["positions"].shape == (4, predictions)
        assert all(len(set(row.tolist())) == predictions for row in batch["positions"])
    loss, samples = bench.loss(bench.model, batch)
    loss.backward()
    assert torch.isfinite(loss) and samples == 4
    assert all(p.grad is not None for p in bench.model.parameters())  # DDP needs every parameter used
    assert bench.hyperparameters()["workload"] == workload


def test_masked_lm_over_all_tokens_scores_every_position(tmp_path):
    bench = _built(tmp_path, "model.workload=pretrain512", "model.max_predictions=32")
    batch = bench.synthetic_batch()
    assert (batch["positions"] == torch.arange(32)).all()
    assert torch.isfinite(bench.loss(bench.model, batch)[0])


def test_a_misspelt_workload_and_a_bad_prediction_count_stop_at_the_command_line(tmp_path):
    with pytest.raises(ConfigError, match="model.workload=squad2 is not an option; choose one of"):
        compose(["model=bert_base", "mode=throughput", "model.workload=squad2"])
    with pytest.raises(ConfigError, match=r"model.max_predictions=40: out of range; need max_predictions <= seq_len \(32\)"):
        _built(tmp_path, "model.workload=pretrain128", "model.max_predictions=40")
