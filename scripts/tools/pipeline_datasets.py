"""The datasets of the pipeline benchmark, written on every core: ImageNet-size JPEGs (500x375, the
ImageNet folder layout) and COCO-size images (about 640x480, several objects each, the COCO 2017
layout), each by its model's own generator.

    python scripts/tools/pipeline_datasets.py imagenet /tmp/inet500 --images 10000
    python scripts/tools/pipeline_datasets.py imagenet /tmp/inetmix --images 10000 --jitter 0.6   # sides 0.4-1.6x
    python scripts/tools/pipeline_datasets.py coco /tmp/coco640 --images 3000 --workers 16

reference_models/detection/generate.py writes a split on one process (the embedded sets are small);
here each process draws its own images (the generator's `_image` and `_annotate`, its own seed per
chunk) and the annotation files are assembled at the end, so 3,000 COCO-size images take seconds on
16 cores. The result is a real COCO 2017 folder for dataset=ssd_coco2017 or maskrcnn_coco2017 with
dataset.path set to it (no generator stamp: the benchmark names the folder itself).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from harness.usage import module_doc  # noqa: E402
from reference_models.detection import generate as coco_generate  # noqa: E402


def coco_spec(args: argparse.Namespace) -> coco_generate.GeneratorSpec:
    """COCO-size images: sides 480-640, 3-8 objects of 40-260 pixels (COCO's average image is 640x480
    with about 7 objects)."""
    return coco_generate.GeneratorSpec(train_images=args.images, val_images=args.val_images, min_side=480,
                                       max_side=640, min_objects=3, max_objects=8, min_size=40, max_size=260,
                                       seed=args.seed)


def _coco_chunk(job: tuple[coco_generate.GeneratorSpec, str, str, int, int, int]) -> tuple[list[dict], list[dict]]:
    spec, folder, split, first, count, chunk = job
    rng = np.random.default_rng([spec.seed, chunk])
    images, annotations = [], []
    for image_id in range(first, first + count):
        img, objs = coco_generate._image(rng, spec)
        name = f"{image_id:012d}.jpg"
        img.save(Path(folder) / f"{split}2017" / name, quality=spec.jpeg_quality)
        images.append({"license": 1, "file_name": name, "height": img.height, "width": img.width, "id": image_id,
                       "date_captured": "2017-01-01 00:00:00"})
        annotations += coco_generate._annotate(objs, img.height, img.width, image_id)
    return images, annotations


def write_coco(folder: Path, spec: coco_generate.GeneratorSpec, workers: int) -> None:
    (folder / "annotations").mkdir(parents=True, exist_ok=True)
    first = 1
    for split, count in (("train", spec.train_images), ("val", spec.val_images)):
        (folder / f"{split}2017").mkdir(exist_ok=True)
        per = max(1, -(-count // (workers * 4)))
        jobs = [(spec, str(folder), split, first + s, min(per, count - s), first + s)  # seeded by the first id
                for s in range(0, count, per)]
        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(_coco_chunk, jobs))
        doc = {"info": {"description": "Generated shapes in the COCO 2017 layout", "version": "1.0", "year": 2017,
                        "contributor": coco_generate.GENERATOR, "date_created": "2017-01-01"},
               "licenses": [{"id": 1, "name": "CC0", "url": ""}],
               "images": [i for p in parts for i in p[0]], "annotations": [a for p in parts for a in p[1]],
               "categories": coco_generate.categories()}
        (folder / "annotations" / f"instances_{split}2017.json").write_text(json.dumps(doc))
        first += count


def main() -> None:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("kind", choices=("imagenet", "coco"))
    parser.add_argument("folder")
    parser.add_argument("--images", type=int, default=10000, help="training images")
    parser.add_argument("--val-images", type=int, default=32)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jitter", type=float, default=0.0,
                        help="imagenet: each side drawn from [1 - J, 1 + J] x 500 or 375 (0 to below 1; "
                             "0: all 500x375), for crops of unlike sizes in one batch")
    args = parser.parse_args()
    if not 0 <= args.jitter < 1:
        parser.error(f"--jitter {args.jitter}: give 0 (every image 500x375) up to below 1")
    folder = Path(args.folder)
    if (folder / "DONE").exists():
        print(f"{folder} already written")
        return
    if args.kind == "imagenet":
        from reference_models.resnet.generate import ImageSpec, write

        classes = 20
        spec = ImageSpec(classes=classes, train_per_class=max(1, args.images // classes),
                         val_per_class=max(1, args.val_images // classes), width=500, height=375,
                         size_jitter=args.jitter, seed=args.seed)
        write(spec, folder, workers=args.workers)
    else:
        write_coco(folder, replace(coco_spec(args)), args.workers)
    (folder / "DONE").write_text("")
    print(f"wrote {folder}")


if __name__ == "__main__":
    main()
