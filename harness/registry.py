"""The reference models the harness can run: a plain list, one entry per package under reference_models/.

Registering a model (docs/adding_a_model.md) is one line in MODELS; the conformance test
(tests/test_conformance.py) then trains it at its debug preset. `load()` stores each model's options
dataclass as the schema of conf/model/<name>.yaml, so Hydra type-checks every model option; it runs
once, when a command first composes a config or looks a model up, never at import.

A model that lives outside this repository (a user's own, or a test's stand-in) joins for one
command through the environment: `load()` imports each module of HARNESS_MODELS=pkg.module[,pkg.other]
and registers its SPEC, with its options' defaults as the model config and its DATASETS, if any:

    HARNESS_MODELS=tests.models.twopart python -m harness.train model=twopart seed=1
"""
from __future__ import annotations

import importlib
import os
from typing import Any, Optional

from hydra.core.config_store import ConfigStore

from harness.errors import ConfigError
from harness.interface import ModelSpec
from reference_models import (bert_base, bert_large, gnmt, maskrcnn, ncf, resnet, ssd, tacotron2, transformer,
                              txl_base, txl_large, waveglow)

MODELS: list[ModelSpec] = [ncf.SPEC, gnmt.SPEC, transformer.SPEC, resnet.SPEC, ssd.SPEC, maskrcnn.SPEC, bert_base.SPEC,
                           bert_large.SPEC, txl_base.SPEC, txl_large.SPEC, tacotron2.SPEC, waveglow.SPEC]


_loaded = False


def load() -> None:
    """Store every model's schema and register the models HARNESS_MODELS names; once per process
    (each later call returns at once), before a config is composed or a model is looked up."""
    global _loaded
    if _loaded:
        return
    for spec in MODELS:
        _store_schema(spec)
    _load_plugins(os.environ.get("HARNESS_MODELS", ""))
    _loaded = True  # after the plugins: one that failed to import fails every lookup the same way


def models() -> list[ModelSpec]:
    """Every model this command can run: the list below and HARNESS_MODELS' models."""
    load()
    return MODELS


def get(name: str) -> ModelSpec:
    load()
    for spec in MODELS:
        if spec.name == name:
            return spec
    raise ConfigError(f"unknown model '{name}'; choose one of: {', '.join(s.name for s in MODELS)}")


def by_benchmark(benchmark: str) -> ModelSpec | None:
    """The time-to-train model whose logs carry this submission_benchmark, if the harness has one."""
    load()
    return next((s for s in MODELS if s.task is not None and s.task.benchmark == benchmark), None)


def register(spec: ModelSpec, datasets: Optional[dict[str, dict[str, Any]]] = None) -> None:
    """Add a model that has no conf/model/<name>.yaml: its options' defaults are its config, and each
    of `datasets` ({name: {"dataset": {...}, "model": {overrides}}}) a dataset config of its own."""
    if any(s.name == spec.name for s in MODELS):
        raise ValueError(f"model {spec.name} is registered already")
    MODELS.append(spec)
    store = ConfigStore.instance()
    store.store(group="model", name=spec.name, node=spec.options(name=spec.name))
    for name, node in (datasets or {}).items():
        store.store(group="dataset", name=name, node=node, package="_global_")


def _store_schema(spec: ModelSpec) -> None:
    # conf/model/<name>.yaml starts with `defaults: [/schema/model@_here_: <name>, _self_]`
    ConfigStore.instance().store(group="schema/model", name=spec.name, node=spec.options)


def _load_plugins(names: str) -> None:
    for module_name in filter(None, (n.strip() for n in names.split(","))):
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            raise ConfigError(f"HARNESS_MODELS names {module_name}, which cannot be imported: {err}") from None
        spec = getattr(module, "SPEC", None)
        if not isinstance(spec, ModelSpec):
            raise ConfigError(f"HARNESS_MODELS names {module_name}, which has no ModelSpec called SPEC")
        if all(s.name != spec.name for s in MODELS):
            register(spec, getattr(module, "DATASETS", None))
