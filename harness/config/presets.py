"""Where a composed config comes from: Hydra's search path (the harness's conf/ and each registered
model's <package>/conf, added by hydra_plugins/harness_presets), the configs of a group, and, from
Hydra's own defaults list, the file that set each value last.

    python -c "from harness.config.presets import sources; print(sources(['model=gnmt'])['model.batch_size'])"
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.plugins.config_source import ConfigResult
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

import harness.outputs  # noqa: F401  (registers the run and sweep directory resolvers conf/config.yaml uses)
import harness.config.schema  # noqa: F401  (stores the harness's schema, conf/config.yaml's first default)
from harness import registry

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
REPO = CONF_DIR.parent
DEFAULT = "default"
COMMAND_LINE = "command line"
# Hydra's loader is one per process (GlobalHydra): threads that look configs up (harness.bench's
# cells) take turns
_HYDRA = threading.Lock()


@contextmanager
def _loader() -> Iterator[ConfigLoader]:
    registry.load()  # the models' schemas, conf folders and HARNESS_MODELS' configs, before any lookup
    with _HYDRA, initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        yield loader


def compose_unchecked(overrides: list[str], hydra: bool = False) -> DictConfig:
    """Hydra's composition alone; with hydra=True the result holds Hydra's own node too."""
    with _loader():
        return hydra_compose("config", overrides=list(overrides), return_hydra_config=hydra)


def choices(group: str) -> list[str]:
    """The config names of a group, from every folder of the search path and the configs models
    registered in code."""
    with _loader() as loader:
        return sorted(loader.get_group_options(group))


def dataset_choice(name: str) -> tuple[list[str], list[str], Optional[str]]:
    """The dataset and model names, and the model dataset `name` names (dataset.model) if it exists:
    from one config loader and one file read, as every composition with dataset=<name> asks them."""
    with _loader() as loader:
        datasets, models = sorted(loader.get_group_options("dataset")), sorted(loader.get_group_options("model"))
        owner = OmegaConf.select(_load(loader, f"dataset/{name}").config, "dataset.model") if name in datasets else None
        return datasets, models, owner


def datasets_for(model: str) -> list[str]:
    """The datasets whose config names `model` (dataset.model)."""
    with _loader() as loader:
        return [name for name in sorted(loader.get_group_options("dataset"))
                if OmegaConf.select(_load(loader, f"dataset/{name}").config, "dataset.model") == model]


def sources(overrides: list[str]) -> dict[str, str]:
    """Each key of the composed job config (dotted: model.batch_size) that a config file or the
    command line sets, and what set it last: a file's path in the repository (or its group/name, for
    a config a model registered in code) in the order of Hydra's defaults list (`--info defaults`),
    then the command line. A key absent here keeps its schema's default (DEFAULT)."""
    where: dict[str, str] = {}
    with _loader() as loader:
        groups = set(loader.list_groups(""))
        for entry in loader.compute_defaults_list("config", list(overrides), RunMode.RUN).defaults:
            path = entry.config_path
            if path is None or path == "config" or path.startswith("hydra/") or entry.package is None:
                continue
            loaded = _load(loader, path)
            # a dataclass (the harness's schema, a model's options) holds defaults; a mapping or a file, a preset
            label = DEFAULT if OmegaConf.get_type(loaded.config) not in (dict, None) else _label(loaded, path)
            for key in _leaves(loaded.config, entry.package):
                _set(where, key, label)
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    for override in parsed:
        key = override.key_or_group
        if override.is_delete() or key in groups or "/" in key or key.startswith("hydra"):
            continue  # a group's choice (+debug=<m>): its file is in the defaults list
        _set(where, key, COMMAND_LINE)
    for group in ("model", "dataset"):  # the choices themselves: conf/config.yaml's defaults, or the command line
        where[group] = COMMAND_LINE if any(o.key_or_group == group for o in parsed) else "conf/config.yaml"
    return where


def _set(where: dict[str, str], key: str, label: str) -> None:
    """`key` set by `label`, over what set it, a part of it (model.target.A) or a mapping holding it."""
    for known in [k for k in where if k.startswith(key + ".") or key.startswith(k + ".")]:
        del where[known]
    where[key] = label


def source_of(where: dict[str, str], key: str) -> str:
    """What set `key` last, or its parts (model.target.BBOX for model.target); DEFAULT if nothing did."""
    if key in where:
        return where[key]
    return next((label for k, label in where.items() if k.startswith(key + ".")), DEFAULT)


def _load(loader: ConfigLoader, path: str) -> ConfigResult:
    for source in loader.get_sources():
        if source.is_config(path):
            return source.load_config(path)
    raise KeyError(f"no config {path} on Hydra's search path")


def _label(loaded: ConfigResult, path: str) -> str:
    folder = loaded.path.removeprefix("file://")
    if loaded.provider == "schema" or "://" in folder:
        return f"{path} (in code)"
    file = Path(folder) / f"{path}.yaml"
    return str(file.relative_to(REPO)) if file.is_relative_to(REPO) else str(file)


def _leaves(node: Any, prefix: str) -> Iterator[str]:
    if not isinstance(node, DictConfig):
        yield prefix
        return
    for key in map(str, node.keys()):
        if key != "defaults" or prefix:  # a config registered in code keeps its defaults list in it
            yield from _leaves(node._get_node(key), f"{prefix}.{key}" if prefix else key)
