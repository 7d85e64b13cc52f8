"""A run resolved once into its plan (harness/run/plan.py): what the plan says is what the record, the log
and the ranks read, and a config read back into a plan is not resolved again."""
from __future__ import annotations

import pytest
from omegaconf import OmegaConf
from omegaconf.errors import ReadonlyConfigError

from harness import registry
from harness.config import compose
from harness.config.schema import HarnessConfig
from harness.run.plan import plan_run, read_plan

NCF = ["model=ncf", "device=cpu"]


def test_a_plan_fills_in_precision_and_seed_once_and_leaves_the_config_read_only():
    cfg = compose([*NCF])
    plan = plan_run(cfg, registry.get("ncf"), cuda=False)
    assert plan.precision == "fp32" and plan.label == "fp32" and plan.path == "eager"
    assert plan.seed == cfg.seed and isinstance(plan.seed, int)  # drawn from the OS, once, and in the config
    assert isinstance(plan.config, HarnessConfig) and plan.config.model.batch_size == cfg.model.batch_size
    assert plan.training
    with pytest.raises(ReadonlyConfigError):
        cfg.precision = "bf16"


def test_a_spawned_rank_reads_the_launchers_plan_back_from_its_yaml_without_resolving_it_again():
    spec = registry.get("ncf")
    launcher = plan_run(compose([*NCF, "mode=throughput", "precision=bf16", "master_weights=true", "seed=3"]), spec,
                        cuda=False)
    rank_cfg = OmegaConf.create(OmegaConf.to_yaml(launcher.cfg))  # as harness/run/launch.py's _rank_main reads it
    rank_cfg.model = OmegaConf.merge(OmegaConf.structured(spec.options), rank_cfg.model)
    rank = read_plan(rank_cfg, spec)
    assert (rank.label, rank.path, rank.seed, rank.precision) == ("bf16+master", "eager", 3, "bf16")
    assert not rank.training and isinstance(rank.config, HarnessConfig) and rank.config.model.batch_size == 2048
    with pytest.raises(ValueError, match="read_plan takes a resolved config"):
        read_plan(compose([*NCF, "seed=3"]), spec)


def test_the_path_that_ran_drops_the_graph_when_its_capture_fell_back():
    cfg = compose(["model=ncf", "mode=throughput", "precision=bf16", "cuda_graph=true", "master_weights=false", "seed=1"])
    plan = plan_run(cfg, registry.get("ncf"), cuda=True)  # planned for a GPU (nothing here runs on one)
    assert plan.ran(graph_fell_back=False) == ("bf16+graph", "graph") == (plan.label, plan.path)
    assert plan.ran(graph_fell_back=True) == ("bf16", "eager")
