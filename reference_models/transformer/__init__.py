"""Transformer-big (WMT17 English-German) as MLPerf Training's translation benchmark ran it in v0.7,
to uncased BLEU 0.25 on newstest2014.

    python -m harness.train model=transformer seed=1                            # embedded corpus, CPU
    python -m harness.train model=transformer dataset=wmt17 seed=1              # real WMT17, reference scale
    python -m harness.train model=transformer dataset=wmt17 mode=throughput precision=amp
"""
from harness.interface import FRACTION, FastPath, MLPerfTask, ModelSpec, QualitySpec, SuiteEntry, lazy
from harness.interface.suite import LANGUAGE
from reference_models.transformer.options import TransformerOptions


SPEC = ModelSpec(
    name="transformer",
    options=TransformerOptions,
    sample_unit="tokens",
    build=lazy("reference_models.transformer.benchmark:TransformerBenchmark"),
    summary="Transformer-big translation on WMT17 En-De, BLEU",
    category=LANGUAGE,
    suite=SuiteEntry(step_s=(0.10, 0.35)),
    # Inductor fuses each layer norm, dropout and residual (docs/transformer.md: 1.74x); training batches
    # are cut by tokens, of many shapes, each a recompilation, so training keeps the eager step
    fast=FastPath(options=("compile=true",), train_options=(), measured="docs/benchmarks/fast_path_2026-12-01.md"),
    task=MLPerfTask(
        benchmark="transformer",
        quality=QualitySpec("BLEU", bounds=FRACTION),
        ruleset="0.7.0",
        rules_file=None,  # the official training_0.7.0 rules (closed_transformer.yaml) apply
        real_dataset="wmt17",
        prepare=lazy("reference_models.transformer.benchmark:prepare"),
        check=lazy("reference_models.transformer.check_data:check"),
    ),
)
