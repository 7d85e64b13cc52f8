"""Plain torchvision detection training on synthetic images: the baseline the harness's SSD and Mask R-CNN
are compared with (issue 16's Performance section measured these on one H200: 11.3 img/s and 447 img/s).

    python scripts/tools/detection_baseline.py maskrcnn --batch 8 --height 800 --width 1216 --objects 5 --amp
    python scripts/tools/detection_baseline.py ssd300 --batch 128 --amp
    torchrun --standalone --nproc_per_node=2 scripts/tools/detection_baseline.py maskrcnn --batch 8 --amp
    python scripts/tools/detection_baseline.py maskrcnn --device cpu --batch 2 --height 64 --width 96 --steps 2 --warmup 1

The models are torchvision's own builders with random weights (maskrcnn_resnet50_fpn, 91 classes;
ssd300_vgg16, 91 classes), trained with SGD (lr 0.01, momentum 0.9) and, with --amp, fp16 autocast and a
gradient scaler, exactly as torchvision's reference recipe steps them; images and targets (random
boxes, rectangular masks) are made once on the device. Under torchrun every rank wraps the model in
DistributedDataParallel and the figure is summed over ranks. Prints one JSON line: model, world,
batch per rank, shape, AMP, median images/s over --repeats windows of --steps steps after --warmup.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from timing import add_window_arguments, timed_windows

# the checkout, for harness/usage.py alone (standard library: the usage under python -OO); what is timed
# uses nothing of the harness
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.usage import module_doc  # noqa: E402


def synthetic(batch: int, height: int, width: int, objects: int, classes: int, device: torch.device):
    gen = torch.Generator().manual_seed(0)
    images, targets = [], []
    for _ in range(batch):
        xy = torch.rand(objects, 2, generator=gen) * torch.tensor([width * 0.7, height * 0.7])
        wh = 8 + torch.rand(objects, 2, generator=gen) * torch.tensor([width * 0.3, height * 0.3])
        boxes = torch.cat([xy, xy + wh], dim=1)
        masks = torch.zeros(objects, height, width, dtype=torch.uint8)
        for m, (x1, y1, x2, y2) in zip(masks, boxes.int().tolist()):
            m[y1:y2, x1:x2] = 1
        images.append(torch.rand(3, height, width, generator=gen).to(device))
        targets.append({"boxes": boxes.to(device), "labels": torch.randint(1, classes, (objects,), generator=gen).to(device),
                        "masks": masks.to(device)})
    return images, targets


def main() -> None:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("model", choices=["maskrcnn", "ssd300"])
    parser.add_argument("--batch", type=int, default=8, help="images per rank")
    parser.add_argument("--height", type=int, default=None, help="default: 800 (maskrcnn), 300 (ssd300)")
    parser.add_argument("--width", type=int, default=None, help="default: 1216 (maskrcnn), 300 (ssd300)")
    parser.add_argument("--objects", type=int, default=5)
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    add_window_arguments(parser, warmup=10, steps=30, repeats=3)
    args = parser.parse_args()
    import torchvision  # once the arguments are read: --help without its seconds of import

    world, rank = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))
    device = torch.device(args.device)
    if device.type == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if args.model == "maskrcnn":
        h, w = args.height or 800, args.width or 1216
        # the model's own resize keeps these shapes (800x1216 is what its defaults, 800/1333, make of COCO)
        model = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None,
                                                                   min_size=min(h, w), max_size=max(1333, h, w))
    else:
        model = torchvision.models.detection.ssd300_vgg16(weights=None, weights_backbone=None)
        h, w = args.height or 300, args.width or 300
    model.to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    scaler = torch.amp.GradScaler(device.type, enabled=args.amp)
    images, targets = synthetic(args.batch, h, w, args.objects, 91, device)

    def step() -> int:
        with torch.autocast(device.type, dtype=torch.float16, enabled=args.amp):
            losses = model(images, targets)
            loss = sum(losses.values())
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return args.batch * world

    rates = timed_windows(step, device, warmup=args.warmup, steps=args.steps, repeats=args.repeats)
    if rank == 0:
        print(json.dumps({"model": f"torchvision {args.model}", "world": world, "batch_per_rank": args.batch,
                          "shape": [h, w], "amp": args.amp, "images_per_s": round(statistics.median(rates), 2),
                          "windows": [round(x, 2) for x in rates], "torch": torch.__version__,
                          "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"}))
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
