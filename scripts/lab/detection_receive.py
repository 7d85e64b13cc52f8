"""What a detection batch costs the training process to receive, and its workers to send, on the CPU:
SSD's and Mask R-CNN's CUDA-path collates against the ways they collated before (a batch's tensors
made in ordinary memory, Mask R-CNN's as lists of float images), on generated COCO-size images.

    python scripts/lab/pipeline_datasets.py coco /tmp/coco640 --images 96 --workers 2
    python scripts/lab/detection_receive.py /tmp/coco640 --batches 12

For each way: the loader's rate alone with one worker (what a worker spends per batch, the collate
and the send included), and, with the workers far ahead, the training process's main-thread CPU time
per batch to receive it (on a GPU the loader's pin thread does this beside the step, and then pins
the bytes), the tensors and the bytes per batch. No GPU needed; a GPU run adds the pinning and copies.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from harness.run.feed import tensors  # noqa: E402
from reference_models.detection import coco  # noqa: E402
from reference_models.maskrcnn.benchmark import TrainTransform as MaskRCNNTransform, as_lists  # noqa: E402
from reference_models.maskrcnn.data import collate_packed  # noqa: E402
from reference_models.ssd.boxes import pad_truth  # noqa: E402
from reference_models.ssd.transforms import TrainTransform as SSDTransform, collate_truth  # noqa: E402


def ssd_in_ordinary_memory(items: list) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """collate_truth as it was: the images stacked in ordinary memory (copied to shared memory to be sent)."""
    boxes, labels = pad_truth([(b, lb) for _, b, lb in items])
    return torch.stack([im for im, _, _ in items]), boxes, labels


def parts(batch: Any) -> list[torch.Tensor]:
    if hasattr(batch, "pixels"):
        return [batch.pixels, batch.masks, batch.boxes, batch.labels]
    return list(tensors(batch))


def measure(split: coco.CocoSplit, collate: Callable, batch_size: int, batches: int) -> dict[str, float]:
    loader = DataLoader(split, batch_size=batch_size, shuffle=False, num_workers=1, collate_fn=collate)
    it = iter(loader)
    next(it)
    start, n = time.perf_counter(), 0
    for _ in range(min(batches, len(loader) - 1)):
        next(it)
        n += 1
    rate = n * batch_size / (time.perf_counter() - start)
    loader = DataLoader(split, batch_size=batch_size, shuffle=False, num_workers=2, prefetch_factor=4, collate_fn=collate)
    it = iter(loader)
    cpu, sizes, counts = [], [], []
    for _ in range(min(batches, len(loader))):
        time.sleep(0.6)  # the workers ahead: what remains is this process's own work
        c0 = time.thread_time()
        batch = next(it)
        cpu.append(time.thread_time() - c0)
        ts = parts(batch)
        sizes.append(sum(t.nbytes for t in ts))
        counts.append(len(ts))
    return {"worker_images_per_s": rate, "receive_ms": 1e3 * statistics.median(cpu),
            "tensors": statistics.mean(counts), "mb": statistics.mean(sizes) / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", help="a COCO 2017 folder (scripts/lab/pipeline_datasets.py coco)")
    parser.add_argument("--batches", type=int, default=12)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ssd = [("ssd: images float32 (the hand-over before uint8)", SSDTransform(None, 300, 1, (0.125, 0.5, 0.5, 0.05)),
            ssd_in_ordinary_memory, 16),
           ("ssd: uint8, collated in ordinary memory (before)", SSDTransform(None, 300, 1, (0.125, 0.5, 0.5, 0.05),
                                                                             device_finish=True), ssd_in_ordinary_memory, 16),
           ("ssd: uint8, collated into shared memory (now)", SSDTransform(None, 300, 1, (0.125, 0.5, 0.5, 0.05),
                                                                          device_finish=True), collate_truth, 16)]
    maskrcnn = [("maskrcnn: lists, float images (before)", MaskRCNNTransform(0.5), as_lists, 8),
                ("maskrcnn: PackedBatch, uint8 images (now)", MaskRCNNTransform(0.5, device_finish=True),
                 collate_packed, 8)]
    for label, transform, collate, batch in ssd + maskrcnn:
        split = coco.CocoSplit(args.path, "train", transform, keep_empty=False, include_crowd=label.startswith("ssd"),
                               with_polygons=label.startswith("maskrcnn"))
        r = measure(split, collate, batch, args.batches)
        print(f"{label}: batch {batch}, one worker {r['worker_images_per_s']:.0f} images/s; received in "
              f"{r['receive_ms']:.2f} ms of the main thread's CPU, {r['tensors']:.0f} tensors, {r['mb']:.1f} MB",
              flush=True)


if __name__ == "__main__":
    main()
