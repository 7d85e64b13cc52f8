"""Llama 2 70B LoRA fine-tuning on SCROLLS GovReport, as MLPerf Training's LLM fine-tuning benchmark
(llama2_70b_lora, from v4.0 on) runs it, to a validation loss of 0.925.

    python -m harness.train model=llama2_70b_lora seed=1                                     # embedded, CPU
    python -m harness.train model=llama2_70b_lora dataset=govreport model.base=PATH gpus=8 model.fsdp=true seed=1
    python -m harness.train model=llama2_70b_lora dataset=govreport mode=throughput precision=bf16 model.fsdp=true
"""
from harness.interface import FastPath, MLPerfTask, ModelSpec, QualitySpec, lazy
from harness.interface.suite import LANGUAGE, SuiteEntry
from reference_models.llama2_70b_lora.options import Llama2LoraOptions

SPEC = ModelSpec(
    name="llama2_70b_lora",
    options=Llama2LoraOptions,
    sample_unit="sequences",
    build=lazy("reference_models.llama2_70b_lora.benchmark:Llama2LoraBenchmark"),
    summary="Llama 2 70B LoRA fine-tuning on GovReport, validation loss",
    category=LANGUAGE,
    gpu_precision="bf16",  # the reference fine-tunes in bf16
    # each block compiled: its packed sequences are one shape in training too (docs/benchmarks/fast_path_2026-12-03.md)
    fast=FastPath(options=("compile=true",), measured="docs/benchmarks/fast_path_2026-12-03.md"),
    # harness.bench's cell: 16 of the 80 blocks (14B parameters, 57 GB in fp32) and one packed sequence of
    # 8,192 tokens a GPU, activations recomputed: the whole 69B base fits no single GPU (the reference shards
    # it over 8)
    suite=SuiteEntry(overrides=("model.layers=16", "model.batch_size=1", "model.activation_checkpointing=true"),
                     step_s=(0.9, 3.0)),
    task=MLPerfTask(
        benchmark="llama2_70b_lora",
        quality=QualitySpec("eval loss", higher_is_better=False),
        ruleset="6.0.0",
        rules_file=None,  # the official training_6.0.0 rules (closed_ or open_llama2_70b_lora.yaml) apply
        real_dataset="govreport",
        prepare=lazy("reference_models.llama2_70b_lora.benchmark:prepare"),
    ),
)
