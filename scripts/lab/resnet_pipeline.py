"""ResNet's input pipeline against its training step (scripts/lab/pipeline_bench.py, which measures
every model with a real data path, run for ResNet; the same arguments and output):

    python -m reference_models.resnet.generate /tmp/inet500 --classes 20 --width 500 --height 375 \
        --size-jitter 0 --train-per-class 500 --val-per-class 5
    python scripts/lab/resnet_pipeline.py model=resnet dataset=imagenet dataset.path=/tmp/inet500 \
        model.num_classes=1000 precision=amp model.channels_last=true model.batch_size=256 model.workers=15

It prints images/s for the loader alone, training on the JPEGs and the same step on batches held on
the device, real / synthetic, and names the bottleneck, plus one JSON line (--json: to a file too).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline_bench import main  # noqa: E402

if __name__ == "__main__":
    main(script="resnet_pipeline")
