"""The harness's configuration: a composed config and its checks.

Hydra composes conf/config.yaml (found next to this package, whatever the working directory) and each
model's presets (<package>/conf, harness/config/presets.py) over the schemas: HarnessConfig
(harness/config/schema.py) for the harness's own options, each model's options dataclass for model.*. The schemas hold every default,
type, choice and bound (harness.interface.options); a preset's YAML holds only what it changes. This
module checks the command-line overrides before Hydra runs anything, so that a typo or a value out of
bounds gives one line that names the option, the value and what it needs (harness/config/messages.py),
instead of a stack of composition errors or a failure deep in torch.

    python -c "from harness.config import compose; print(compose(['model=ncf']))"
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness import registry
from harness.config.schema import HarnessConfig
from harness.config.messages import (GROUPS, composition_message, kind_message, known_options,
                                     missing_group_message, omegaconf_message, value_message)
from harness.errors import ConfigError
from harness.interface import ScheduleError
from harness.interface import options as model_options
from harness.interface.options import OptionError, UnknownOption
from harness.interface.schedule import EvalSchedule
from harness.outputs import check_roots
from harness.fastpath import check_compiled, check_device
from harness.config.presets import compose_unchecked, dataset_choice, datasets_for


def compose(overrides: list[str]) -> DictConfig:
    """The composed config for these overrides (no sweeps), held to every check below, or ConfigError."""
    registry.load()  # the models' schemas and HARNESS_MODELS' datasets, before any name is looked up
    _check_dataset_choice(overrides)
    try:
        cfg = compose_unchecked(overrides)
    except MissingConfigException as err:
        raise ConfigError(missing_group_message(err)) from None
    except OverrideParseException as err:  # its message carries a caret diagram
        raise _parse_error(overrides, err) from None
    except ConfigCompositionException as err:
        raise ConfigError(composition_message(err, overrides)) from None
    except OmegaConfBaseException as err:
        raise ConfigError(omegaconf_message(err)) from None
    except ValueError as err:  # OmegaConf indexing a list by a name (model.layers.x=1)
        raise ConfigError(value_message(overrides, err)) from None
    try:  # an interpolation that names nothing (model.target=${x}) fails here, not deep in a run
        OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as err:
        raise ConfigError(omegaconf_message(err)) from None
    _check_generator_types(cfg, overrides)
    _check_switches(cfg, overrides)
    check(cfg)
    return cfg


_SWITCH_WORDS = ("true", "false", "yes", "no", "on", "off", "1", "0")


def _check_switches(cfg: DictConfig, overrides: list[str]) -> None:
    """A switch (a bool option) given on the command line says true or false: OmegaConf reads any
    integer as a bool (model.compile=2 would be true), which hides a value meant for another option."""
    for override in overrides:
        key, sep, value = override.partition("=")
        key = key.lstrip("+~")
        if not sep or key in GROUPS or value.strip().startswith("${"):
            continue
        if isinstance(OmegaConf.select(cfg, key, default=None), bool) and value.strip().lower() not in _SWITCH_WORDS:
            raise ConfigError(f"{key}={value}: {key} is a switch; give it true or false")


def _parse_error(overrides: list[str], err: Optional[Exception] = None) -> ConfigError:
    """'cannot parse <the override>: <Hydra's first line>; <how to quote it>' (Hydra's message goes on
    with a caret diagram)."""
    bad = _unparsable(overrides)
    detail = f": {str(err).splitlines()[0]}" if err is not None and str(err) else ""
    if bad != "the command line" and any(c.isspace() or not c.isascii() for c in bad.split("=", 1)[-1]):
        hint = """quote a value with spaces or letters beyond ASCII inside the override ('key="a b"')"""
    else:
        hint = "quote a list or a value with commas ('key=[a,b]')"
    return ConfigError(f"cannot parse {bad}{detail}; {hint}")


def _unparsable(overrides: list[str]) -> str:
    """The first override Hydra's grammar cannot read, or the whole command line."""
    parser = OverridesParser.create()
    for override in overrides:
        try:
            parser.parse_overrides([override])
        except OverrideParseException:
            return override
    return "the command line"


def _check_dataset_choice(overrides: list[str]) -> None:
    """A dataset asked for by name must exist (the default is optional, as throughput-only models have
    none, and Hydra skips an optional entry it cannot find) and be one of the model's: its model_for
    preset would not fit another model's options."""
    name = next((o.partition("=")[2] for o in overrides if o.startswith("dataset=")), None)
    if name is None:
        return
    datasets, models, owner = dataset_choice(name)
    if name not in datasets:
        raise ConfigError(f"unknown dataset '{name}'; choose one of: {', '.join(datasets)}")
    model = next((o.partition("=")[2] for o in overrides if o.startswith("model=")), None)
    if model is None or model not in models:
        return  # the default model, or an unknown one that the composition names
    if owner in models and owner != model:
        raise ConfigError(f"dataset={name} is a {owner} dataset, not for model={model}; "
                          f"choose one of: {', '.join(datasets_for(model))}")


def check(cfg: DictConfig) -> None:
    """A composed config held to what its schemas' types cannot say: every option's bound and the
    model's rules between options (harness.interface.options), the evaluation schedule, the target's
    shape, and the rules between the harness's own options. The schemas held the types and choices
    when it was composed."""
    spec = registry.get(str(cfg.model.name))
    if spec.throughput_only:
        if cfg.mode != "throughput":
            raise ConfigError(f"model={spec.name} is throughput-only (no dataset, target or evaluation): "
                              "run it with mode=throughput")
    elif cfg.get("dataset") is None:
        raise ConfigError(f"model={spec.name} needs a dataset; choose one of: {', '.join(datasets_for(spec.name))}")
    elif cfg.dataset.model != cfg.model.name:
        raise ConfigError(
            f"dataset={cfg.dataset.name} is a {cfg.dataset.model} dataset, not for model={cfg.model.name}; "
            f"choose one of: {', '.join(datasets_for(cfg.model.name))}"
        )
    try:  # the model's bounds before the harness's, whose epoch cap and schedule default to the model's
        model_options.check(spec.options, cfg.model, "model.")
        model_options.check(HarnessConfig, cfg, "")
        model_options.check_relations(spec.options, cfg.model, "model.", max_epochs=cfg.max_epochs)
    except UnknownOption as err:  # added with +key=value: no schema has it
        raise ConfigError(f"unknown option '{err.key}'; {known_options(err.key, [f'model={spec.name}'])}") from None
    except OptionError as err:
        raise ConfigError(str(err)) from None
    try:
        EvalSchedule.of(cfg.eval_every, cfg.model.eval_offset, cfg.model.eval_epochs, cfg.model.eval_every_samples)
    except ScheduleError as err:
        raise ConfigError(str(err)) from None
    check_roots(cfg)
    if spec.task is not None and cfg.mode == "train":
        try:
            spec.task.quality.target(_plain(cfg.model.target), "model.target")
        except ValueError as err:
            raise ConfigError(str(err)) from None
    if str(cfg.device) == "cpu" and cfg.precision is not None:
        check_device(cfg.precision, cuda=False, where=", not device=cpu")
    check_compiled(cfg, cuda=str(cfg.device) != "cpu", where=", not device=cpu")
    if cfg.get("cuda_graph"):
        _check_cuda_graph(cfg)
    if cfg.get("warm_up") and cfg.mode == "throughput":
        raise ConfigError("warm_up=true warms mode=train up before its clock starts; mode=throughput warms up by "
                          "itself (warmup_s, warmup_steps): leave warm_up out")
    if cfg.get("eager") and cfg.get("cuda_graph"):
        raise ConfigError("eager=true runs the plain step and cuda_graph=true captures it: choose one")
    if cfg.master_weights and str(cfg.device) == "cpu" and cfg.precision is None:
        raise ConfigError("master_weights=true keeps fp16 or bf16 weights: on device=cpu add precision=bf16")
    if cfg.master_weights and cfg.precision is not None and cfg.precision not in ("amp", "bf16"):
        raise ConfigError(f"master_weights=true keeps fp16 or bf16 weights: use it with precision=amp or "
                          f"precision=bf16, not precision={cfg.precision}")
    if cfg.fp8 and str(cfg.device) == "cpu" and cfg.precision is None:
        raise ConfigError("fp8=true multiplies in fp8 beside bf16 or fp16 autocast: on device=cpu add precision=bf16")
    if cfg.fp8 and cfg.precision is not None and cfg.precision not in ("amp", "bf16"):
        raise ConfigError(f"fp8=true multiplies in fp8 beside bf16 or fp16 autocast: use it with precision=bf16 or "
                          f"precision=amp, not precision={cfg.precision}")


def _check_cuda_graph(cfg: DictConfig) -> None:
    """cuda_graph=true replays the step on one GPU (harness/run/graph.py): mode=throughput's one batch, or
    mode=train's batches copied into the graph's inputs."""
    if str(cfg.device) == "cpu":
        raise ConfigError("cuda_graph=true captures CUDA work: use device=cuda (or auto on a GPU), or leave "
                          "cuda_graph out")
    if int(cfg.gpus) * int(cfg.nodes) > 1:
        raise ConfigError(f"cuda_graph=true runs on one GPU, not gpus={cfg.gpus} nodes={cfg.nodes}: DDP's gradient "
                          "all-reduce is not in the graph; use gpus=1, or leave cuda_graph out")


def _plain(value: Any) -> Any:
    return OmegaConf.to_object(value) if OmegaConf.is_config(value) else value


def check_cli(args: list[str], check_run: Optional[Callable[[DictConfig], None]] = None) -> None:
    """Compose every value that a command line sweeps over, so that no job of a sweep starts with a
    bad option; `check_run` adds checks of the host (enough GPUs) on each composed config.

    Hydra's own flags (-m, --cfg, ...) and hydra.* overrides are left to Hydra.
    """
    overrides = [a for a in args if not a.startswith("-") and not a.startswith(("hydra.", "hydra/", "+hydra"))]
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as err:  # Hydra's grammar errors carry a multi-line caret diagram
        raise _parse_error(overrides, err) from None
    base = [_first_value(o) for o in parsed]
    seeds = {i for i, o in enumerate(parsed) if o.get_key_element() == "seed"}
    trials = [base]
    for i, override in enumerate(parsed):
        if override.is_sweep_override():
            for value in override.sweep_string_iterator():
                if i in seeds and value.isascii() and value.isdigit():
                    continue  # a seed changes no other option: a whole number >= 0 is all its bound asks
                trial = list(base)
                trial[i] = f"{override.get_key_element()}={value}"
                trials.append(trial)
    for trial in trials:
        cfg = compose(trial)
        if check_run is not None:
            check_run(cfg)


def _check_generator_types(cfg: DictConfig, overrides: list[str]) -> None:
    """The one part of a config no schema types: a dataset's generator parameters (each generator's
    own dataclass reads them when it writes the data). Hold each overridden one to the type of the
    preset's value it replaces (an integer stays an integer, a float takes an integer) and, for an
    integer, to its sign: a positive one is a count (users, images, sentences), at least 1; a seed stays
    0 or more (a float may be a signed weight). Checked before anything is written: generated with
    users=-5, the dataset was written anew, empty, over the good one. model.* and the harness's options
    are typed by their schemas."""
    keys = [o.split("=", 1)[0].lstrip("+~") for o in overrides]
    if not any(k.startswith("dataset.") for k in keys):
        return
    defaults = compose_unchecked([o for o in overrides if o.split("=", 1)[0] in GROUPS or o.startswith("+debug=")])
    for override, key in zip(overrides, keys):
        if not key.startswith("dataset."):
            continue
        old, new = OmegaConf.select(defaults, key), OmegaConf.select(cfg, key)
        if old is None or new is None:
            continue
        message = kind_message(override, old, new) or _sign_message(key, old, new)
        if message:
            raise ConfigError(message)


def _sign_message(key: str, old: Any, new: Any) -> Optional[str]:
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (old, new)):
        return None
    if old >= 1 and new < 1:
        return f"{key}={new}: out of range; need {key} >= 1 (a count: the preset gives {old})"
    if old >= 0 and new < 0:
        return f"{key}={new}: out of range; need {key} >= 0 (the preset gives {old})"
    return None


def first_values(args: list[str]) -> list[str]:
    """The overrides with each swept one at its first value ('gpus=1,2' -> 'gpus=1'; a list stays whole)."""
    try:
        return [_first_value(o) for o in OverridesParser.create().parse_overrides(args)]
    except OverrideParseException:
        raise _parse_error(args) from None


def _first_value(override: Any) -> str:
    if not override.is_sweep_override():
        return override.input_line
    first = next(iter(override.sweep_string_iterator()), None)
    if first is None:  # range(3,1), an empty choice: Hydra would launch nothing and say nothing
        raise ConfigError(f"{override.input_line}: sweeps no values; give at least one "
                          f"({override.get_key_element()}=range(1,4) or {override.get_key_element()}=1,2)")
    return f"{override.get_key_element()}={first}"


