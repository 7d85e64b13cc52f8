"""SSD300-ResNet34 on COCO 2017 as MLPerf's single_stage_detector benchmark ran it (v0.7), to box mAP 0.23.

    python -m harness.train model=ssd seed=1                                   # embedded COCO-format shapes, CPU
    python -m harness.train model=ssd dataset=ssd_coco2017 seed=1              # real COCO 2017, reference scale
    python -m harness.train model=ssd dataset=ssd_coco2017 mode=throughput precision=amp
"""
from functools import partial

from harness.interface import FRACTION, MLPerfTask, ModelSpec, QualitySpec, SuiteEntry, lazy
from harness.interface.suite import VISION
from reference_models.ssd.options import SSDOptions


SPEC = ModelSpec(
    name="ssd",
    options=SSDOptions,
    sample_unit="images",
    build=lazy("reference_models.ssd.benchmark:SSDBenchmark"),
    summary="SSD300-ResNet34 object detection on COCO 2017, box mAP",
    category=VISION,
    suite=SuiteEntry(step_s=(0.10, 0.35)),
    task=MLPerfTask(
        benchmark="ssd",
        quality=QualitySpec("mAP", bounds=FRACTION),
        ruleset="0.7.0",
        rules_file=None,  # the official training_0.7.0 rules (closed_ssd.yaml) apply
        real_dataset="ssd_coco2017",
        prepare=lazy("reference_models.detection.coco:prepare"),
        # as SSDBenchmark reads the splits: crowd boxes in training (the reference trains on them)
        check=partial(lazy("reference_models.detection.check_data:check"),
                      splits={"train": {"keep_empty": False, "include_crowd": True},
                                "val": {"keep_empty": True, "include_crowd": True}}),
    ),
)
