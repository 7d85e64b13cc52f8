"""Llama 3.1 8B's shape and parts: the parameter count of the real model (on the meta device), Llama
3.1's rotary frequency scaling, grouped-query attention and the real preset's logged values against
the official closed rules (training_6.0.0/closed_llama31_8b.yaml, the same in 5.1.0)."""
from __future__ import annotations

import math

from pathlib import Path

import pytest
import torch
import yaml
from mlperf_logging.compliance_checker import mlp_compliance

from harness.config import compose
from harness.interface import RunContext
from reference_models.llama.schedule import cosine_with_warmup
from reference_models.llama31_8b.benchmark import Llama31Benchmark
from reference_models.llama.model import Attention, LlamaShape, RopeScaling, parameter_count, rope_frequencies
from reference_models.llama31_8b.model import LLAMA31_8B


def test_the_real_model_has_llama_3_1_8b_s_8_03_billion_parameters():
    assert LLAMA31_8B.vocab_size == 128256 and LLAMA31_8B.max_seq_len == 8192
    assert parameter_count(LLAMA31_8B) == 8_030_261_248  # Meta's model card: 8.03B


def test_rope_scaling_keeps_short_wavelengths_and_divides_long_ones_by_8():
    plain = rope_frequencies(128, 500000.0, None)
    scaled = rope_frequencies(128, 500000.0, RopeScaling())
    wavelen = 2 * math.pi / plain
    short, long = wavelen < 8192 / 4, wavelen > 8192 / 1
    assert torch.equal(scaled[short], plain[short]) and short.sum() > 0
    assert torch.allclose(scaled[long], plain[long] / 8) and long.sum() > 0
    between = ~(short | long)
    assert ((scaled[between] < plain[between]) & (scaled[between] > plain[between] / 8)).all()


def test_grouped_query_attention_has_fewer_key_value_heads():
    shape = LlamaShape(vocab_size=300, dim=64, layers=1, heads=8, kv_heads=2, ffn_dim=96, max_seq_len=16)
    attention = Attention(shape)
    assert attention.wk.weight.shape == (16, 64) and attention.wq.weight.shape == (64, 64)
    x = torch.randn(2, 5, 64)
    angles = torch.outer(torch.arange(5.0), rope_frequencies(8, 500000.0, None))
    out = attention(x, angles.cos(), angles.sin())
    # causal: the first position's output ignores what follows it
    x2 = x.clone()
    x2[:, 1:] = torch.randn(2, 4, 64)
    assert torch.allclose(attention(x2, angles.cos(), angles.sin())[:, 0], out[:, 0], atol=1e-6)


def test_the_schedule_warms_up_linearly_then_decays_to_a_tenth():
    factor = cosine_with_warmup(10, 110, 0.1)
    assert factor(0) == pytest.approx(0.1) and factor(9) == pytest.approx(1.0)
    assert factor(60) == pytest.approx(0.55) and factor(110) == pytest.approx(0.1) and factor(500) == pytest.approx(0.1)


def test_the_real_preset_logs_what_the_official_closed_rules_require():
    cfg = compose(["model=llama31_8b", "dataset=c4", "mode=throughput", "device=cpu"])
    ctx = RunContext(cfg=cfg, data_dir=None, device=torch.device("meta"), rank=0, world_size=8, seed=1, shared_seed=1)
    logged = Llama31Benchmark(ctx).hyperparameters()
    logged = {k: getattr(v, "value", v) for k, v in logged.items()} | {"eval_samples": cfg.model.eval_samples}
    assert logged["global_batch_size"] == 32 and cfg.model.target == 3.3 and cfg.model.eval_every_samples == 12288
    assert cfg.mlperf.division == "closed"
    rules = yaml.safe_load((Path(mlp_compliance.__file__).parent / "training_6.0.0" / "closed_llama31_8b.yaml").read_text())
    state: dict = {}
    checked = []
    for rule in (r["KEY"] for r in rules):
        if rule["NAME"] not in logged or rule["NAME"] == "eval_accuracy":
            continue
        v = {"value": logged[rule["NAME"]]}
        if "CHECK" in rule:
            assert eval(rule["CHECK"], {}, {"v": v, "s": state}), (rule["NAME"], logged[rule["NAME"]], rule["CHECK"])
            checked.append(rule["NAME"])
        if "POST" in rule:
            exec(rule["POST"], {}, {"v": v, "s": state})
    assert {r["KEY"]["NAME"] for r in rules} - set(logged) == {"eval_accuracy"}  # the run's own
    assert len(checked) == 12
