"""The reference models the harness can run: a plain list, one entry per package under reference_models/.

Registering a model (docs/adding_a_model.md) is one line in PACKAGES; the conformance test
(tests/test_conformance.py) then trains it at its debug preset. A model's presets are YAML files in
its package's conf/ folder (model/<name>.yaml, dataset/, model_for/, debug/), which Hydra finds through
hydra_plugins/harness_presets (`conf_folders()` lists them). `load()` stores each model's options
dataclass as the schema of its model/<name>.yaml, so Hydra type-checks every model option; it runs
once, when a command first composes a config or looks a model up, never at import.

A model that lives outside this repository (a user's own, or a test's stand-in) joins for one
command through the environment: `load()` imports each module of HARNESS_MODELS=pkg.module[,pkg.other]
and registers its SPEC, with a package's conf/ folder as above, or else its options' defaults as the
model config and its DATASETS, if any:

    HARNESS_MODELS=tests.models.twopart python -m harness.train model=twopart seed=1
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

from hydra.core.config_store import ConfigStore

from harness.errors import ConfigError
from harness.interface import ModelSpec
from harness.results.read import own
from reference_models import (bert_base, bert_large, dlrm_dcnv2, gnmt, llama2_70b_lora, llama31_8b, maskrcnn, ncf,
                              resnet, retinanet, ssd, tacotron2, transformer, txl_base, txl_large, waveglow)

PACKAGES: list[ModuleType] = [ncf, gnmt, transformer, resnet, ssd, maskrcnn, retinanet, llama31_8b, llama2_70b_lora,
                              dlrm_dcnv2, bert_base, bert_large, txl_base, txl_large, tacotron2, waveglow]
MODELS: list[ModelSpec] = [package.SPEC for package in PACKAGES]


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


def conf_folders() -> list[Path]:
    """The presets folder (<package>/conf) of every registered model that has one, in registry order."""
    load()
    return [folder for folder in map(_conf_folder, PACKAGES) if folder is not None]


def benchmark_table() -> list[own.OwnBenchmark]:
    """Every model as results/ reads it (harness.results.read.own)."""
    return [own.OwnBenchmark(s.name, s.benchmark, s.category, s.task.ruleset if s.task else None,
                             str(s.task.rules_file) if s.task and s.task.rules_file else None, s.metric)
            for s in models()]


def publish() -> None:
    """Hand the table to results/ (every command calls this before it reads or writes a log's verdict)."""
    own.provide(benchmark_table)


def by_benchmark(benchmark: str) -> ModelSpec | None:
    """The time-to-train model whose logs carry this submission_benchmark, if the harness has one."""
    load()
    return next((s for s in MODELS if s.task is not None and s.task.benchmark == benchmark), None)


def register(spec: ModelSpec, datasets: Optional[dict[str, dict[str, Any]]] = None,
             package: Optional[ModuleType] = None) -> None:
    """Add a model: with the conf/ folder of `package`, its presets are there; else its options'
    defaults are its config, and each of `datasets` ({name: {"dataset": {...}, "model": {overrides}}})
    a dataset config, whose "model" part is its model_for/<name> preset, as a YAML dataset's is."""
    if any(s.name == spec.name for s in MODELS):
        raise ValueError(f"model {spec.name} is registered already")
    MODELS.append(spec)
    _store_schema(spec)
    if package is not None and _conf_folder(package) is not None:
        PACKAGES.append(package)
        return
    store = ConfigStore.instance()
    store.store(group="model", name=spec.name, node=spec.options(name=spec.name))
    for name, node in (datasets or {}).items():
        dataset = {"dataset": node["dataset"]}
        if "model" in node:
            store.store(group="model_for", name=name, node=node["model"])
            dataset["defaults"] = [{"/model_for@model": name}, "_self_"]
        store.store(group="dataset", name=name, node=dataset, package="_global_")


def _store_schema(spec: ModelSpec) -> None:
    # <package>/conf/model/<name>.yaml starts with `defaults: [/schema/model@_here_: <name>, _self_]`
    ConfigStore.instance().store(group="schema/model", name=spec.name, node=spec.options)


def _conf_folder(package: ModuleType) -> Optional[Path]:
    if not hasattr(package, "__path__"):  # a single-module model keeps its presets in code
        return None
    folder = Path(package.__file__ or "").resolve().parent / "conf"
    return folder if folder.is_dir() else None


def _load_plugins(names: str) -> None:
    for module_name in filter(None, (n.strip() for n in names.split(","))):
        try:
            module = importlib.import_module(module_name)
        except Exception as err:  # not found, or the module's own error as it runs (a SyntaxError, a bug)
            why = (str(err).strip().splitlines() or [""])[0]
            raise ConfigError(f"HARNESS_MODELS names {module_name}, which cannot be imported: "
                              f"{type(err).__name__}: {why}") from None
        spec = getattr(module, "SPEC", None)
        if not isinstance(spec, ModelSpec):
            raise ConfigError(f"HARNESS_MODELS names {module_name}, which has no ModelSpec called SPEC")
        clash = next((s for s in MODELS if s.name == spec.name), None)
        if clash is spec:
            continue  # the same module named twice
        if clash is not None:
            raise ConfigError(f"HARNESS_MODELS names {module_name}, whose model '{spec.name}' has the name of "
                              f"{_owner(clash)}'s; give its SPEC another name")
        _check_presets(module_name, module)
        register(spec, getattr(module, "DATASETS", None), module)


def _owner(spec: ModelSpec) -> str:
    return next((p.__name__ for p in PACKAGES if getattr(p, "SPEC", None) is spec), "a model registered before it")


def _check_presets(module_name: str, module: ModuleType) -> None:
    """A model from outside brings presets that no registered model's, nor the harness's, file has the name
    of (Hydra would take the first on its search path and ignore the other, silently), and each one is
    YAML that can be read."""
    import yaml

    harness_conf = Path(__file__).resolve().parent.parent / "conf"  # harness.config.presets.CONF_DIR, which imports this
    folders = [harness_conf, *filter(None, map(_conf_folder, PACKAGES))]
    taken = {f"{p.parent.name}/{p.stem}": p for folder in folders for p in sorted(folder.glob("*/*.yaml"))}
    own = _conf_folder(module)
    mine = {f"{p.parent.name}/{p.stem}": p for p in sorted(own.glob("*/*.yaml"))} if own is not None else {}
    mine |= {f"dataset/{name}": Path(f"{module_name}.DATASETS['{name}']")
             for name in getattr(module, "DATASETS", None) or {}}
    for key, path in mine.items():
        if key in taken:
            raise ConfigError(f"HARNESS_MODELS names {module_name}, whose preset {key} ({path}) has the name of "
                              f"{taken[key]}; rename one")
        if path.suffix == ".yaml":
            try:
                yaml.safe_load(path.read_text())
            except (OSError, yaml.YAMLError) as err:
                where = getattr(err, "problem_mark", None)
                at = f" line {where.line + 1}" if where is not None else ""
                raise ConfigError(f"HARNESS_MODELS names {module_name}, whose preset {path}{at} cannot be read: "
                                  f"{getattr(err, 'problem', None) or err}") from None
