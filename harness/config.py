"""The harness's configuration: the typed schema of conf/config.yaml and one-line config errors.

Hydra composes conf/ (found next to this package, whatever the working directory) over the schemas:
HarnessConfig below for the harness's own options, each model's options dataclass for model.*. The
schemas hold every default, type, choice and bound (harness.interface.options); a preset's YAML holds
only what it changes. This module checks the command-line overrides before Hydra runs anything, so
that a typo or a value out of bounds gives one line that names the option, the value and what it
needs, instead of a stack of composition errors or a failure deep in torch.

    python -c "from harness.config import compose; print(compose(['model=ncf']))"
"""
from __future__ import annotations

import difflib
import re
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
from harness.interface import options as model_options
from harness.interface.options import Choice, OptionError, UnknownOption, option
from harness.interface.schedule import EvalSchedule
from harness.precisions import Precision, check_device

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


class Device(Choice):
    auto = "auto"  # CUDA when PyTorch sees a GPU, else the CPU
    cpu = "cpu"
    cuda = "cuda"


class Mode(Choice):
    train = "train"
    throughput = "throughput"


class Division(Choice):
    closed = "closed"
    open = "open"


class Status(Choice):
    onprem = "onprem"
    cloud = "cloud"
    preview = "preview"
    research = "research"


@dataclass
class MLPerfFields:
    """The submission_* keys of the MLPerf log."""

    org: str = option("harness", unbounded="free text, logged as the submitter's name")
    """submission_org."""
    division: Division = Division.closed
    """submission_division: closed or open."""
    status: Status = Status.research
    """submission_status: onprem, cloud, preview or research."""
    platform: Optional[str] = option(None, unbounded="free text, logged as the system's name")
    """submission_platform; null: "<ranks>x<device name>", e.g. "1xNVIDIA H200"."""


_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"  # a run_id becomes a directory name under output_root/runs


@dataclass
class HarnessConfig:
    model: Any = option(MISSING, unbounded="a config group: model=<name> picks one of the registered models")
    """The model: model=<name> picks conf/model/<name>.yaml (options: --help model=<name>)."""
    dataset: Any = option(None, unbounded="a config group: dataset=<name> picks one of the model's datasets")
    """The dataset: dataset=<name> picks conf/dataset/<name>.yaml; default: the model's embedded one."""
    seed: Optional[int] = option(None, ge=0)
    """The run's master seed; null: drawn from the OS and recorded in the log and result.json."""
    gpus: int = option(1, ge=1)
    """Ranks per node: GPUs, or CPU processes with device=cpu."""
    nodes: int = option(1, ge=1)
    """Nodes of a multi-node run, each started with the same command."""
    rdzv_endpoint: Optional[str] = option(None, pattern=r"\S+:[0-9]+", like="HOST:PORT")
    """HOST:PORT of the c10d rendezvous, needed when nodes > 1."""
    run_id: Optional[str] = option(None, pattern=_NAME, like="a name of letters, digits, '.', '_' and '-'")
    """Names a multi-node run: the same on every node, a fresh one per run (its directory is
    <output_root>/runs/run-<run_id>_<model>)."""
    device: Device = Device.auto
    """auto, cpu or cuda."""
    precision: Optional[Precision] = None
    """fp32, tf32, amp (fp16 autocast with a gradient scaler) or bf16; tf32 and amp need CUDA. null: on CUDA
    the mixed precision the model's MLPerf reference trains in (amp for every model here), fp32 elsewhere."""
    master_weights: bool = False
    """amp/bf16: the weights themselves in fp16/bf16, fp32 copies in the optimizer."""
    ddp_bucket_mb: float = option(25.0, gt=0)
    """DistributedDataParallel's gradient bucket size on several ranks; above the model's gradient size,
    one all-reduce after backward instead of several overlapping it."""
    mode: Mode = Mode.train
    """train: to the quality target or the epoch cap; throughput: the model on synthetic batches, no data."""
    max_epochs: int = option("${model.max_epochs}", ge=1)
    """The epoch cap; default: the model's max_epochs."""
    eval_every: int = option("${model.eval_every}", ge=1)
    """Epochs between evaluations; default: the model's eval_every (its schedule: model.eval_*)."""
    warmup_steps: int = option(20, ge=0)
    """Training steps left out of the throughput figure."""
    throughput_steps: int = option(200, ge=1)
    """mode=throughput: counted steps per window, after warm-up."""
    throughput_repeats: int = option(5, ge=1)
    """mode=throughput: windows measured; result.json has each and their median."""
    warmup_s: Optional[float] = option(None, gt=0)
    """mode=throughput: warm up for at least this many seconds (after warmup_steps, one timed step at
    a time), and until the last three timed steps agree within 1.5x (at most 4x this plus 10 s); null:
    warmup_steps alone."""
    throughput_window_s: Optional[float] = option(None, gt=0)
    """mode=throughput: size each window to this many seconds from the warm-up's measured step time
    (throughput_steps is then not used); null: throughput_steps steps a window. `python -m
    harness.bench` sets both, so a cell and a direct call given the same seconds measure windows of the
    same length."""
    eager: bool = False
    """CUDA: the plain eager step, as DeepLearningExamples' and Lambda's tables measure it: none of the
    model's fast path (torch.compile, CUDA-graph capture; its ModelSpec's `fast`), which is otherwise the
    default on CUDA (harness/fastpath.py)."""
    cuda_graph: Optional[bool] = None
    """mode=throughput on one GPU: capture the step's forward and backward once in a CUDA graph and
    replay it (the optimizer runs eagerly after it): for models bound by launching small kernels
    (harness/run/graph.py). null: the model's fast path decides (on CUDA, unless eager=true). A step that
    cannot be captured falls back to the eager step, and the run says why."""
    clear_caches: bool = False
    """Drop the OS page cache before the run (needs root), as MLPerf submissions must."""
    progress: bool = True
    """A live progress line with ETA on the console."""
    tensorboard: bool = True
    """RUN_DIR/tb: losses, quality, throughput, telemetry and hparams, written by rank 0 (tensorboard --logdir)."""
    telemetry: bool = True
    """GPUs through NVML (the process on CPU) into telemetry.jsonl, a summary in result.json."""
    telemetry_interval_s: float = option(1.0, gt=0)
    """Seconds between telemetry samples (telemetry=false turns it off)."""
    progress_timeout_s: float = option(300.0, gt=0)
    """Several ranks: a rank silent (stopped, wedged) or without a training step for this long ends
    the run with "rank N made no progress for S s". Evaluation is judged on liveness alone, so a
    slow evaluation is safe at any value."""
    output_root: str = option("outputs", unbounded="a folder, checked before the run for being one this user "
                                                   "can write (harness.outputs.check_paths)")
    """Every file a run writes goes under here."""
    data_root: str = option("${output_root}/datasets", unbounded="a folder, checked before the run for not "
                                                                 "being a file (harness.outputs.check_paths)")
    """Where embedded datasets are generated; default: <output_root>/datasets."""
    mlperf: MLPerfFields = field(default_factory=MLPerfFields)
    """The submission_* keys of mlperf.log."""


ConfigStore.instance().store(name="harness_schema", node=HarnessConfig)


# Options that belong to Hydra itself or select a group, checked by Hydra or below.
_GROUPS = ("model", "dataset")


def compose(overrides: list[str]) -> DictConfig:
    """The composed config for these overrides (no sweeps), held to every check below, or ConfigError."""
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
        raise ConfigError(_composition_message(err, overrides)) from None
    except OmegaConfBaseException as err:
        raise ConfigError(_omegaconf_message(err)) from None
    except ValueError as err:  # OmegaConf indexing a list by a name (model.layers.x=1)
        raise ConfigError(_value_message(overrides, err)) from None
    _check_generator_types(cfg, overrides)
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
        raise ConfigError(f"unknown option '{err.key}'; {_known_options(err.key, [f'model={spec.name}'])}") from None
    except OptionError as err:
        raise ConfigError(str(err)) from None
    try:
        EvalSchedule.of(cfg.eval_every, cfg.model.eval_offset, cfg.model.eval_epochs, cfg.model.eval_every_samples)
    except ScheduleError as err:
        raise ConfigError(str(err)) from None
    if spec.task is not None and cfg.mode == "train":
        try:
            spec.task.quality.value(_plain(cfg.model.target), "model.target")
        except ValueError as err:
            raise ConfigError(str(err)) from None
    if str(cfg.device) == "cpu" and cfg.precision is not None:
        check_device(cfg.precision, cuda=False, where=", not device=cpu")
    if cfg.get("cuda_graph"):
        _check_cuda_graph(cfg)
    if cfg.get("eager") and cfg.get("cuda_graph"):
        raise ConfigError("eager=true runs the plain step and cuda_graph=true captures it: choose one")
    if cfg.master_weights and str(cfg.device) == "cpu" and cfg.precision is None:
        raise ConfigError("master_weights=true keeps fp16 or bf16 weights: on device=cpu add precision=bf16")
    if cfg.master_weights and cfg.precision is not None and cfg.precision not in ("amp", "bf16"):
        raise ConfigError(f"master_weights=true keeps fp16 or bf16 weights: use it with precision=amp or "
                          f"precision=bf16, not precision={cfg.precision}")


def _check_cuda_graph(cfg: DictConfig) -> None:
    """cuda_graph=true replays mode=throughput's one batch on one GPU (harness/run/graph.py)."""
    if cfg.mode != "throughput":
        raise ConfigError("cuda_graph=true replays mode=throughput's synthetic batch, whose shapes never change: "
                          "add mode=throughput, or leave cuda_graph out")
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
        if check_run is not None:
            check_run(cfg)


def _check_generator_types(cfg: DictConfig, overrides: list[str]) -> None:
    """The one part of a config no schema types: a dataset's generator parameters (each generator's
    own dataclass reads them when it writes the data). Hold each overridden one to the type of the
    preset's value it replaces (an integer stays an integer, a float takes an integer); model.* and
    the harness's options are typed by their schemas."""
    keys = [o.split("=", 1)[0].lstrip("+~") for o in overrides]
    if not any(k.startswith("dataset.") for k in keys):
        return
    defaults = compose_unchecked([o for o in overrides if o.split("=", 1)[0] in _GROUPS or o.startswith("+debug=")])
    for override, key in zip(overrides, keys):
        if not key.startswith("dataset."):
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


_NOT_A_CHOICE = re.compile(r"Invalid value '(.*)', expected one of \[(.*)\]")


def _composition_message(err: ConfigCompositionException, overrides: list[str]) -> str:
    cause = err.__cause__
    first = str(err).splitlines()[0]
    choice = _NOT_A_CHOICE.match(str(cause)) if cause is not None else None
    if choice and getattr(cause, "full_key", None):  # a Choice field: the values as the user types them
        return f"{cause.full_key}={choice.group(1)} is not an option; choose one of: {choice.group(2)}"  # type: ignore[union-attr]
    if first.startswith(("Could not override '", "Could not append to config. An item is already at '")):
        key = first.split("'")[1]
        if cause is not None and ("not in struct" in str(cause) or "not in '" in str(cause)):
            return f"unknown option '{key}'; {_known_options(key, overrides)}"
        if cause is not None:
            return f"bad value for '{key}': {_omegaconf_message(cause)}"
    if cause is not None:
        return _omegaconf_message(cause)
    return first


def _omegaconf_message(err: BaseException) -> str:
    msg = str(err).splitlines()[0] if str(err) else type(err).__name__
    key = getattr(err, "full_key", None)
    return f"{key}: {msg}" if key and key not in msg else msg


def _known_options(key: str, overrides: list[str]) -> str:
    """The options beside a misspelt one, of the model and dataset this command line picks, with
    the closest names first where some are close (model.lr: did you mean model.learning_rate?)."""
    parent, _, leaf = key.rpartition(".")
    try:
        cfg = compose_unchecked([o for o in overrides if o.split("=", 1)[0] in _GROUPS])
    except Exception:
        return "run with --cfg job to list the options"
    node = OmegaConf.select(cfg, parent) if parent else cfg
    if isinstance(node, DictConfig):
        names = [str(k) for k in node.keys()]
        close = _close_names(leaf, names)
        where = f"'{parent}' has" if parent else "options are"
        hint = f"did you mean {' or '.join(repr('.'.join(filter(None, (parent, c)))) for c in close)}? " if close else ""
        return f"{hint}{where}: {', '.join(names)}"
    return "run with --cfg job to list the options"


def _close_names(name: str, names: list[str]) -> list[str]:
    """Names like `name`: difflib's close matches, and the names it abbreviates (lr: learning_rate)."""
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    initials = [n for n in names if "_" in n and "".join(w[0] for w in n.split("_") if w) == name]
    prefixed = [n for n in names if len(name) >= 3 and n.startswith(name)]
    return list(dict.fromkeys(initials + close + prefixed))[:3]
