"""A sample that fails to load ends the run with one line that names it, with or without worker processes;
what the workers convert is counted in the training process."""
from __future__ import annotations

import logging
import os
import signal

import pytest
import torch
from torch.utils.data import Dataset

from harness.interface import DataError, RunContext
from harness.interface.findings import SampleFlags
from harness.interface.loader import make_loader, make_shard_loader, worker_message


class Files(Dataset):
    """Sample i is "file_i"; sample 5 fails as a decoder fails (OSError), sample 6 with the dataset's own
    DataError; with die=True the first sample's worker is killed; odd samples flag themselves in `flags`."""

    def __init__(self, n: int = 8, bad: tuple[int, ...] = (5,), flags: SampleFlags | None = None, die: bool = False):
        self.n, self.bad, self.flags, self.die = n, bad, flags, die

    def __len__(self) -> int:
        return self.n

    def describe_sample(self, i: int) -> str:
        return f"/data/file_{i}.jpg"

    def __getitem__(self, i: int):
        if i in self.bad and i == 5:
            raise OSError("image file is truncated (11 bytes not processed)")
        if i in self.bad and i == 6:
            raise DataError(f"/data/file_{i}.jpg is not what its annotation says")
        if self.die and i == 0:
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer ends a worker
        if self.flags is not None and i % 2:
            self.flags.mark(i, "odd")
        return torch.tensor([i])


def _ctx() -> RunContext:
    return RunContext(cfg=None, data_dir=None, device=torch.device("cpu"), rank=0, world_size=1,
                      seed=1, shared_seed=1)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_failing_sample_is_one_line_naming_it_with_or_without_workers(workers, caplog):
    loader = make_loader(Files(), _ctx(), batch_size=2, workers=workers, shuffle=False)
    with caplog.at_level(logging.ERROR, logger="harness.loader"), pytest.raises(DataError) as caught:
        list(loader.epoch(1))
    message = str(caught.value)
    assert "\n" not in message and "Caught" not in message and "Traceback" not in message
    assert message.startswith("/data/file_5.jpg: OSError: image file is truncated (11 bytes not processed): fix or "
                              "replace it")
    assert "harness.check_data" in message  # what to run to find every such file
    if workers:  # the worker's traceback is kept for the log file alone (harness.observe.console's marker)
        (record,) = [r for r in caplog.records if r.name == "harness.loader"]
        assert getattr(record, "file_only", False) and "Traceback" in record.getMessage()


@pytest.mark.parametrize("workers", [0, 2])
def test_a_datasets_own_error_keeps_its_words_and_gains_the_check_command(workers):
    loader = make_shard_loader(Files(bad=(6,)), _ctx(), batch_size=2, workers=workers)
    with pytest.raises(DataError) as caught:
        list(loader)
    assert str(caught.value).startswith("/data/file_6.jpg is not what its annotation says (python -m "
                                        "harness.check_data model=<model> dataset=<dataset> lists every such problem)")


def test_a_worker_that_dies_is_one_line_that_says_how_to_find_the_file():
    loader = make_loader(Files(bad=(), die=True), _ctx(), batch_size=2, workers=1, shuffle=False)
    with pytest.raises(DataError) as caught:
        list(loader.epoch(1))
    message = str(caught.value)
    assert message.startswith("DataLoader worker") and "\n" not in message
    assert "model.workers=0" in message and "harness.check_data" in message


def test_only_a_workers_exception_is_unwrapped():
    assert worker_message(ValueError("plain")) is None
    wrapped = ValueError("Caught ValueError in DataLoader worker process 3.\nOriginal Traceback (most recent call "
                         "last):\n  File \"x.py\", line 1, in f\nValueError: bad value in /data/x\n")
    assert worker_message(wrapped) == "bad value in /data/x"


def test_what_the_workers_flag_is_counted_once_per_sample_in_the_training_process():
    flags = SampleFlags(8, ("odd",))
    loader = make_loader(Files(bad=(), flags=flags), _ctx(), batch_size=2, workers=2, shuffle=True)
    for epoch in (1, 2):  # every sample read twice: still counted once
        assert len(list(loader.epoch(epoch))) == 4
    assert flags.counts() == {"odd": 4}
