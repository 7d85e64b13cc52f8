"""harness.run.launch.check_resources: a run this host cannot hold is refused before anything is written."""
from __future__ import annotations

import pytest
import torch

from harness.config import ConfigError, compose
from harness.run.launch import check_resources


@pytest.mark.parametrize("precision", ["amp", "tf32"])
def test_a_cuda_precision_on_a_host_without_a_gpu_is_refused_in_one_line(precision, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match=f"precision={precision} needs a CUDA device and this host has none"):
        check_resources(compose(["model=ncf", f"precision={precision}"]))  # device=auto


def test_cpu_precisions_pass_on_a_host_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for precision in ("fp32", "bf16"):
        check_resources(compose(["model=ncf", f"precision={precision}"]))
