"""An ImageNet folder checked as ResNet would read it, without training (python -m harness.check_data).

The train/ and val/ class folders must match, every image must decode (decode=False: its header
opens and a JPEG ends with its end marker), and the files the loader converts as the reference's
preprocessing does (CMYK and greyscale JPEGs to RGB, a PNG named .JPEG) are counted.

    python -m harness.check_data model=resnet dataset=imagenet
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from harness.interface.findings import DataReport
from harness.interface.images import probe_all
from reference_models.resnet import data as imagenet

CHUNK = 20_000
MEANING = {
    "cmyk_to_rgb": "CMYK JPEGs: converted to RGB (the reference re-encodes them)",
    "greyscale_to_rgb": "greyscale (or other non-RGB) images: converted to RGB as the reference decodes them",
    "not_jpeg": "files that are not JPEG inside (a PNG named .JPEG): decoded by their content (the reference "
                "re-encodes them)",
}


def check(cfg: Any, root: Path, report: DataReport, decode: bool) -> None:
    folder = report.attempt(imagenet.load, root)
    if folder is None:
        return
    report.facts.append(imagenet.describe(folder))
    classes = int(cfg.model.num_classes or len(folder.classes))
    if classes < len(folder.classes):
        report.problems.append(f"model.num_classes={classes} but the dataset has {len(folder.classes)} classes")
    global_batch = int(cfg.model.batch_size) * int(cfg.gpus) * int(cfg.nodes)
    if len(folder.train) < global_batch:
        report.problems.append(f"{len(folder.train)} training images cannot fill one global batch of {global_batch} "
                               "(model.batch_size x gpus): add images or lower model.batch_size")
    for split in imagenet.SPLITS:
        samples = getattr(folder, split)
        start = time.monotonic()
        counts = dict.fromkeys(imagenet.REPAIRS, 0)
        for first in range(0, len(samples), CHUNK):  # chunks: 1.3 million files' facts need not all be held
            for f in probe_all(((path, None) for path, _ in samples[first: first + CHUNK]), decode=decode):
                if f.problem is not None:
                    report.problems.append(f"{f.path} {f.problem}: replace it with a good copy or delete it")
                    continue
                counts["not_jpeg"] += f.format != "JPEG"
                counts["cmyk_to_rgb"] += f.mode == "CMYK"
                counts["greyscale_to_rgb"] += f.mode not in ("RGB", "CMYK")
            if len(samples) > CHUNK:
                done = min(first + CHUNK, len(samples))
                print(f"  {split}: {done:,}/{len(samples):,} images, {time.monotonic() - start:.0f} s", file=sys.stderr,
                      flush=True)
        verb = "decoded" if decode else "read the headers of"
        report.facts.append(f"{split}: {verb} {len(samples):,} images in {time.monotonic() - start:.1f} s")
        report.counted(split, counts, MEANING)
