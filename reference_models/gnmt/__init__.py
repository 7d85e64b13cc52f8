"""GNMT v2 (WMT16 English-German) as MLPerf Training ran it through v0.7, to BLEU 0.24.

    python -m harness.train model=gnmt seed=1                                  # embedded corpus, CPU
    python -m harness.train model=gnmt dataset=wmt16 seed=1                    # real WMT16, reference scale
    python -m harness.train model=gnmt dataset=wmt16 mode=throughput precision=amp
"""
from harness.interface import FRACTION, FastPath, MLPerfTask, ModelSpec, QualitySpec, SuiteEntry, lazy
from harness.interface.suite import LANGUAGE
from reference_models.gnmt.options import GNMTOptions


SPEC = ModelSpec(
    name="gnmt",
    options=GNMTOptions,
    sample_unit="tokens",
    build=lazy("reference_models.gnmt.benchmark:GNMTBenchmark"),
    summary="GNMT v2 translation on WMT16 En-De, BLEU",
    category=LANGUAGE,
    # the bench at the batch docs/gnmt.md measured 572k tokens/s at
    suite=SuiteEntry(overrides=("model.batch_size=512",), step_s=(0.05, 0.20)),
    # mode=throughput's fixed lengths replayed from a CUDA graph, with fp16 weights (the reference's
    # --math fp16: cuDNN's LSTMs find their packed weights in fp16 instead of re-casting them each
    # call), the attention scores and the loss compiled: 971k-987k tokens/s at b2048 on one H200, 1.18x
    # the same without the loss compiled; training batches come in buckets of many lengths, so training
    # keeps the eager step: model.compile_attention=true model.compile_loss=true opt in, one graph with
    # symbolic lengths a kernel compiled in the warm-up (model.compile_shapes), not faster on one H200
    # (seeds 1 and 2: 25.8 s against 25.9 s, 36.1 s in 5 epochs against 31.7 s in 4; docs/gnmt.md)
    # the scores' backward one Triton kernel: 1.064x and 1.043x the two compiled reductions at b2048 on an
    # H100 (docs/benchmarks/gpu_check_2026-12-07.md)
    fast=FastPath(options=("compile_attention=true", "compile_loss=true", "attention_grads=one_pass"), cuda_graph=True, master_weights=True,
                  train_options=(), measured="docs/benchmarks/fast_path_2026-12-04.md"),
    task=MLPerfTask(
        benchmark="gnmt",
        quality=QualitySpec("BLEU", bounds=FRACTION),
        ruleset="0.7.0",
        rules_file=None,  # the official training_0.7.0 rules (closed_gnmt.yaml) apply
        real_dataset="wmt16",
        prepare=lazy("reference_models.gnmt.benchmark:prepare"),
        check=lazy("reference_models.gnmt.check_data:check"),
    ),
)
