"""Every rank gets a contiguous, balanced part; together the parts are the whole, once."""
from __future__ import annotations

import torch

from harness.interface.sharding import bounds, shard, sizes


def test_parts_cover_everything_once_and_match_tensor_split():
    x = torch.arange(10)
    parts = [shard(x, r, 3) for r in range(3)]
    assert torch.equal(torch.cat(parts), x)
    assert [p.tolist() for p in parts] == [p.tolist() for p in torch.tensor_split(x, 3)]
    assert sizes(10, 3) == [4, 3, 3] and bounds(10, 2, 3) == (7, 10)


def test_one_rank_gets_the_object_itself():
    items = [1, 2, 3]
    assert shard(items, 0, 1) is items
