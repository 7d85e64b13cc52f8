"""The options the vision models share: where JPEGs are decoded (model.decode of ResNet, SSD and Mask R-CNN;
backend.py says what each means on a device). Imports nothing heavy: each model's options.py imports it.

    python -m harness.train --help model=ssd      # model.decode's choices
"""
from __future__ import annotations

from harness.interface import Choice


class Decode(Choice):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"
    nvimgcodec = "nvimgcodec"
