"""Building a rank's run: the model through its spec, the precision applied, and what the contract
requires checked once, with the fault named: a model with an MLPerf task whose build returned no
Benchmark, and master weights asked of a run whose precision has no 16-bit weights to keep
(refused when the config is composed, before a rank builds anything).

    python -m harness.train model=ncf mode=throughput device=cpu
"""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
import torch

from harness import fastpath, registry
from harness.config import compose
from harness.errors import ConfigError
from harness.run.build import build_run, context_for
from harness.run.plan import plan_run


def _cfg(*extra: str):
    cfg = compose(["model=ncf", "mode=throughput", "device=cpu", "seed=1", *extra])
    fastpath.resolve(cfg, cuda=False)
    return cfg


def test_a_model_with_a_task_whose_build_lacks_the_benchmark_methods_is_named():
    half = dataclasses.replace(registry.get("ncf"), build=lambda ctx: SimpleNamespace(model=None, optimizer=None,
                                                                                       steps_per_epoch=lambda: 1))
    cfg = _cfg()
    with pytest.raises(TypeError, match=r"model=ncf has an MLPerf task, but what its build returned lacks the "
                                        r"Benchmark methods train_batches, train_samples, eval_samples, evaluate"):
        build_run(plan_run(cfg, half, cuda=False), context_for(cfg))


def test_master_weights_of_a_run_in_fp32_is_refused_before_anything_is_built():
    with pytest.raises(ConfigError, match="master_weights=true keeps fp16 or bf16 weights: use it with "
                                          "precision=amp or precision=bf16, not precision=fp32"):
        _cfg("precision=fp32", "master_weights=true")


def test_bf16_master_weights_keep_the_model_in_bf16_and_fp32_copies_in_the_optimizer():
    cfg = _cfg("precision=bf16", "master_weights=true")
    run = build_run(cfg, context_for(cfg))
    assert {p.dtype for p in run.module.parameters()} == {torch.bfloat16}
    assert {p.dtype for g in run.bench.optimizer.param_groups for p in g["params"]} == {torch.float32}
    assert fastpath.label(cfg) == "bf16+master"
