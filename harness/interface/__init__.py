"""The model contract and what reference models build with.

    from harness.interface import ModelSpec, MLPerfTask, Benchmark, RunContext, QualitySpec, ModelOptions

- contract: ModelSpec, MLPerfTask, the Benchmark / ThroughputBenchmark protocols, RunContext, Logged,
  LossTerms (a loss of named parts);
- quality: a quality value (a number or named numbers), its direction and when it is reached;
- schedule: when a model evaluates (every N epochs with an offset, listed epochs, every N samples);
- options: the typed model options every model's config extends, with their bounds (`option`);
  option_help: what --help prints about them;
- suite: a model's MLPerf category and its entry in the GPU benchmark suite;
- lazy: a callable named by module and attribute, imported at its first call (a SPEC's build, prepare
  and check, so that reading the registry imports no torch);
- generated, sharding, loader, gather, corpus, images, findings: the shared pieces of a model's data
  and evaluation (imported from their modules: they pull in torch, NumPy or PIL);
- uninterruptible: a third-party call that would swallow Ctrl-C (a bare `except:`) run with it held.
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
from harness.interface.fast_declaration import FastPath
from harness.interface.lazy import lazy
from harness.interface.options import Broken, Choice, CompileMode, LrScaling, ModelOptions, compile_kwargs, option
from harness.interface.quality import FRACTION, Quality, QualityError, QualitySpec
from harness.interface.schedule import EvalSchedule, ScheduleError
from harness.interface.suite import SuiteEntry

__all__ = [
    "Benchmark", "Broken", "Choice", "CompileMode", "DataError", "EvalSchedule", "FastPath", "Logged", "LossTerms", "LrScaling", "MLPerfTask", "ModelOptions",
    "FRACTION", "ModelSpec", "Quality", "QualityError", "QualitySpec", "RunContext", "ScheduleError", "SuiteEntry",
    "ThroughputBenchmark", "compile_kwargs", "lazy", "option", "scaled_learning_rate",
]
