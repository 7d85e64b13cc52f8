"""ResNet-50 v1.5 on ImageNet as MLPerf's image_classification benchmark runs it, to top-1 0.759.

    python -m harness.train model=resnet seed=1                                   # embedded JPEGs, CPU
    python -m harness.train model=resnet dataset=imagenet seed=1                  # real ImageNet, MLPerf scale
    python -m harness.train model=resnet dataset=imagenet mode=throughput precision=amp model.channels_last=true
"""
from harness.interface import FRACTION, FastPath, MLPerfTask, ModelSpec, QualitySpec, SuiteEntry, lazy
from harness.interface.suite import VISION
from reference_models.resnet.options import ResNetOptions


SPEC = ModelSpec(
    name="resnet",
    options=ResNetOptions,
    sample_unit="images",
    build=lazy("reference_models.resnet.benchmark:ResNetBenchmark"),
    summary="ResNet-50 v1.5 image classification on ImageNet, top-1 accuracy",
    category=VISION,
    suite=SuiteEntry(step_s=(0.08, 0.30)),
    # NHWC convolutions without layout transposes, and Inductor's fused batch-norm and ReLU work; the
    # fixed crop size keeps the training step's shapes static, so time to train takes it too; mode=throughput
    # replays the compiled step from one CUDA graph (1.021x on an H100, 2026-12-05)
    # train_graph: on files beside the GPU decode, 1.10x the eager step on an H100 (gpu_check_2026-12-06.md)
    # stem_pool=triton: the stem's max-pool through two Triton kernels, 1.011x the step on an H100, the pool
    # alone 1.57x Inductor's (gpu_check_2026-12-07.md); compile=true already needs Triton on CUDA
    fast=FastPath(options=("channels_last=true", "compile=true", "stem_pool=triton"), cuda_graph=True,
                  train_graph=True,
                  measured="docs/benchmarks/fast_path_2026-12-05.md"),
    task=MLPerfTask(
        benchmark="resnet",
        quality=QualitySpec("top-1", bounds=FRACTION),
        # harness.check judges ResNet logs by 0.7.0, so that official v0.7 submissions pass as they did;
        # the logs also carry what 4.0.0 adds (gradient_accumulation_steps), the newest ruleset of the
        # pinned mlperf-logging with ResNet rules, and pass it too (tests/e2e/test_train_resnet.py)
        ruleset="0.7.0",
        rules_file=None,
        real_dataset="imagenet",
        prepare=lazy("reference_models.resnet.benchmark:prepare"),
        check=lazy("reference_models.resnet.check_data:check"),
        generator=lazy("reference_models.resnet.generate:ImageSpec"),  # its counts refused before a run
    ),
)
