"""The tensors a batch holds, for code on both sides of the contract: the harness's feed records
each copied tensor on the compute stream, and a model's own device pipeline (ResNet's decode
threads) does the same with the batches it makes.

    python -c "import torch; from harness.interface.batches import tensors; print(len(list(tensors([torch.ones(1), {'a': torch.ones(2)}]))))"
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import torch


def tensors(batch: Any) -> Iterator[torch.Tensor]:
    """Every tensor inside a batch (tuples, lists, dicts and dataclass fields, recursively)."""
    if isinstance(batch, torch.Tensor):
        yield batch
    elif isinstance(batch, (list, tuple)):
        for x in batch:
            yield from tensors(x)
    elif isinstance(batch, dict):
        for x in batch.values():
            yield from tensors(x)
    elif dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        for f in dataclasses.fields(batch):
            yield from tensors(getattr(batch, f.name))
