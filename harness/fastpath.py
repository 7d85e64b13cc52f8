"""What the command line left to the device: the precision and the model's fast path, filled in once
the run's device is known.

- `precision` null: the model's reference mixed precision on CUDA (ModelSpec.gpu_precision: amp for
  every model here), fp32 elsewhere. `precision=fp32` stays a value away.
- On CUDA, unless `eager=true`: the model's declared fast path (ModelSpec.fast,
  harness/interface/fastpath.py): its options (torch.compile, its mode) in mode=throughput, and in
  mode=train where the model says its step's shapes are static; `cuda_graph` null becomes the fast
  path's choice in mode=throughput on one GPU. An option given on the command line always wins.
- Elsewhere (CPU) nothing of a fast path applies: the embedded presets train as calibrated.

The label a run is grouped by names the path that ran (`label`): "amp", "amp+graph",
"amp+compile(reduce-overhead)", "tf32+compile+graph"; "+master" after the precision when the weights
themselves are fp16 or bf16.

    python -c "from harness.config import compose; from harness.fastpath import resolve, label; \\
cfg = compose(['model=tacotron2', 'mode=throughput']); resolve(cfg, cuda=True); print(label(cfg))"
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from omegaconf import DictConfig, OmegaConf, open_dict

from harness import registry
from harness.interface import ModelSpec
from harness.results.read.labels import EAGER, join_label


def resolve(cfg: DictConfig, cuda: bool, given: Iterable[str] = (), spec: Optional[ModelSpec] = None) -> None:
    """Fill `cfg` in place for a run on CUDA (`cuda`) or not; `given`: the command line's overrides,
    whose keys the fast path leaves alone; `spec`: the model's, when the caller has it. Idempotent."""
    spec = spec or registry.get(str(cfg.model.name))
    keys = {o.split("=", 1)[0].lstrip("+~") for o in given}
    with open_dict(cfg):
        if cfg.get("precision") is None:
            cfg.precision = spec.gpu_precision if cuda else "fp32"
        takes = cuda and not cfg.get("eager")
        throughput = str(cfg.mode) == "throughput"
        if cfg.get("cuda_graph") is None:
            one_gpu = int(cfg.gpus) * int(cfg.nodes) == 1
            cfg.cuda_graph = bool(takes and throughput and one_gpu and spec.fast.cuda_graph)
        if takes and (throughput or spec.fast.train):
            for key, value in spec.fast.settings().items():
                if f"model.{key}" not in keys:
                    OmegaConf.update(cfg, f"model.{key}", _value(value), merge=False)


def _value(text: str) -> Any:
    """'true' -> True, '3' -> 3, 'reduce-overhead' -> itself: the YAML reading a command line gets."""
    return OmegaConf.create({"v": text}).v if text else text


def path(cfg: DictConfig, graph_fell_back: bool = False) -> str:
    """The path a run's config asks for: "eager", "graph", "compile", "compile(reduce-overhead)+graph"...;
    `graph_fell_back`: the capture failed and the eager step ran instead (the run's loop says)."""
    parts = []
    model = cfg.get("model") or {}
    for key in sorted(k for k in model.keys() if str(k).startswith("compile") and model.get(k) is True):
        part = "compile" if key == "compile" else str(key).replace("_", "-")
        mode = str(model.get("compile_mode") or "default")
        parts.append(part if key != "compile" or mode == "default" else f"{part}({mode})")
    if cfg.get("cuda_graph") and not graph_fell_back:
        parts.append("graph")
    return "+".join(parts) or EAGER


def label(cfg: DictConfig, graph_fell_back: bool = False) -> str:
    """The name runs are grouped by: the precision, "+master" when the weights themselves are fp16 or
    bf16, then the path when it is not the eager step."""
    name = f"{cfg.precision}+master" if cfg.get("master_weights") else str(cfg.precision)
    return join_label(name, path(cfg, graph_fell_back))  # the report splits it back with labels.split_label
