"""NCF (NeuMF on MovieLens ml-20m) as MLPerf's recommendation benchmark ran it, to HR@10 0.635.

    python -m harness.train model=ncf seed=1                 # embedded generated data, CPU, seconds
    python -m harness.train model=ncf dataset=ml20m seed=1   # real ml-20m at the reference's scale
"""
from pathlib import Path

from harness.interface import FRACTION, FastPath, MLPerfTask, ModelSpec, QualitySpec, SuiteEntry, lazy
from harness.interface.suite import RECOMMENDATION
from reference_models.ncf.options import NCFOptions


SPEC = ModelSpec(
    name="ncf",
    options=NCFOptions,
    sample_unit="samples",
    build=lazy("reference_models.ncf.benchmark:NCFBenchmark"),
    summary="NeuMF recommendation on MovieLens ratings, HR@10",
    category=RECOMMENDATION,
    # the bench at 2^20 per GPU, as docs/ncf.md's 101M samples/s
    suite=SuiteEntry(overrides=("model.batch_size=1048576",), step_s=(0.011, 0.03)),
    # fp16 embedding tables and MLP in mode=throughput: the gathers and their backward move half the
    # bytes (99.0M samples/s at 2^20 on one H200, 1.23x fp32 weights under autocast)
    fast=FastPath(master_weights=True, measured="docs/benchmarks/fast_path_2026-12-03.md"),
    task=MLPerfTask(
        benchmark="ncf",
        quality=QualitySpec("HR@10", bounds=FRACTION),
        ruleset="0.7.0",
        # MLPerf retired NCF before mlperf-logging had rules files for it: the harness ships its own,
        # the 0.7.0 common rules plus NCF's keys and target, labelled as the harness's ruleset.
        rules_file=Path(__file__).resolve().parent / "rules_0.7.0.yaml",
        real_dataset="ml20m",
        prepare=lazy("reference_models.ncf.benchmark:prepare"),
        check=lazy("reference_models.ncf.check_data:check"),
        generator=lazy("reference_models.ncf.generate:trainable"),
    ),
)
