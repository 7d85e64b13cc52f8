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


def test_far_more_cpu_ranks_than_cores_are_refused_in_one_line(monkeypatch):
    # gpus=1000 on 2 cores started 1000 processes, each loading torch: 57 had started after 120 s
    from harness.run import threads

    monkeypatch.setattr(threads.host_load, "usable_cpus", lambda: [0, 1])
    with pytest.raises(ConfigError) as caught:
        check_resources(compose(["model=ncf", "device=cpu", "gpus=9"]))
    assert str(caught.value) == ("gpus=9: 9 CPU ranks on 2 usable CPU(s), more than 4 a CPU (each rank is a process "
                                 "that loads torch and the model); ask for gpus=8 or fewer on this host, or run on GPUs")
    check_resources(compose(["model=ncf", "device=cpu", "gpus=8"]))  # crowded, and warned about as it starts
