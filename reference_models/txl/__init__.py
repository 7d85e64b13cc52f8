"""Transformer-XL as NVIDIA's DeepLearningExamples WikiText-103 configurations (base: 16 x 512, large:
18 x 1024), throughput only. The registered models are reference_models.txl_base and
reference_models.txl_large; this package holds what they share.

    python -m harness.train model=txl_base mode=throughput precision=amp
"""
from harness.interface import FastPath, ModelSpec, SuiteEntry, lazy
from harness.interface.suite import LANGUAGE
from reference_models.txl.options import TXLOptions


def spec(name: str, summary: str, suite: SuiteEntry) -> ModelSpec:
    return ModelSpec(name=name, options=TXLOptions, sample_unit="tokens",
                     build=lazy("reference_models.txl.benchmark:TXLBenchmark"), summary=summary,
                     category=LANGUAGE, suite=suite,
                     # each decoder layer compiled with torch's own CUDA graphs: the adaptive softmax's
                     # gathers stay outside them (their shapes follow the segment's clusters)
                     fast=FastPath(options=("compile=true", "compile_mode=reduce-overhead"), measured="docs/benchmarks/fast_path_2026-12-01.md"))
