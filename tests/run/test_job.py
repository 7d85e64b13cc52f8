"""How a run's failure reads: a GPU out of memory names the option that fixes it (the runs themselves:
tests/e2e/)."""
from __future__ import annotations

import torch
from omegaconf import OmegaConf

from harness.run.job import _failed
from harness.run.launch import RankFailed

OOM = "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB"


def _end(err, cfg):
    try:
        raise err
    except Exception as raised:
        return _failed(raised, cfg)


def test_cuda_out_of_memory_names_the_batch_size_option_and_bench_s_set():
    cfg = OmegaConf.create({"model": {"name": "resnet", "batch_size": 256}})
    end = _end(torch.cuda.OutOfMemoryError(OOM), cfg)
    assert end.reason == (f"OutOfMemoryError: {OOM}; the batch does not fit on the GPU (now 256 per rank): lower it "
                          "with model.batch_size=128, or in harness.bench --set model.batch_size=128")
    assert "\n" not in end.reason and end.error.type == "OutOfMemoryError"
    ranked = _end(RankFailed(1, f"OutOfMemoryError: {OOM}", None), cfg)  # one rank of several ran out
    assert ranked.reason.startswith(f"rank 1 failed: OutOfMemoryError: {OOM}; the batch does not fit on the GPU")


def test_out_of_memory_at_one_per_rank_points_past_the_batch():
    """Llama 3.1 8B on one 80 GiB GPU: halving a batch of 1 is no answer, so the line names what is."""
    cfg = OmegaConf.create({"model": {"name": "llama31_8b", "batch_size": 1}})
    end = _end(torch.cuda.OutOfMemoryError(OOM), cfg)
    assert end.reason == (f"OutOfMemoryError: {OOM}; the model does not fit on the GPU even at 1 per rank: a GPU "
                          "with more memory, more GPUs for a model that shards itself (gpus=N), or smaller sizes "
                          "(python -m harness.train --help model=llama31_8b lists them)")


def test_other_failures_keep_their_own_line():
    end = _end(RuntimeError("expected scalar type Float"), OmegaConf.create({"model": {"batch_size": 8}}))
    assert end.reason == "RuntimeError: expected scalar type Float"


def test_the_host_out_of_memory_says_what_to_lower():
    """A CPU run asked for more than the host has (model.factors=100000000): the allocator's own line, then
    what to change."""
    import pytest

    try:
        torch.empty(2**62, dtype=torch.uint8)
    except RuntimeError as err:
        raw = str(err).splitlines()[0]
    else:
        pytest.skip("this host allocated 4 EiB")
    end = _end(RuntimeError(raw), OmegaConf.create({"model": {"name": "ncf", "batch_size": 8}}))
    assert "DefaultCPUAllocator" in end.reason and "\n" not in end.reason
    assert end.reason.endswith("; the host's memory cannot hold it: lower the model's sizes (python -m harness.train "
                               "--help model=ncf lists them) or model.batch_size")


def test_the_data_wait_line_names_the_gpus_idle_time_on_a_gpu_alone():
    from harness.record import RunRecord
    from harness.run.job import _data_wait_line

    cpu = RunRecord(model="ncf", seed=1, status="success", device="cpu", data_wait_s=0.25, data_wait_share=0.05)
    assert _data_wait_line(cpu) == "data wait: 0.25 s, 5.0% of training time (waiting for batches)"
    gpu = RunRecord(model="ncf", seed=1, status="success", device="cuda:0", data_wait_s=0.25, data_wait_share=0.05)
    assert _data_wait_line(gpu) == ("data wait: 0.25 s, 5.0% of training time (waiting for batches: the time the GPU "
                                    "stood idle for them)")
