"""NCF (NeuMF on MovieLens ml-20m) as MLPerf's recommendation benchmark ran it, to HR@10 0.635.

    python -m harness.train model=ncf seed=1                 # embedded generated data, CPU, about a minute
    python -m harness.train model=ncf dataset=ml20m seed=1   # real ml-20m at the reference's scale
"""
from pathlib import Path

from harness.interface import ModelSpec
from reference_models.ncf.benchmark import build, prepare

SPEC = ModelSpec(
    name="ncf",
    benchmark="ncf",
    real_dataset="ml20m",
    quality_metric="HR@10",
    sample_unit="samples",
    ruleset="0.7.0",
    # MLPerf retired NCF before mlperf-logging had rules files for it: the harness ships its own,
    # the 0.7.0 common rules plus NCF's keys and target, labelled as the harness's ruleset.
    rules_file=Path(__file__).resolve().parent / "rules_0.7.0.yaml",
    prepare=prepare,
    build=build,
)
