"""SSD's target encoding for a whole batch at once (what a GPU run does on the device) against the
per-image encoder the workers run (what the golden losses and the embedded target were made with):
equal to the bit on one device."""
from __future__ import annotations

import pytest
import torch

from reference_models.ssd.boxes import Encoder, default_boxes, pad_truth


def _truth(gen: torch.Generator, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    corners = torch.rand(k, 2, generator=gen) * 0.8
    sides = 0.01 + torch.rand(k, 2, generator=gen) * 0.6
    return torch.cat([corners, (corners + sides).clamp(max=1.0)], dim=1), torch.randint(1, 81, (k,), generator=gen)


def _check(encoder: Encoder, truths: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    offsets, labels = encoder.encode_batch(*pad_truth(truths))
    for i, (bx, lb) in enumerate(truths):
        want_offsets, want_labels = encoder.encode(bx, lb)
        assert torch.equal(labels[i], want_labels), f"image {i}"
        assert torch.equal(offsets[i], want_offsets), f"image {i}"


def test_a_batch_encodes_as_each_image_does():
    encoder = Encoder(default_boxes(300, [38, 19, 10, 5, 3, 1]))
    gen = torch.Generator().manual_seed(0)
    # images of 0 to 20 boxes, tiny to large: many default boxes claimed by two ground truths
    truths = [_truth(gen, k) for k in (3, 0, 1, 20, 7, 0, 12, 5, 2, 9)]
    _check(encoder, truths)
    assert (encoder.encode_batch(*pad_truth(truths))[1] > 0).sum() > 100


def test_ties_go_as_the_per_image_matcher_sends_them():
    """Two identical boxes (every IoU tied: the first takes the default boxes above the threshold,
    the last its best one), a box inside another, and a degenerate box of no width."""
    encoder = Encoder(default_boxes(300, [38, 19, 10, 5, 3, 1]))
    box = torch.tensor([[0.2, 0.2, 0.5, 0.6]])
    twins = (torch.cat([box, box, torch.tensor([[0.25, 0.25, 0.4, 0.5]])]), torch.tensor([4, 9, 2]))
    thin = (torch.tensor([[0.3, 0.1, 0.3, 0.9], [0.0, 0.0, 1.0, 1.0]]), torch.tensor([5, 6]))
    _check(encoder, [twins, thin, (torch.zeros(0, 4), torch.zeros(0, dtype=torch.int64))])


def test_large_batches_are_encoded_in_chunks_with_the_same_result():
    encoder = Encoder(default_boxes(300, [38, 19, 10, 5, 3, 1]))
    gen = torch.Generator().manual_seed(1)
    truths = [_truth(gen, k) for k in (4, 6, 1, 3, 5)]
    whole = encoder.encode_batch(*pad_truth(truths))
    encoder.chunk_values = 2 * 6 * 8732  # two images of six boxes per chunk: three chunks
    chunked = encoder.encode_batch(*pad_truth(truths))
    assert torch.equal(chunked[0], whole[0]) and torch.equal(chunked[1], whole[1])


def test_an_empty_batch_and_a_batch_without_boxes_are_background():
    encoder = Encoder(default_boxes(300, [38, 19, 10, 5, 3, 1]))
    offsets, labels = encoder.encode_batch(torch.zeros(2, 0, 4), torch.zeros(2, 0, dtype=torch.int64))
    assert offsets.shape == (2, 8732, 4) and not offsets.any() and not labels.any()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_batch_encodes_as_the_workers_cpu_encoder():
    """The same matching on a GPU (labels equal; offsets to float32's rounding of the log there)."""
    encoder = Encoder(default_boxes(300, [38, 19, 10, 5, 3, 1]))
    gen = torch.Generator().manual_seed(2)
    truths = [_truth(gen, k) for k in (3, 0, 1, 20, 7, 12, 5, 2, 9, 4)]
    boxes, labels = pad_truth(truths)
    offsets, out_labels = encoder.encode_batch(boxes.cuda(), labels.cuda())
    for i, (bx, lb) in enumerate(truths):
        want_offsets, want_labels = encoder.encode(bx, lb)
        assert torch.equal(out_labels[i].cpu(), want_labels)
        torch.testing.assert_close(offsets[i].cpu(), want_offsets, rtol=1e-5, atol=1e-5)
