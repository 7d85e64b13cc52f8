"""Batches reach the device as the contract says: tensors and their containers move, a batch type
with its own `to` moves itself (GNMT keeps its lengths on the host), anything else stays; a cut-short
epoch draws no batch beyond its steps."""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import pytest
import torch

from harness.run.feed import Feed, tensors, to_device

Pair = namedtuple("Pair", "x y")


@dataclass
class Lengths:
    tokens: torch.Tensor
    lengths: torch.Tensor

    def to(self, device):
        return Lengths(self.tokens.to(device), self.lengths)  # the lengths stay on the host


def test_containers_move_recursively_and_keep_their_types():
    meta = torch.device("meta")
    batch = {"pair": Pair(torch.ones(2), [torch.zeros(1), 3]), "name": "x"}
    moved = to_device(batch, meta)
    assert isinstance(moved["pair"], Pair) and moved["pair"].x.device == meta
    assert moved["pair"].y[0].device == meta and moved["pair"].y[1] == 3 and moved["name"] == "x"
    own = to_device(Lengths(torch.ones(3), torch.tensor([3])), meta)
    assert own.tokens.device == meta and own.lengths.device.type == "cpu"
    assert len(list(tensors(own))) == 2 and len(list(tensors(batch))) == 2


def test_on_a_cpu_batches_pass_as_they_are_and_at_most_the_limit_is_drawn():
    drawn = []

    def source():
        for i in range(10):
            drawn.append(i)
            yield torch.tensor([i])

    fed = list(Feed(torch.device("cpu")).batches(source(), limit=3))
    assert [int(b) for b, _ in fed] == [0, 1, 2] and all(wait is None for _, wait in fed)
    assert drawn == [0, 1, 2]  # the fourth batch was never made


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the copy stream and its CUDA events need a GPU")
def test_on_cuda_the_next_batch_is_copied_on_a_side_stream_and_the_wait_for_it_is_timed():
    from harness.observe.datawait import waited

    cuda = torch.device("cuda")
    host = [torch.full((1024, 1024), float(i)).pin_memory() for i in range(4)]
    fed = list(Feed(cuda).batches(iter(host)))
    assert [float(b[0, 0]) for b, _ in fed] == [0.0, 1.0, 2.0, 3.0]  # each batch whole, in order, on the GPU
    assert all(b.device.type == "cuda" for b, _ in fed)
    assert 0.0 <= waited([(0.0, wait) for _, wait in fed]) < 5.0  # events read at the end: no sync before
