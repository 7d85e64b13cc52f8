"""The GPU decode backends side by side on one GPU: does each load, how fast does it decode and crop a
batch alone, how much does it slow a training step running beside it, and how close are its
pictures to the CPU path's (PIL)?

    python scripts/tools/pipeline_decoders.py /tmp/inet500/train --batch 256 --size 224 --json decoders.json

For each backend (nvImageCodec's hardware decoder alone, with its CPU decoder beside it at a few load
shares, its CUDA decoder; torchvision's nvJPEG), on --files JPEGs of the folder (cached in memory):
- alone: images/s of decode + reference_models.vision.resample.crop_resize (random MLPerf crops) on a
  side stream, --repeats batches after one warm-up batch, timed with a device sync; and what one
  batch puts on the GPU (torch.profiler: each kernel's and each copy's milliseconds, a copy engine's
  `Memcpy` apart from kernels on the SMs);
- beside a step: a plain ResNet-50 training step (torchvision's, channels_last, amp, the batch
  size given) timed over --steps steps alone and again while a thread keeps decoding and cropping
  batches on a side stream: the step's slowdown is what the backend takes from it (SMs, memory
  bandwidth, the GIL), and the decoder's rate meanwhile says whether it still keeps up;
- with --split, the step beside the decode alone and beside the crop and resize alone: which of the two
  the step loses its time to;
- pictures: mean and largest difference (uint8 levels) from PIL's decode-crop-resize of the same
  boxes, and the same for the decode alone (its pixels against PIL's), over --check images.
One JSON document (--json) and a table on stdout.
"""
from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from harness.usage import module_doc  # noqa: E402
from reference_models.resnet import data as imagenet  # noqa: E402
from reference_models.vision import decoders  # noqa: E402
from reference_models.vision.resample import crop_resize  # noqa: E402

VARIANTS: dict[str, Callable[[torch.device, int], Any]] = {
    "nvimgcodec hardware": lambda d, t: decoders.NvImageCodecDecoder(d, cpu_threads=t, hardware_only=True),
    "nvimgcodec hardware+cpu fallback": lambda d, t: decoders.NvImageCodecDecoder(d, cpu_threads=t),
    "nvimgcodec 80% hardware, 20% cpu": lambda d, t: decoders.NvImageCodecDecoder(
        d, cpu_threads=t, backends=[("HW_GPU_ONLY", 0.8), ("CPU_ONLY", 1.0)]),
    "nvimgcodec 60% hardware, 40% cpu": lambda d, t: decoders.NvImageCodecDecoder(
        d, cpu_threads=t, backends=[("HW_GPU_ONLY", 0.6), ("CPU_ONLY", 1.0)]),
    "nvimgcodec cuda (SMs)": lambda d, t: decoders.NvImageCodecDecoder(d, cpu_threads=t, backends=[("GPU_ONLY", 1.0)]),
    "torchvision nvjpeg (SMs)": lambda d, t: decoders.TorchvisionDecoder(d),
}


def crops_for(sizes: list[tuple[int, int]], size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    crops = imagenet.Crops(size, int(size * 256 / 224), train=True)
    boxes, flips = [], []
    for h, w in sizes:
        t, l, bh, bw, f = crops.box(Image.new("L", (w, h)))
        boxes.append((t, l, bh, bw))
        flips.append(f)
    return torch.tensor(boxes), torch.tensor(flips)


class Load:
    """A plain ResNet-50 training step (channels_last, amp) on a batch held on the GPU."""

    def __init__(self, device: torch.device, batch: int):
        import torchvision

        self.model = torchvision.models.resnet50().to(device, memory_format=torch.channels_last)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda")
        self.x = torch.randn(batch, 3, 224, 224, device=device).contiguous(memory_format=torch.channels_last)
        self.y = torch.randint(0, 1000, (batch,), device=device)
        self.device = device

    def steps(self, n: int) -> float:
        torch.cuda.synchronize(self.device)
        t0 = time.perf_counter()
        for _ in range(n):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(self.model(self.x), self.y)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
            self.opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize(self.device)
        return (time.perf_counter() - t0) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("folder", help="a folder of JPEGs (searched recursively)")
    parser.add_argument("--files", type=int, default=512)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--check", type=int, default=64)
    parser.add_argument("--threads", type=int, default=8, help="nvImageCodec's CPU threads")
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--split", action="store_true", help="also the step beside each variant's decode alone "
                        "and beside its crop and resize alone (of batches decoded once): which of the two the step "
                        "loses its time to")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        parser.error("the GPU decoders need a CUDA device, and this machine has none")
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    paths = sorted(p for p in Path(args.folder).rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))[: args.files]
    if len(paths) < args.batch:
        parser.error(f"{args.folder} holds {len(paths)} JPEG(s) where a batch needs {args.batch}: write some with "
                     "scripts/tools/pipeline_datasets.py imagenet FOLDER, or lower --batch")
    blobs = [np.fromfile(p, dtype=np.uint8) for p in paths]
    batches = [blobs[i: i + args.batch] for i in range(0, len(blobs) - args.batch + 1, args.batch)]
    pil = [decoders.pil_decode(b) for b in blobs[: args.check]]
    sizes = [(int(im.shape[1]), int(im.shape[2])) for im in pil]
    boxes, flips = crops_for(sizes, args.size, 0)
    theirs = torch.stack([_pil_crop(paths[i], tuple(boxes[i].tolist()), bool(flips[i]), args.size)
                          for i in range(len(pil))])
    load = Load(device, args.batch)
    load.steps(5)
    alone_step = load.steps(args.steps)
    results: dict[str, Any] = {"device": torch.cuda.get_device_name(device), "torch": torch.__version__,
                               "files": len(paths), "mean_file_bytes": float(np.mean([len(b) for b in blobs])),
                               "batch": args.batch, "step_alone_ms": alone_step * 1e3, "variants": {}}
    try:
        from nvidia import nvimgcodec
        results["nvimgcodec"] = nvimgcodec.__version__
    except ImportError as err:
        results["nvimgcodec"] = f"not importable: {err}"
    stream = torch.cuda.Stream(device)
    for name in args.variants:
        row: dict[str, Any] = {}
        results["variants"][name] = row
        try:
            dec = VARIANTS[name](device, args.threads)

            def work(batch: list[np.ndarray], slot: int, dec: Any = dec) -> torch.cuda.Event:
                with torch.cuda.stream(stream):
                    _crop(dec.decode(batch, slot), args.size, slot)
                    return stream.record_event()  # the side stream's own progress, not the step's

            work(batches[0], 0)
            torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            for k in range(args.repeats):
                work(batches[k % len(batches)], k % 3)
            torch.cuda.synchronize(device)
            row["alone_images_per_s"] = args.repeats * args.batch / (time.perf_counter() - t0)
            row["gpu_ms_per_batch"] = _gpu_events(lambda k: work(batches[k % len(batches)], k % 3), device)
            with torch.cuda.stream(stream):
                decoded = dec.decode(blobs[: args.check], 7)
            torch.cuda.synchronize(device)
            pixel_diff = [(d.cpu().float() - p.float()).abs() for d, p in zip(decoded, pil)]
            row["decode_vs_pil_mean"] = float(np.mean([d.mean().item() for d in pixel_diff]))
            row["decode_vs_pil_max"] = float(max(d.max().item() for d in pixel_diff))
            with torch.cuda.stream(stream):
                ours = crop_resize(decoded, boxes, flips, args.size)
            torch.cuda.synchronize(device)
            diff = (ours.cpu() - theirs).abs()
            row["crop_vs_pil_mean"], row["crop_vs_pil_max"] = diff.mean().item(), diff.max().item()
            row["crop_vs_pil_p999"] = diff.flatten().kthvalue(int(0.999 * diff.numel())).values.item()
            row["resample_gpu_vs_cpu_max"] = (crop_resize([d.cpu() for d in decoded], boxes, flips, args.size)
                                              - ours.cpu()).abs().max().item()
            row.update(_beside(load, work, batches, args.steps, alone_step, args.batch))
            if args.split:
                row["split"] = _split(dec, stream, load, batches, args, alone_step)
        except Exception as err:  # noqa: BLE001 - a backend that fails is a finding, the others still run
            row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        print(name, json.dumps(row), flush=True)
    _table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


def _crop(images: list[torch.Tensor], size: int, seed: int) -> torch.Tensor:
    """A batch's random MLPerf crops of decoded images, resized on their device (the decode path's second half)."""
    boxes, flips = crops_for([(int(im.shape[1]), int(im.shape[2])) for im in images], size, seed)
    return crop_resize(images, boxes, flips, size)


def _gpu_events(work: Callable[[int], torch.cuda.Event], device: torch.device, batches: int = 3) -> dict[str, float]:
    """Milliseconds a batch of each GPU activity (kernel or copy, by name, the 12 longest) over `batches`
    batches: whether a backend's work runs on the SMs, beside the step, or on a copy engine."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for k in range(batches):
            work(k)
        torch.cuda.synchronize(device)
    totals: dict[str, float] = {}
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        name = event.name if len(event.name) <= 60 else event.name[:57] + "..."
        totals[name] = totals.get(name, 0.0) + event.device_time_total / 1e3 / batches  # us -> ms a batch
    return dict(sorted(totals.items(), key=lambda kv: -kv[1])[:12])


def _split(dec: Any, stream: torch.cuda.Stream, load: Load, batches: list, args: argparse.Namespace,
           alone_step: float) -> dict[str, dict[str, float]]:
    """The step beside the decode alone (no crops) and beside the crop and resize alone (of three batches
    decoded once, in slots the decode-only pass never reuses), as _beside measures the whole."""
    def decode_only(batch: list[np.ndarray], slot: int) -> torch.cuda.Event:
        with torch.cuda.stream(stream):
            dec.decode(batch, slot)
            return stream.record_event()

    with torch.cuda.stream(stream):
        held = [dec.decode(batches[s % len(batches)], 10 + s) for s in range(3)]
    torch.cuda.synchronize(stream.device)

    def crop_only(batch: list[np.ndarray], slot: int) -> torch.cuda.Event:
        with torch.cuda.stream(stream):
            _crop(held[slot], args.size, slot)
            return stream.record_event()

    return {"decode only": _beside(load, decode_only, batches, args.steps, alone_step, args.batch),
            "crop only": _beside(load, crop_only, batches, args.steps, alone_step, args.batch)}


def _pil_crop(path: Path, box: tuple[int, int, int, int], flip: bool, size: int) -> torch.Tensor:
    with Image.open(path) as image:
        return imagenet.pil_crop(image, box, flip, size).float()


def _beside(load: Load, work: Callable[[list[np.ndarray], int], torch.cuda.Event], batches: list, steps: int,
            alone: float, batch: int) -> dict[str, float]:
    stop, done = threading.Event(), [0]
    failure: list[Optional[BaseException]] = [None]

    def decode_forever() -> None:
        try:
            k = 0
            while not stop.is_set():
                work(batches[k % len(batches)], k % 3).synchronize()
                done[0] += 1
                k += 1
        except BaseException as err:  # noqa: BLE001
            failure[0] = err

    thread = threading.Thread(target=decode_forever, daemon=True)
    thread.start()
    time.sleep(0.3)
    before, t0 = done[0], time.perf_counter()
    step = load.steps(steps)
    decoded = (done[0] - before) * batch / (time.perf_counter() - t0)
    stop.set()
    thread.join()
    if failure[0] is not None:
        raise failure[0]
    return {"step_beside_ms": step * 1e3, "step_slowdown": step / alone - 1, "decoded_beside_images_per_s": decoded,
            "step_images_per_s": batch / step}


def _table(results: dict[str, Any]) -> None:
    print(f"\n{results['device']}, torch {results['torch']}, nvImageCodec {results['nvimgcodec']}; "
          f"{results['files']} files of {results['mean_file_bytes'] / 1e3:.0f} kB; ResNet-50 step alone "
          f"{results['step_alone_ms']:.1f} ms at batch {results['batch']}")
    print("| backend | alone img/s | step slowdown beside | decoded beside img/s | vs PIL: decode mean/max | crop mean/p99.9/max |")
    print("|---|---|---|---|---|---|")
    for name, r in results["variants"].items():
        if "error" in r:
            print(f"| {name} | {r['error']} | | | | |")
            continue
        print(f"| {name} | {r['alone_images_per_s']:,.0f} | {r.get('step_slowdown', float('nan')):+.1%} | "
              f"{r.get('decoded_beside_images_per_s', float('nan')):,.0f} | {r['decode_vs_pil_mean']:.2f} / "
              f"{r['decode_vs_pil_max']:.0f} | {r['crop_vs_pil_mean']:.2f} / {r['crop_vs_pil_p999']:.0f} / "
              f"{r['crop_vs_pil_max']:.0f} |")
    for name, r in results["variants"].items():  # --split: the step beside each half of the work
        for part, beside in r.get("split", {}).items():
            print(f"{name}, {part}: step slowdown beside {beside['step_slowdown']:+.1%}, "
                  f"{beside['decoded_beside_images_per_s']:,.0f} images/s beside")
    for name, r in results["variants"].items():  # what each puts on the GPU, a batch alone
        events = ", ".join(f"{k} {v:.2f}" for k, v in r.get("gpu_ms_per_batch", {}).items())
        print(f"{name}: GPU ms a batch: {events}")


if __name__ == "__main__":
    main()
