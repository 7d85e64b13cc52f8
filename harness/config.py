"""The harness's configuration: the typed schema of conf/config.yaml and one-line config errors.

Hydra composes conf/ (found next to this package, whatever the working directory); this module
checks the command-line overrides before Hydra runs anything, so that a typo gives one line that
names the choices instead of a stack of composition errors.

    python -c "from harness.config import compose; print(compose(['model=ncf']))"
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

import harness.outputs  # noqa: F401  (registers the run and sweep directory resolvers conf/config.yaml uses)
from harness import registry
from harness.errors import ConfigError
from harness.interface import ScheduleError
from harness.interface.schedule import EvalSchedule

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


# The allowed values of the string options, checked by check() with a one-line error.
CHOICES: dict[str, tuple[str, ...]] = {
    "device": ("auto", "cpu", "cuda"),
    "precision": ("fp32", "tf32", "amp", "bf16"),  # amp: fp16 autocast with a gradient scaler
    "mode": ("train", "throughput"),
    "mlperf.division": ("closed", "open"),
    "mlperf.status": ("onprem", "cloud", "preview", "research"),
}


@dataclass
class MLPerfFields:
    """The submission_* keys of the MLPerf log."""

    org: str = "harness"
    """submission_org."""
    division: str = "closed"
    """submission_division: closed or open."""
    status: str = "research"
    """submission_status: onprem, cloud, preview or research."""
    platform: Optional[str] = None
    """submission_platform; null: "<ranks>x<device name>", e.g. "1xNVIDIA H200"."""


@dataclass
class HarnessConfig:
    model: Any = MISSING
    """The model: model=<name> picks conf/model/<name>.yaml (options: --help model=<name>)."""
    dataset: Any = None
    """The dataset: dataset=<name> picks conf/dataset/<name>.yaml; default: the model's embedded one."""
    seed: Optional[int] = None
    """The run's master seed; null: drawn from the OS and recorded in the log and result.json."""
    gpus: int = 1
    """Ranks per node: GPUs, or CPU processes with device=cpu."""
    nodes: int = 1
    """Nodes of a multi-node run, each started with the same command."""
    rdzv_endpoint: Optional[str] = None
    """HOST:PORT of the c10d rendezvous, needed when nodes > 1."""
    run_id: Optional[str] = None
    """Names a multi-node run: the same on every node, a fresh one per run."""
    device: str = "auto"
    """auto, cpu or cuda."""
    precision: str = "fp32"
    """fp32, tf32, amp (fp16 autocast with a gradient scaler) or bf16."""
    master_weights: bool = False
    """amp/bf16: the weights themselves in fp16/bf16, fp32 copies in the optimizer."""
    ddp_bucket_mb: float = 25.0
    """DistributedDataParallel's gradient bucket size; above the gradient size, one all-reduce after backward."""
    mode: str = "train"
    """train: to the quality target or the epoch cap; throughput: the model on synthetic batches, no data."""
    max_epochs: int = MISSING
    """The epoch cap; default: the model's max_epochs."""
    eval_every: int = 1
    """Epochs between evaluations; default: the model's eval_every."""
    warmup_steps: int = 20
    """Training steps left out of the throughput figure."""
    throughput_steps: int = 200
    """mode=throughput: counted steps per window, after warm-up."""
    throughput_repeats: int = 5
    """mode=throughput: windows measured; result.json has each and their median."""
    clear_caches: bool = False
    """Drop the OS page cache before the run (needs root), as MLPerf submissions must."""
    progress: bool = True
    """A live progress line with ETA on the console."""
    tensorboard: bool = True
    """RUN_DIR/tb: losses, quality, throughput, telemetry and hparams, written by rank 0."""
    telemetry: bool = True
    """GPUs through NVML (the process on CPU) into telemetry.jsonl, a summary in result.json."""
    telemetry_interval_s: float = 1.0
    """Seconds between telemetry samples."""
    progress_timeout_s: float = 300.0
    """Several ranks: a rank silent (stopped, wedged) or without a training step for this long ends
    the run with "rank N made no progress for S s". Evaluation is judged on liveness alone, so a
    slow evaluation is safe at any value."""
    output_root: str = "outputs"
    """Every file a run writes goes under here."""
    data_root: str = MISSING
    """Where embedded datasets are generated; default: <output_root>/datasets."""
    mlperf: MLPerfFields = field(default_factory=MLPerfFields)
    """The submission_* keys of mlperf.log."""


ConfigStore.instance().store(name="harness_schema", node=HarnessConfig)


# Options that belong to Hydra itself or select a group, checked by Hydra or below.
_GROUPS = ("model", "dataset")


def compose(overrides: list[str]) -> DictConfig:
    """The composed config for these overrides (no sweeps), or ConfigError."""
    registry.load()  # the models' schemas and HARNESS_MODELS' datasets, before any name is looked up
    for override in overrides:
        group, _, name = override.partition("=")
        # the dataset default is optional (throughput-only models have none), and Hydra skips an
        # optional entry it cannot find: a dataset asked for by name must exist
        if group == "dataset" and name not in choices("dataset"):
            raise ConfigError(f"unknown dataset '{name}'; choose one of: {', '.join(choices('dataset'))}")
    try:
        cfg = compose_unchecked(overrides)
    except MissingConfigException as err:
        raise ConfigError(_missing_group_message(err)) from None
    except ConfigCompositionException as err:
        raise ConfigError(_composition_message(err)) from None
    except OmegaConfBaseException as err:
        raise ConfigError(_omegaconf_message(err)) from None
    except ValueError as err:  # OmegaConf indexing a list by a name (model.layers.x=1)
        raise ConfigError(_value_message(overrides, err)) from None
    check(cfg)
    return cfg


def _value_message(overrides: list[str], err: ValueError) -> str:
    groups = [o for o in overrides if o.split("=", 1)[0] in _GROUPS]
    try:
        defaults = compose_unchecked(groups)
    except Exception:
        defaults = None
    for override in overrides:
        parts = override.split("=", 1)[0].lstrip("+~").split(".")
        for i in range(1, len(parts)):
            node = OmegaConf.select(defaults, ".".join(parts[:i])) if defaults is not None else None
            if OmegaConf.is_list(node) and not parts[i].lstrip("-").isdigit():
                where = ".".join(parts[:i])
                return (f"{override}: {where} is a list; give a position ({where}.0=...) "
                        f"or the whole list ({where}=[...])")
    return f"cannot apply the command line: {str(err).splitlines()[0]}"


def check(cfg: DictConfig) -> None:
    """Allowed values and cross-field rules that no type can express."""
    for key, allowed in CHOICES.items():
        value = OmegaConf.select(cfg, key)
        if value not in allowed:
            raise ConfigError(f"{key}={value} is not an option; choose one of: {', '.join(allowed)}")
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
    if cfg.gpus < 1 or cfg.nodes < 1:
        raise ConfigError(f"gpus={cfg.gpus}, nodes={cfg.nodes}: need at least 1 each")
    if cfg.model.batch_size < 1:
        raise ConfigError(f"model.batch_size={cfg.model.batch_size}: need at least 1 sample per rank")
    if cfg.max_epochs < 1:
        raise ConfigError(f"max_epochs={cfg.max_epochs}: need at least 1")
    if cfg.eval_every < 1:
        raise ConfigError(f"eval_every={cfg.eval_every}: need at least 1")
    try:
        EvalSchedule.of(cfg.eval_every, cfg.model.eval_offset, cfg.model.eval_epochs, cfg.model.eval_every_samples)
    except ScheduleError as err:
        raise ConfigError(str(err)) from None
    if not spec.throughput_only and cfg.mode == "train":
        try:
            spec.task.quality.value(_plain(cfg.model.target), "model.target")
        except ValueError as err:
            raise ConfigError(str(err)) from None
    if cfg.warmup_steps < 0:
        raise ConfigError(f"warmup_steps={cfg.warmup_steps}: cannot be negative")
    if cfg.throughput_steps < 1 or cfg.throughput_repeats < 1:
        raise ConfigError(f"throughput_steps={cfg.throughput_steps}, throughput_repeats={cfg.throughput_repeats}: "
                          "need at least 1 each")
    if cfg.precision in ("amp", "tf32") and cfg.device == "cpu":
        raise ConfigError(f"precision={cfg.precision} needs a CUDA device, not device=cpu; "
                          "on CPU use precision=fp32 or precision=bf16")
    if cfg.master_weights and cfg.precision not in ("amp", "bf16"):
        raise ConfigError(f"master_weights=true keeps fp16 or bf16 weights: use it with precision=amp or "
                          f"precision=bf16, not precision={cfg.precision}")
    if cfg.ddp_bucket_mb <= 0:
        raise ConfigError(f"ddp_bucket_mb={cfg.ddp_bucket_mb}: must be above 0")
    if cfg.telemetry_interval_s <= 0:
        raise ConfigError(f"telemetry_interval_s={cfg.telemetry_interval_s}: must be above 0 (telemetry=false turns it off)")
    if cfg.progress_timeout_s <= 0:
        raise ConfigError(f"progress_timeout_s={cfg.progress_timeout_s}: must be above 0 seconds")


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
        raise ConfigError(f"cannot parse the command line: {str(err).splitlines()[0]}") from None
    base = [_first_value(o) for o in parsed]
    trials = [base]
    for i, override in enumerate(parsed):
        if override.is_sweep_override():
            for value in override.sweep_string_iterator():
                trial = list(base)
                trial[i] = f"{override.get_key_element()}={value}"
                trials.append(trial)
    for trial in trials:
        cfg = compose(trial)
        _check_value_types(cfg, trial)
        if check_run is not None:
            check_run(cfg)


def _check_value_types(cfg: DictConfig, overrides: list[str]) -> None:
    """A model's or dataset's hyperparameters are untyped in the schema: hold each overridden value
    to the type of the value it replaces (an integer stays an integer, a float takes an integer)."""
    groups = [o for o in overrides if o.split("=", 1)[0] in _GROUPS]
    defaults = compose_unchecked(groups)
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("+~")
        if key in _GROUPS or not key.startswith(_GROUPS):
            continue
        old, new = OmegaConf.select(defaults, key), OmegaConf.select(cfg, key)
        if old is None or new is None:
            continue
        if isinstance(old, bool) != isinstance(new, bool) or not _same_kind(old, new):
            raise ConfigError(f"{override}: expected {_kind(old)} like the default {old!r}")


def _same_kind(old: Any, new: Any) -> bool:
    if isinstance(old, float):
        return isinstance(new, (int, float))
    if isinstance(old, int):
        return isinstance(new, int)
    if isinstance(old, str):
        return isinstance(new, str)
    if OmegaConf.is_list(old):
        return OmegaConf.is_list(new)
    if OmegaConf.is_dict(old):
        return OmegaConf.is_dict(new)
    return True


def _kind(value: Any) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(
        type(value), "a list" if OmegaConf.is_list(value) else "a mapping")


def compose_unchecked(overrides: list[str], hydra: bool = False) -> DictConfig:
    """Hydra's composition alone; with hydra=True the result holds Hydra's own node too."""
    registry.load()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides), return_hydra_config=hydra)


def choices(group: str) -> list[str]:
    """The config names of a group: conf/<group>/*.yaml and what registered models stored."""
    from hydra.core.config_store import ConfigStore

    stored = ConfigStore.instance().repo.get(group, {})
    names = {p.stem for p in (CONF_DIR / group).glob("*.yaml")}
    names |= {n[:-5] for n, node in stored.items() if n.endswith(".yaml") and not isinstance(node, dict)}
    return sorted(names)


def datasets_for(model: str) -> list[str]:
    from hydra.core.config_store import ConfigStore

    found = []
    stored = ConfigStore.instance().repo.get("dataset", {})
    for name in choices("dataset"):
        path = CONF_DIR / "dataset" / f"{name}.yaml"
        if path.is_file():
            if f"model: {model}\n" in path.read_text():
                found.append(name)
        elif OmegaConf.select(OmegaConf.create(stored[f"{name}.yaml"].node), "dataset.model") == model:
            found.append(name)
    return found


def _first_value(override: Any) -> str:
    if not override.is_sweep_override():
        return override.input_line
    first = next(iter(override.sweep_string_iterator()))
    return f"{override.get_key_element()}={first}"


def _missing_group_message(err: MissingConfigException) -> str:
    group, _, name = (err.missing_cfg_file or "").rpartition("/")
    options = ", ".join(err.options or choices(group))
    if group:
        return f"unknown {group} '{name}'; choose one of: {options}"
    return str(err).splitlines()[0]


def _composition_message(err: ConfigCompositionException) -> str:
    cause = err.__cause__
    first = str(err).splitlines()[0]
    if first.startswith("Could not override '"):
        key = first.split("'")[1]
        if cause is not None and ("not in struct" in str(cause) or "not in '" in str(cause)):
            return f"unknown option '{key}'; {_known_options(key)}"
        if cause is not None:
            return f"bad value for '{key}': {_omegaconf_message(cause)}"
    if cause is not None:
        return _omegaconf_message(cause)
    return first


def _omegaconf_message(err: BaseException) -> str:
    msg = str(err).splitlines()[0] if str(err) else type(err).__name__
    key = getattr(err, "full_key", None)
    return f"{key}: {msg}" if key and key not in msg else msg


def _known_options(key: str) -> str:
    parent, _, _ = key.rpartition(".")
    try:
        cfg = compose([])
    except ConfigError:
        return "run with --cfg job to list the options"
    node = OmegaConf.select(cfg, parent) if parent else cfg
    if isinstance(node, DictConfig):
        names = ", ".join(str(k) for k in node.keys())
        where = f"'{parent}' has" if parent else "options are"
        return f"{where}: {names}"
    return "run with --cfg job to list the options"
