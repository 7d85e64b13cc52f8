"""The model contract and what reference models build with.

    from harness.interface import ModelSpec, MLPerfTask, Benchmark, RunContext, QualitySpec, ModelOptions

- contract: ModelSpec, MLPerfTask, the Benchmark / ThroughputBenchmark protocols, RunContext, Logged,
  LossTerms (a loss of named parts);
- quality: a quality value (a number or named numbers), its direction and when it is reached;
- schedule: when a model evaluates (every N epochs with an offset, listed epochs, every N samples);
- options: the typed model options every model's config extends;
- generated, sharding, loader, gather, corpus: the shared pieces of a model's data and evaluation
  (imported from their modules: they pull in torch or NumPy).
"""
from harness.interface.contract import (
    Benchmark,
    DataError,
    Logged,
    LossTerms,
    MLPerfTask,
    ModelSpec,
    RunContext,
    ThroughputBenchmark,
    scaled_learning_rate,
)
from harness.interface.options import Choice, ModelOptions
from harness.interface.quality import Quality, QualityError, QualitySpec
from harness.interface.schedule import EvalSchedule, ScheduleError

__all__ = [
    "Benchmark", "Choice", "DataError", "EvalSchedule", "Logged", "LossTerms", "MLPerfTask", "ModelOptions", "ModelSpec", "Quality",
    "QualityError", "QualitySpec", "RunContext", "ScheduleError", "ThroughputBenchmark", "scaled_learning_rate",
]
