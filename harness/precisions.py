"""The numeric precisions a run can ask for, and the one rule on the device each needs.

amp (fp16 autocast with a gradient scaler) and tf32 are CUDA's; fp32 and bf16 run anywhere. The rule
is checked where the device becomes known: the command line (device=cpu, harness/config.py), the host
(device=auto without a GPU, harness/run/launch.py) and the rank's own device under an outside launcher
(harness/run/precision.py). Pure Python, so that each of them can import it.

    python -c "from harness.precisions import check_device; check_device('amp', cuda=False)"
"""
from __future__ import annotations

from harness.errors import ConfigError
from harness.interface.options import Choice


class Precision(Choice):
    fp32 = "fp32"
    tf32 = "tf32"
    amp = "amp"  # fp16 autocast with a gradient scaler
    bf16 = "bf16"


CUDA_ONLY = (Precision.tf32.value, Precision.amp.value)  # TF32 matmuls and fp16 autocast with its scaler


def check_device(precision: str, cuda: bool, where: str = "") -> None:
    """ConfigError when `precision` needs CUDA and the run's device is not CUDA; `where` says how the
    device was decided (", not device=cpu", " and this host has none")."""
    if str(precision) in CUDA_ONLY and not cuda:
        raise ConfigError(f"precision={precision} needs a CUDA device{where}; on CPU use precision=fp32 or "
                          "precision=bf16")
