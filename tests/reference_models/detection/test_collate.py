"""The detection collates write a batch straight into shared memory inside a loader worker, and the
batch the training process receives is the one collated in place."""
from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from reference_models.detection.collate import aligned, aligned_offsets, joined, stacked
from reference_models.ssd.transforms import collate_truth


class _Samples(torch.utils.data.Dataset):
    """SSD's device_finish samples: uint8 images and 0-3 boxes each."""

    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int):
        gen = torch.Generator().manual_seed(i)
        n = i % 4
        return (torch.randint(0, 256, (3, 8, 8), dtype=torch.uint8, generator=gen),
                torch.rand(n, 4, generator=gen), torch.arange(1, n + 1))


def _both(batch):
    return stacked([b[0] for b in batch]), joined([b[1] for b in batch], torch.float32, (4,)), collate_truth(batch)


def test_in_a_worker_the_batch_is_in_shared_memory_and_equal_to_one_collated_in_place():
    samples = _Samples()
    received = list(DataLoader(samples, batch_size=3, num_workers=1, collate_fn=_both))
    for k, (images, boxes, truth) in enumerate(received):
        here = _both([samples[i] for i in range(3 * k, 3 * k + 3)])
        assert images.is_shared() and truth[0].is_shared()
        assert torch.equal(images, here[0]) and torch.equal(boxes, here[1]) and boxes.shape[1:] == (4,)
        assert all(torch.equal(a, b) for a, b in zip(truth, here[2]))
        assert torch.equal(truth[0], torch.stack([samples[i][0] for i in range(3 * k, 3 * k + 3)]))
    assert not _both([samples[0]])[0].is_shared()  # outside a worker: ordinary memory
    assert joined([], torch.int64).shape == (0,)


def test_aligned_parts_start_at_multiples_of_the_alignment_and_hold_the_parts():
    parts = [torch.arange(n, dtype=torch.uint8) for n in (5, 64, 0, 130)]
    starts, total = aligned_offsets([p.numel() for p in parts])
    assert starts == [0, 64, 128, 128] and total == 320
    out = aligned(parts, torch.uint8)
    assert out.shape == (320,)
    assert all(torch.equal(out[a: a + p.numel()], p) for a, p in zip(starts, parts))
