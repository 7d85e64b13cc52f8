"""Plain PyTorch ResNet-50 training throughput, the comparison point for the harness's mode=throughput.

    python scripts/tools/resnet_baseline.py                                   # CUDA, batch 256, amp, channels_last
    python scripts/tools/resnet_baseline.py --device cpu --batch 2 --image-size 64 --warmup 1 --steps 2 --repeats 2

What someone would write without the harness: torchvision.models.resnet50, the model and a fixed
random batch in channels_last, fp16 autocast with a GradScaler, torch.optim.SGD with momentum and
weight decay (its default multi-tensor path, not fused), cross-entropy with label smoothing; no
compilation, no CUDA graphs. It prints the images/s of each window of --steps steps after --warmup
steps, their median, and one JSON line (--json: to a file too) to set beside the harness's figure.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

from timing import add_window_arguments, timed_windows

# the checkout, for harness/usage.py alone (standard library: the usage under python -OO); what is timed
# uses nothing of the harness
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.usage import module_doc  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--precision", choices=("amp", "bf16", "fp32"), default="amp")
    parser.add_argument("--no-channels-last", action="store_true")
    add_window_arguments(parser, warmup=20, steps=50, repeats=3)
    parser.add_argument("--json", default=None, help="also write the result line to this file")
    args = parser.parse_args()

    import torchvision  # once the arguments are read: --help without its seconds of import

    device = torch.device(args.device)
    cuda = device.type == "cuda"
    fmt = torch.contiguous_format if args.no_channels_last else torch.channels_last
    model = torchvision.models.resnet50().to(device, memory_format=fmt)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    dtype = {"amp": torch.float16, "bf16": torch.bfloat16, "fp32": None}[args.precision]
    scaler = torch.amp.GradScaler(device.type, enabled=args.precision == "amp")
    images = torch.randn(args.batch, 3, args.image_size, args.image_size, device=device).contiguous(memory_format=fmt)
    labels = torch.randint(0, 1000, (args.batch,), device=device)

    def step() -> int:
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = torch.nn.functional.cross_entropy(model(images).float(), labels, label_smoothing=0.1)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return args.batch

    rates = timed_windows(step, device, warmup=args.warmup, steps=args.steps, repeats=args.repeats)
    name = torch.cuda.get_device_name(device) if cuda else "CPU"
    result = {"script": "resnet_baseline", "device": name, "batch": args.batch, "precision": args.precision,
              "channels_last": not args.no_channels_last, "windows": rates, "median": statistics.median(rates),
              "torch": torch.__version__}
    for i, w in enumerate(rates, 1):
        print(f"window {i}: {w:,.0f} images/s")
    print(f"plain torchvision resnet50 on {name}: {result['median']:,.0f} images/s (median of {len(rates)} windows, "
          f"batch {args.batch}, {args.precision}, {'channels_last' if result['channels_last'] else 'NCHW'})")
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
