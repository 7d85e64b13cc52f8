"""Precision and the fast path, in one place: the precisions a run can ask for and the device each needs,
what the command line left to the device (filled in once the run's device is known), and the label a
run is grouped by. Each config is resolved once, by the one who composed it: the command's checks
(harness/train.py), the job (harness/run/job.py), or build_run for a script's config.

- Precisions: amp (fp16 autocast with a gradient scaler) and tf32 are CUDA's; fp32 and bf16 run
  anywhere (`check_device`, called where the device becomes known: the command line, the host, a rank
  of an outside launcher). The torch side (autocast, the scaler, TF32 switches) is harness/run/precision.py.
- `precision` null: the model's reference mixed precision on CUDA (ModelSpec.gpu_precision: amp for
  every model here), fp32 elsewhere. `precision=fp32` stays a value away.
- On CUDA, unless `eager=true`: the model's declared fast path (ModelSpec.fast,
  harness/interface/fast_declaration.py): its options (torch.compile, its mode) in mode=throughput, and in
  mode=train those the model names for it (FastPath.train_options: all of them where its step's shapes
  are static); `cuda_graph` null becomes the fast path's choice on one GPU (FastPath.cuda_graph in
  mode=throughput, train_graph in mode=train), `master_weights` null its choice in mode=throughput at amp
  or bf16, and `warm_up` null on in mode=train wherever the step compiles (harness/run/warmup.py).
  An option given on the command line always wins, and a fast-path option that the model's relations
  refuse beside the given ones is left out (the fast path speeds a valid config up, never breaks it).
- Elsewhere (CPU) nothing of a fast path applies: the embedded presets train as calibrated.

The label a run is grouped by names the path that ran (`label`): "amp", "amp+graph",
"amp+compile(reduce-overhead)", "tf32+compile+graph"; "+master" after the precision when the weights
themselves are fp16 or bf16.

    python -c "from harness.config import compose; from harness.fastpath import resolve, label; \\
cfg = compose(['model=tacotron2', 'mode=throughput']); resolve(cfg, cuda=True); print(label(cfg))"
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional

from omegaconf import DictConfig, OmegaConf, open_dict

from harness.errors import ConfigError
from harness.interface.options import Choice, broken_relations
from harness.results.read.summary import EAGER, join_label

if TYPE_CHECKING:
    from harness.interface import ModelSpec


class Precision(Choice):
    fp32 = "fp32"
    tf32 = "tf32"
    amp = "amp"  # fp16 autocast with a gradient scaler
    bf16 = "bf16"


CUDA_ONLY = (Precision.tf32.value, Precision.amp.value)  # TF32 matmuls and fp16 autocast with its scaler


def check_device(precision: str, cuda: bool, where: str = "") -> None:
    """ConfigError when `precision` needs CUDA and the run's device is not CUDA; `where` says how the
    device was decided (", not device=cpu", " and this host has none")."""
    if str(precision) in CUDA_ONLY and not cuda:
        raise ConfigError(f"precision={precision} needs a CUDA device{where}; on CPU use precision=fp32 or "
                          "precision=bf16")


def resolve(cfg: DictConfig, cuda: bool, given: Iterable[str] = (), spec: Optional["ModelSpec"] = None) -> None:
    """Fill `cfg` in place, once, before it is read-only, for a run on CUDA (`cuda`) or not; `given`: the
    command line's overrides, whose keys the fast path leaves alone; `spec`: the model's, when the caller
    has it (else the registry's, looked up here: the command layer's list of models)."""
    if spec is None:
        from harness import registry

        spec = registry.get(str(cfg.model.name))
    keys = {o.split("=", 1)[0].lstrip("+~") for o in given}
    with open_dict(cfg):
        if cfg.get("precision") is None:
            cfg.precision = spec.gpu_precision if cuda else "fp32"
        takes = cuda and not cfg.get("eager")
        throughput = str(cfg.mode) == "throughput"
        if cfg.get("cuda_graph") is None:
            cfg.cuda_graph = bool(takes and graphed(cfg, spec))
        if cfg.get("master_weights") is None:
            cfg.master_weights = bool(takes and throughput and spec.fast.master_weights
                                      and str(cfg.precision) in (Precision.amp.value, Precision.bf16.value))
        if takes:
            before = {}
            for key, value in spec.fast.settings(train=not throughput).items():
                if f"model.{key}" not in keys:
                    before[key] = cfg.model.get(key)
                    OmegaConf.update(cfg, f"model.{key}", _value(value), merge=False)
            _keep_relations(cfg, spec, before)
        if cfg.get("warm_up") is None:
            # a compiled training step compiles before run_start, as MLPerf's initialization may: on an H200
            # the compiled embedded presets trained in 0.45-0.74x the time, to the same quality
            # (docs/benchmarks/fast_path_2026-12-04.md)
            cfg.warm_up = bool(not throughput and compiled_options(cfg))


def graphed(cfg: DictConfig, spec: "ModelSpec") -> bool:
    """Whether the model's fast path replays the step from a CUDA graph in this config, on CUDA: one GPU,
    not eager=true, and the model's declaration for the mode (FastPath.cuda_graph, train_graph)."""
    one_gpu = int(cfg.gpus) * int(cfg.nodes) == 1
    declared = spec.fast.cuda_graph if str(cfg.mode) == "throughput" else spec.fast.train_graph
    return bool(one_gpu and declared and not cfg.get("eager"))


def _keep_relations(cfg: DictConfig, spec: "ModelSpec", before: dict[str, Any]) -> None:
    """Undo the fast path's settings that the model's relations refuse beside the options given: the fast
    path speeds a valid config up and never turns it into an error (Mask R-CNN's fixed_mask_rois with the
    command line's model.heads=torchvision). The command line's own choices were checked when composed."""
    while True:
        broken = [b.option for b in broken_relations(spec.options, cfg.model, int(cfg.max_epochs))]
        undo = next((key for key in broken if key in before), None)
        if undo is None:
            return
        OmegaConf.update(cfg, f"model.{undo}", before.pop(undo), merge=False)


def _value(text: str) -> Any:
    """'true' -> True, '3' -> 3, 'reduce-overhead' -> itself: the YAML reading a command line gets."""
    return OmegaConf.create({"v": text}).v if text else text


def compiled_options(cfg: DictConfig) -> list[str]:
    """The model's torch.compile switches this config turns on ("compile", "compile_attention")."""
    model = cfg.get("model") or {}
    return sorted(str(k) for k in model.keys() if str(k).startswith("compile") and model.get(k) is True)


def check_compiled(cfg: DictConfig, cuda: bool, where: str) -> None:
    """ConfigError when `cfg` turns a compile switch on and the run's device is not CUDA: every model
    compiles on CUDA alone, and the run would train eager under a compiled label; `where` as check_device's."""
    compiled = compiled_options(cfg)
    if compiled and not cuda:
        raise ConfigError(f"model.{compiled[0]}=true compiles for a CUDA device{where}: leave it out (on a CPU the "
                          "step runs eager)")


def path(cfg: DictConfig, graph_fell_back: bool = False) -> str:
    """The path a run's config asks for: "eager", "graph", "compile", "compile(reduce-overhead)+graph"...;
    `graph_fell_back`: the capture failed and the eager step ran instead (the run's loop says)."""
    parts = []
    model = cfg.get("model") or {}
    for key in compiled_options(cfg):
        part = "compile" if key == "compile" else str(key).replace("_", "-")
        mode = str(model.get("compile_mode") or "default")
        parts.append(part if key != "compile" or mode == "default" else f"{part}({mode})")
    if cfg.get("cuda_graph") and not graph_fell_back:
        parts.append("graph")
    return "+".join(parts) or EAGER


def label(cfg: DictConfig, graph_fell_back: bool = False) -> str:
    """The name runs are grouped by: the precision, "+master" when the weights themselves are fp16 or
    bf16, "+fp8" when the linear layers multiply in fp8, then the path when it is not the eager step."""
    name = f"{cfg.precision}+master" if cfg.get("master_weights") else str(cfg.precision)
    name += "+fp8" if cfg.get("fp8") else ""
    return join_label(name, path(cfg, graph_fell_back))  # the report splits it back with labels.split_label
