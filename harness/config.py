"""The harness's configuration: the typed schema of conf/config.yaml and the checks of a composed config.

Hydra composes conf/config.yaml (found next to this package, whatever the working directory) and each
model's presets (<package>/conf, harness/presets.py) over the schemas: HarnessConfig below for the
harness's own options, each model's options dataclass for model.*. The schemas hold every default,
type, choice and bound (harness.interface.options); a preset's YAML holds only what it changes. This
module checks the command-line overrides before Hydra runs anything, so that a typo or a value out of
bounds gives one line that names the option, the value and what it needs (harness/config_messages.py),
instead of a stack of composition errors or a failure deep in torch.

    python -c "from harness.config import compose; print(compose(['model=ncf']))"
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness import registry
from harness.config_messages import (GROUPS, composition_message, kind_message, known_options,
                                     missing_group_message, omegaconf_message, value_message)
from harness.errors import ConfigError
from harness.interface import ScheduleError
from harness.interface import options as model_options
from harness.interface.options import Choice, OptionError, UnknownOption, option
from harness.interface.schedule import EvalSchedule
from harness.precisions import Precision, check_device
from harness.presets import choices, compose_unchecked, datasets_for


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
    """The model: model=<name> picks reference_models/<name>/conf/model/<name>.yaml (options: --help model=<name>)."""
    dataset: Any = option(None, unbounded="a config group: dataset=<name> picks one of the model's datasets")
    """The dataset: dataset=<name> picks the model's conf/dataset/<name>.yaml; default: its embedded one."""
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


def compose(overrides: list[str]) -> DictConfig:
    """The composed config for these overrides (no sweeps), held to every check below, or ConfigError."""
    registry.load()  # the models' schemas and HARNESS_MODELS' datasets, before any name is looked up
    _check_dataset_choice(overrides)
    try:
        cfg = compose_unchecked(overrides)
    except MissingConfigException as err:
        raise ConfigError(missing_group_message(err)) from None
    except ConfigCompositionException as err:
        raise ConfigError(composition_message(err, overrides)) from None
    except OmegaConfBaseException as err:
        raise ConfigError(omegaconf_message(err)) from None
    except ValueError as err:  # OmegaConf indexing a list by a name (model.layers.x=1)
        raise ConfigError(value_message(overrides, err)) from None
    _check_generator_types(cfg, overrides)
    check(cfg)
    return cfg


def _check_dataset_choice(overrides: list[str]) -> None:
    """A dataset asked for by name must exist (the default is optional, as throughput-only models have
    none, and Hydra skips an optional entry it cannot find) and be one of the model's: its model_for
    preset would not fit another model's options."""
    name = next((o.partition("=")[2] for o in overrides if o.startswith("dataset=")), None)
    if name is None:
        return
    if name not in choices("dataset"):
        raise ConfigError(f"unknown dataset '{name}'; choose one of: {', '.join(choices('dataset'))}")
    model = next((o.partition("=")[2] for o in overrides if o.startswith("model=")), None)
    if model is None or model not in choices("model"):
        return  # the default model, or an unknown one that the composition names
    owner = next((m for m in choices("model") if name in datasets_for(m)), None)
    if owner is not None and owner != model:
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
    defaults = compose_unchecked([o for o in overrides if o.split("=", 1)[0] in GROUPS or o.startswith("+debug=")])
    for override, key in zip(overrides, keys):
        if not key.startswith("dataset."):
            continue
        old, new = OmegaConf.select(defaults, key), OmegaConf.select(cfg, key)
        if old is None or new is None:
            continue
        message = kind_message(override, old, new)
        if message:
            raise ConfigError(message)


def _first_value(override: Any) -> str:
    if not override.is_sweep_override():
        return override.input_line
    first = next(iter(override.sweep_string_iterator()))
    return f"{override.get_key_element()}={first}"


