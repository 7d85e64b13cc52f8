"""BERT (base 12x768, large 24x1024) as throughput-only models: SQuAD v1.1 fine-tuning at 384 tokens,
masked LM + next sentence pre-training at 128 and 512 (model.workload). The registered models are
reference_models.bert_base and reference_models.bert_large; this package holds what they share.

    python -m harness.train model=bert_large mode=throughput precision=amp
"""
from harness.interface import FastPath, ModelSpec, SuiteEntry, lazy
from harness.interface.suite import LANGUAGE
from reference_models.bert.options import BertOptions


def spec(name: str, summary: str, suite: SuiteEntry) -> ModelSpec:
    return ModelSpec(name=name, options=BertOptions, sample_unit="sequences",
                     build=lazy("reference_models.bert.benchmark:BertBenchmark"), summary=summary,
                     category=LANGUAGE, suite=suite,
                     # Inductor fuses each layer's elementwise work between the matmuls; the replay
                     # drops the launches of the 24 layers' remaining kernels; fp16 LayerNorms: 517
                     # sequences/s against 506 for BERT-large in one call on an H200 (2026-12-05)
                     fast=FastPath(options=("compile=true", "half_norms=true"), cuda_graph=True,
                                   measured="docs/benchmarks/fast_path_2026-12-05.md"))
