"""Llama 3.1 8B pretraining on C4 (en), as MLPerf Training's small LLM benchmark (llama31_8b) runs it
from v5.1 on, to a validation log perplexity of 3.3.

    python -m harness.train model=llama31_8b seed=1                               # embedded corpus, CPU
    python -m harness.train model=llama31_8b dataset=c4 model.tokenizer=PATH seed=1     # real C4, reference scale
    python -m harness.train model=llama31_8b dataset=c4 mode=throughput precision=bf16 model.fsdp=true
"""
from harness.interface import FastPath, MLPerfTask, ModelSpec, QualitySpec, lazy
from harness.interface.suite import LANGUAGE, SuiteEntry
from reference_models.llama31_8b.options import Llama31Options

SPEC = ModelSpec(
    name="llama31_8b",
    options=Llama31Options,
    sample_unit="sequences",
    build=lazy("reference_models.llama31_8b.benchmark:Llama31Benchmark"),
    summary="Llama 3.1 8B pretraining on C4 (en), validation log perplexity",
    category=LANGUAGE,
    gpu_precision="bf16",
    # each block compiled: its packed sequences are one shape in training too (docs/benchmarks/fast_path_2026-12-03.md)
    fast=FastPath(options=("compile=true",), measured="docs/benchmarks/fast_path_2026-12-03.md"),
    # harness.bench's cell: the whole 8B model on one GPU, one sequence of 8,192 tokens, activations recomputed
    # (fits one H200: 1.000 sequences/s with compiled blocks, docs/llama31_8b.md); the reference trains in bf16
    # with fp8 matmuls (the harness: fp8=true, off by default; 1.24x on an H200, docs/llama31_8b.md)
    suite=SuiteEntry(overrides=("model.batch_size=1", "model.activation_checkpointing=true"), step_s=(1.16, 4.6)),
    task=MLPerfTask(
        benchmark="llama31_8b",
        quality=QualitySpec("log perplexity", higher_is_better=False),
        ruleset="6.0.0",
        rules_file=None,  # the official training_6.0.0 rules (closed_ or open_llama31_8b.yaml) apply
        real_dataset="c4",
        prepare=lazy("reference_models.llama31_8b.benchmark:prepare"),
    ),
)
