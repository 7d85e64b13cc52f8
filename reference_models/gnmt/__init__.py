"""GNMT v2 (WMT16 English-German) as MLPerf Training ran it through v0.7, to BLEU 0.24.

    python -m harness.train model=gnmt seed=1                                  # embedded corpus, CPU
    python -m harness.train model=gnmt dataset=wmt16 seed=1                    # real WMT16, reference scale
    python -m harness.train model=gnmt dataset=wmt16 mode=throughput precision=amp
"""
from harness.interface import ModelSpec
from reference_models.gnmt.benchmark import build, prepare

SPEC = ModelSpec(
    name="gnmt",
    benchmark="gnmt",
    real_dataset="wmt16",
    quality_metric="BLEU",
    sample_unit="tokens",
    ruleset="0.7.0",
    rules_file=None,  # the official training_0.7.0 rules (closed_gnmt.yaml) apply
    prepare=prepare,
    build=build,
)
