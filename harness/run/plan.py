"""A run resolved once into a frozen, typed plan: the composed config with its precision, fast path and
seed filled in (harness/fastpath.py), read-only from then on, and what the rest of the run reads of it
computed here once: the typed config, the precision, the label runs are grouped by and the step's path.

    python -m harness.train model=ncf seed=1     # the job plans the run; launch, each rank and the loop read it

The job (harness/run/job.py) makes the plan with `plan_run`; a rank spawned by the elastic launcher gets the
launcher's resolved config as YAML and reads its plan back with `read_plan`, which resolves nothing. What a
run learns while it runs (a CUDA-graph capture that fell back to the eager step) is a field of the loop's
result, and `RunPlan.ran` names the path that ran from it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from omegaconf import DictConfig, OmegaConf, open_dict

from harness import fastpath
from harness.config.schema import HarnessConfig, Mode
from harness.interface import ModelSpec
from harness.run import seeding


@dataclass(frozen=True)
class RunPlan:
    cfg: DictConfig  # composed, resolved, read-only: what config.yaml holds (cfg.dataset, the model's keys)
    spec: ModelSpec  # cfg.model.name's, looked up once by the process
    config: HarnessConfig  # cfg typed: config.model is the model's options dataclass
    seed: int  # the master seed, drawn from the OS where the command line left it null
    precision: str  # fp32, tf32, amp or bf16, resolved for the run's device
    label: str  # what runs are grouped by: "amp+graph", "bf16+master", "amp+compile(reduce-overhead)"
    path: str  # the step asked for: "eager", "graph", "compile+graph", ...

    @property
    def training(self) -> bool:
        """mode=train (an MLPerf run to its target), not a throughput measurement."""
        return self.config.mode != Mode.throughput

    def ran(self, graph_fell_back: bool) -> tuple[str, str]:
        """The label and path of the step that ran: the plan's, or the eager step's where the CUDA-graph
        capture fell back (the loop's result says)."""
        if not graph_fell_back:
            return self.label, self.path
        return fastpath.label(self.cfg, graph_fell_back=True), fastpath.path(self.cfg, graph_fell_back=True)


def plan_run(cfg: DictConfig, spec: ModelSpec, cuda: bool, given: Iterable[str] = ()) -> RunPlan:
    """Resolve the composed `cfg` in place for a run on CUDA (`cuda`) or not: its precision and fast path
    (an option in `given`, the command line's overrides, wins over the model's fast path) and its seed;
    then make it read-only and plan the run from it."""
    fastpath.resolve(cfg, cuda, given=given, spec=spec)
    if cfg.seed is None:
        with open_dict(cfg):
            cfg.seed = seeding.draw_seed()
    return read_plan(cfg, spec)


def read_plan(cfg: DictConfig, spec: ModelSpec) -> RunPlan:
    """The plan of a config resolved already (a spawned rank's, from its launcher's YAML): read, not
    resolved again; the config is read-only from here."""
    if cfg.get("precision") is None or cfg.get("seed") is None:
        raise ValueError("read_plan takes a resolved config (precision and seed set): plan it with plan_run")
    OmegaConf.set_readonly(cfg, True)
    # compose's config carries the schema; a rank's YAML carries the values alone, typed here in the one pass
    typed = cfg if OmegaConf.get_type(cfg) is HarnessConfig else OmegaConf.merge(OmegaConf.structured(HarnessConfig), cfg)
    config = OmegaConf.to_object(typed)
    if not isinstance(config, HarnessConfig):
        raise TypeError(f"the run's config reads as {type(config).__name__}, not the harness's HarnessConfig")
    return RunPlan(cfg=cfg, spec=spec, config=config, seed=int(cfg.seed), precision=str(cfg.precision),
                   label=fastpath.label(cfg), path=fastpath.path(cfg))


def counts_epochs(spec: ModelSpec) -> bool:
    """Whether the log's epoch numbers of this benchmark count epochs under a schedule by samples (a fraction
    of an epoch: DLRM-DCNv2), as the RCP checker reads them; samples for the benchmarks it counts in samples
    (BERT, the Llamas) and for a benchmark MLPerf has no RCPs for (the test stand-ins)."""
    from harness.results.read.official import EPOCH_NUM_COUNTS, SAMPLES_BENCHMARKS, convergence_unit

    known = spec.benchmark in EPOCH_NUM_COUNTS or spec.benchmark in SAMPLES_BENCHMARKS
    return known and spec.task is not None and convergence_unit(spec.benchmark, spec.task.ruleset) == "epochs"
