"""Mask R-CNN ResNet-50-FPN on COCO 2017 as MLPerf's object_detection benchmark ran it (v0.7), to box mAP
0.377 and mask mAP 0.339 together.

    python -m harness.train model=maskrcnn seed=1                                  # embedded shapes, CPU
    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 seed=1        # real COCO 2017
    python -m harness.train model=maskrcnn dataset=maskrcnn_coco2017 mode=throughput precision=amp
"""
from functools import partial

from harness.interface import FRACTION, FastPath, MLPerfTask, ModelSpec, QualitySpec, SuiteEntry, lazy
from harness.interface.suite import VISION
from reference_models.maskrcnn.options import MaskRCNNOptions


SPEC = ModelSpec(
    name="maskrcnn",
    options=MaskRCNNOptions,
    sample_unit="images",
    build=lazy("reference_models.maskrcnn.benchmark:MaskRCNNBenchmark"),
    summary="Mask R-CNN ResNet-50-FPN detection and segmentation on COCO 2017, box and mask mAP",
    category=VISION,
    # NHWC with the backbone and FPN compiled: 1.48x the eager step at 800x1216, batch 8, amp on one H200
    # (1.11x NHWC alone), and their kernels replayed as CUDA graphs (reduce-overhead) 1.11x the compiled body
    # without: the step waits on the host. The mask head on a few fixed ROI counts, compiled and replayed with
    # the body: 102 images/s against 79 in one call on an H200 (1.29x, 2026-12-05). Training batches come in
    # many image sizes, and the compiled body recompiles for them (40 steps on COCO-size files after a
    # warm pass had not finished in 370 s on an H100), so training keeps the eager step, in NHWC with the
    # mask head on fixed ROI counts: 83.3-83.9 images/s on files against 79.9-80.1 without fixed ROIs,
    # alternated three times on an H100 (1.045x), and 82.0-82.7 against 66.9-68.5 for the default before
    # (NCHW, eager mask head: 1.22x; docs/benchmarks/gpu_check_2026-12-07.md, sixth and seventh leases)
    fast=FastPath(options=("channels_last=true", "compile=true", "compile_mode=reduce-overhead", "fixed_mask_rois=true"),
                  train_options=("channels_last=true", "fixed_mask_rois=true"),
                  measured="docs/benchmarks/fast_path_2026-12-05.md"),
    suite=SuiteEntry(step_s=(0.30, 0.90)),
    task=MLPerfTask(
        benchmark="maskrcnn",
        quality=QualitySpec("mAP", parts=("BBOX", "SEGM"), bounds=FRACTION),
        ruleset="0.7.0",
        rules_file=None,  # the official training_0.7.0 rules (closed_maskrcnn.yaml) apply
        real_dataset="maskrcnn_coco2017",
        prepare=lazy("reference_models.detection.coco:prepare"),
        # as MaskRCNNBenchmark reads the splits: polygons in both, no crowd regions in training
        check=partial(lazy("reference_models.detection.check_data:check"),
                      splits={"train": {"keep_empty": False, "with_polygons": True},
                                "val": {"keep_empty": True, "with_polygons": True}}),
    ),
)
