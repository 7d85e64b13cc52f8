"""Mask R-CNN's training step on a CPU with torchvision's heads and with the batched ones, interleaved
(on a shared machine the load moves; alternating the two keeps it the same for both): median ms per step.

    OMP_NUM_THREADS=1 python scripts/lab/maskrcnn_cpu_step.py +debug=maskrcnn
    OMP_NUM_THREADS=1 python scripts/lab/maskrcnn_cpu_step.py --steps 20                 # the embedded preset
    python scripts/lab/maskrcnn_cpu_step.py --count-ops dataset=maskrcnn_coco2017 model.batch_size=8 \
        model.min_size=192 model.max_size=288 model.synthetic.height=192 model.synthetic.width=288

--count-ops counts, in one training forward of each, the operators that read the device from the host on
a GPU (nonzero, item, equal) and the tensors made from host data (a blocking copy when made on a GPU;
some stay on the host), with the batched heads' NMS on its GPU path.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from harness.config import compose  # noqa: E402
from reference_models.maskrcnn.model import build_model  # noqa: E402
from reference_models.maskrcnn.rpn import BatchedRPN  # noqa: E402


def batch(hp, n_classes: int, gen: torch.Generator):
    h, w, objects = hp.synthetic.height, hp.synthetic.width, hp.synthetic.objects
    images, targets = [], []
    for _ in range(hp.batch_size):
        xy = torch.rand(objects, 2, generator=gen) * torch.tensor([w * 0.7, h * 0.7])
        boxes = torch.cat([xy, xy + 16 + torch.rand(objects, 2, generator=gen) * torch.tensor([w * 0.3, h * 0.3])], 1)
        masks = torch.zeros(objects, h, w, dtype=torch.uint8)
        for m, (x1, y1, x2, y2) in zip(masks, boxes.int().tolist()):
            m[y1:y2, x1:x2] = 1
        images.append(torch.rand(3, h, w, generator=gen))
        targets.append({"boxes": boxes, "masks": masks, "labels": torch.randint(1, n_classes, (objects,), generator=gen)})
    return images, targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="e.g. +debug=maskrcnn")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--count-ops", action="store_true", help="count host-reading operators instead of timing")
    args = parser.parse_args()
    cfg = compose(["model=maskrcnn", "seed=1", "device=cpu", "model.synthetic.height=128",
                   "model.synthetic.width=160", *args.overrides])
    OmegaConf.resolve(cfg)
    runs: dict[str, tuple[torch.nn.Module, torch.optim.Optimizer, list[float]]] = {}
    for heads in ("torchvision", "batched"):
        hp = OmegaConf.merge(cfg.model, {"heads": heads})
        torch.manual_seed(0)
        model = build_model(hp, 4).train()
        runs[heads] = (model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), [])
    images, targets = batch(cfg.model, 4, torch.Generator().manual_seed(1))
    if args.count_ops:
        for heads, (model, _, _) in runs.items():
            rpn = model.rpn
            if isinstance(rpn, BatchedRPN):
                rpn.matrix_nms = True  # the GPU's NMS path
            with torch.profiler.profile() as prof:
                model(images, targets)
            events = [e.name for e in prof.events()]
            top = [e for e in prof.events() if e.name.startswith("aten::")
                   and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))]
            counts = {k: events.count(f"aten::{k}") for k in ("nonzero", "_local_scalar_dense", "equal", "lift_fresh")}
            print(f"{heads}: {len(top)} operators in a training forward; {counts}")
        return 0
    for i in range(args.warmup + args.steps):
        for model, optimizer, times in runs.values():
            t0 = time.perf_counter()
            loss = sum(model(images, targets).values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if i >= args.warmup:
                times.append(time.perf_counter() - t0)
    medians = {k: statistics.median(v[2]) * 1e3 for k, v in runs.items()}
    print(f"{' '.join(args.overrides) or 'embedded preset'}, batch {cfg.model.batch_size}, "
          f"{cfg.model.synthetic.height}x{cfg.model.synthetic.width}, {torch.get_num_threads()} thread(s), "
          f"median of {args.steps} steps: torchvision heads {medians['torchvision']:.1f} ms, batched "
          f"{medians['batched']:.1f} ms ({medians['torchvision'] / medians['batched']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
