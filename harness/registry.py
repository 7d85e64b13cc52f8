"""The reference models the harness can run: a plain list, one entry per package under reference_models/."""
from __future__ import annotations

from harness.config import ConfigError
from harness.interface import ModelSpec
from reference_models import gnmt, ncf

MODELS: list[ModelSpec] = [ncf.SPEC, gnmt.SPEC]


def get(name: str) -> ModelSpec:
    for spec in MODELS:
        if spec.name == name:
            return spec
    raise ConfigError(f"unknown model '{name}'; choose one of: {', '.join(s.name for s in MODELS)}")


def by_benchmark(benchmark: str) -> ModelSpec | None:
    """The model whose logs carry this submission_benchmark, if the harness has one."""
    return next((s for s in MODELS if s.benchmark == benchmark), None)
