"""The embedded COCO-format dataset: real JPEGs of drawn objects, annotated as COCO 2017 annotates.

It writes exactly the layout of COCO 2017 (annotations/instances_{train,val}2017.json and
{train,val}2017/<12-digit id>.jpg), so the loader that reads real COCO reads it unchanged; given
another `files.Layout` (RetinaNet's openimages-mlperf), the same files in that layout. Each image
has a textured, noisy background with clutter and several objects of six categories (circle, square,
triangle, star, cross, diamond) of varied sizes, each filled with its own texture (solid with noise,
stripes, checks or a gradient) in shades of its category's hue, and partly hidden by the objects
drawn after it. The annotations are
COCO's: polygon segmentations of what is visible (one or more polygons per object), the box and area
of that visible region as pycocotools computes them, iscrowd 0, and a categories list with COCO's
fields and gaps in its ids. Written once per parameter set through harness.interface.generated
(stamp, checksums, lock).

    python -m reference_models.detection.generate outputs/datasets/coco_shapes --train-images 200
"""
from __future__ import annotations

import json
import math
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw
from pycocotools import mask as mask_utils

from harness.interface.option_help import module_doc
from harness.interface import generated, generator_cli
from reference_models.detection import shapes
from reference_models.detection.files import COCO2017, Layout

GENERATOR = "reference_models.detection.generate"
VERSION = 2  # 2: each category's objects in shades of its own hue
# COCO's category ids have gaps (1..90 for 80 classes); these do too, so the label map is exercised.
CATEGORY_IDS = (1, 2, 3, 5, 7, 9)


@dataclass(frozen=True)
class GeneratorSpec:
    train_images: int = 1200
    val_images: int = 200
    min_side: int = 112  # image width and height are drawn from [min_side, max_side]
    max_side: int = 144
    min_objects: int = 2
    max_objects: int = 4
    min_size: int = 20  # object extent in pixels
    max_size: int = 64
    min_visible: float = 0.6  # an object keeps at least this share of its area unoccluded
    jpeg_quality: int = 90
    seed: int = 0


def categories() -> list[dict]:
    return [{"supercategory": "shape", "id": cid, "name": name} for cid, name in zip(CATEGORY_IDS, shapes.KINDS)]


def _color(rng: np.random.Generator, saturated: bool, hue: float | None = None) -> np.ndarray:
    """An RGB colour: saturated and bright for objects (around `hue`, in sixths of the circle, when
    given), muted for backgrounds."""
    hue = rng.uniform(0, 6) if hue is None else (hue + rng.uniform(-0.2, 0.2)) % 6
    sat, val = (rng.uniform(0.5, 1.0), rng.uniform(0.55, 1.0)) if saturated else (rng.uniform(0, 0.3), rng.uniform(0.2, 0.8))
    c = val * sat
    x = c * (1 - abs(hue % 2 - 1))
    rgb = [(c, x, 0), (x, c, 0), (0, c, x), (0, x, c), (x, 0, c), (c, 0, x)][int(hue) % 6]
    return (np.array(rgb) + (val - c)) * 255


def _texture(rng: np.random.Generator, h: int, w: int, hue: float) -> np.ndarray:
    """A full-canvas texture for one object: solid, stripes, checks or a gradient, with noise, in two
    shades of its category's hue (colour helps, as it does in real photographs; shape decides)."""
    a, b = _color(rng, True, hue), _color(rng, True, hue)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    style = rng.integers(4)
    if style == 0:
        t = np.zeros((h, w), np.float32)
    elif style == 1:
        angle, period = rng.uniform(0, math.pi), rng.uniform(3, 8)
        t = ((xx * math.cos(angle) + yy * math.sin(angle)) // period % 2).astype(np.float32)
    elif style == 2:
        period = rng.uniform(3, 8)
        t = ((xx // period + yy // period) % 2).astype(np.float32)
    else:
        angle = rng.uniform(0, 2 * math.pi)
        ramp = xx * math.cos(angle) + yy * math.sin(angle)
        t = (ramp - ramp.min()) / max(float(np.ptp(ramp)), 1.0)
    tex = a * (1 - t[..., None]) + b * t[..., None]
    return tex + rng.normal(0, 8, (h, w, 1))


def _background(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    a, b = _color(rng, False), _color(rng, False)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    angle = rng.uniform(0, 2 * math.pi)
    ramp = xx * math.cos(angle) + yy * math.sin(angle)
    t = ((ramp - ramp.min()) / max(float(np.ptp(ramp)), 1.0))[..., None]
    return a * (1 - t) + b * t + rng.normal(0, 10, (h, w, 3))


def _clutter(draw: ImageDraw.ImageDraw, rng: np.random.Generator, h: int, w: int) -> None:
    """Thin lines and specks that are not objects: the background must not be trivially flat."""
    for _ in range(rng.integers(2, 7)):
        colour = tuple(int(v) for v in _color(rng, False))
        if rng.random() < 0.5:
            draw.line([tuple(rng.uniform(0, (w, h))), tuple(rng.uniform(0, (w, h)))], fill=colour, width=1)
        else:
            x, y = rng.uniform(0, (w, h))
            s = rng.uniform(1, 3)
            draw.ellipse([x - s, y - s, x + s, y + s], fill=colour)


def _place(rng: np.random.Generator, spec: GeneratorSpec, h: int, w: int) -> list[shapes.Drawn]:
    """Objects for one image, each fully inside it and each keeping min_visible of itself in view."""
    want = int(rng.integers(spec.min_objects, spec.max_objects + 1))
    placed: list[shapes.Drawn] = []
    for _ in range(want * 20):
        if len(placed) == want:
            break
        size = float(np.exp(rng.uniform(math.log(spec.min_size), math.log(min(spec.max_size, h - 2, w - 2)))))
        cx, cy = rng.uniform(size / 2 + 1, w - size / 2 - 1), rng.uniform(size / 2 + 1, h - size / 2 - 1)
        kind = shapes.KINDS[int(rng.integers(len(shapes.KINDS)))]
        obj = shapes.make(kind, cx, cy, size, rng.uniform(0, 2 * math.pi), rng.uniform(0.7, 1.0))
        trial = placed + [obj]
        if all(_visible_share(trial, i) >= spec.min_visible for i in range(len(placed))):
            placed = trial
    return placed


def _occluders(objs: list[shapes.Drawn], i: int) -> list[np.ndarray]:
    return [part for later in objs[i + 1:] for part in later.parts]


def _visible_share(objs: list[shapes.Drawn], i: int) -> float:
    full = abs(shapes.area(objs[i].outline))
    left = sum(abs(shapes.area(p)) for p in shapes.visible(objs[i].outline, _occluders(objs, i)))
    return left / full


def _annotate(objs: list[shapes.Drawn], h: int, w: int, image_id: int) -> list[dict]:
    """COCO annotations of the visible part of each object; ids are unique over both splits."""
    anns: list[dict] = []
    for i, obj in enumerate(objs):
        polys = shapes.visible(obj.outline, _occluders(objs, i))
        segmentation = [[round(float(v), 2) for v in p.reshape(-1)] for p in polys]
        rle = mask_utils.merge(mask_utils.frPyObjects(segmentation, h, w))
        area = float(mask_utils.area(rle))
        if area < 1:
            continue
        anns.append({"id": image_id * 100 + len(anns) + 1, "image_id": image_id, "category_id": CATEGORY_IDS[shapes.KINDS.index(obj.kind)],
                     "segmentation": segmentation, "area": area,
                     "bbox": [round(float(v), 2) for v in mask_utils.toBbox(rle)], "iscrowd": 0})
    return anns


def _image(rng: np.random.Generator, spec: GeneratorSpec) -> tuple[Image.Image, list[shapes.Drawn]]:
    w, h = (int(v) for v in rng.integers(spec.min_side, spec.max_side + 1, size=2))
    canvas = _background(rng, h, w)
    img = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
    _clutter(ImageDraw.Draw(img), rng, h, w)
    canvas = np.asarray(img, dtype=np.float32).copy()
    objs = _place(rng, spec, h, w)
    for obj in objs:
        stencil = Image.new("L", (w, h), 0)
        ImageDraw.Draw(stencil).polygon([tuple(p) for p in obj.outline], fill=255)
        inside = np.asarray(stencil)[..., None] > 0
        hue = float(shapes.KINDS.index(obj.kind))  # one sixth of the colour circle per category
        canvas = np.where(inside, _texture(rng, h, w, hue), canvas)
    return Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8)), objs


def write_split(folder: Path, split: str, count: int, first_id: int, spec: GeneratorSpec, rng: np.random.Generator,
                layout: Layout = COCO2017) -> None:
    images_dir = layout.images_dir(folder, split)
    images_dir.mkdir(parents=True)
    images, annotations = [], []
    for image_id in range(first_id, first_id + count):
        img, objs = _image(rng, spec)
        name = f"{image_id:012d}.jpg"
        img.save(images_dir / name, quality=spec.jpeg_quality)
        images.append({"license": 1, "file_name": name, "height": img.height, "width": img.width, "id": image_id,
                       "date_captured": "2017-01-01 00:00:00"})
        annotations += _annotate(objs, img.height, img.width, image_id)
    doc = {"info": {"description": "Generated shapes in the COCO 2017 layout", "version": "1.0", "year": 2017,
                    "contributor": GENERATOR, "date_created": "2017-01-01"},
           "licenses": [{"id": 1, "name": "CC0", "url": ""}],
           "images": images, "annotations": annotations, "categories": categories()}
    annotations_file = layout.annotation_file(folder, split)
    annotations_file.parent.mkdir(parents=True, exist_ok=True)
    annotations_file.write_text(json.dumps(doc))


def write(folder: Path, spec: GeneratorSpec, layout: Layout = COCO2017) -> None:
    rng = np.random.default_rng(spec.seed)
    random.seed(spec.seed)
    write_split(folder, "train", spec.train_images, 1, spec, rng, layout)
    write_split(folder, "val", spec.val_images, spec.train_images + 1, spec, rng, layout)


def ensure(spec: GeneratorSpec, folder: str | Path, layout: Layout = COCO2017) -> Path:
    """The dataset for `spec` in `folder`, generated on first use (or when the stamp does not match).
    Another layout is one more parameter of the stamp (COCO 2017's stamps stay as they were)."""
    params = asdict(spec) | ({} if layout == COCO2017 else {"layout": asdict(layout)})
    return generated.ensure(folder, GENERATOR, VERSION, params, lambda tmp: write(tmp, spec, layout))


def main() -> None:
    args = vars(generator_cli.command_line(module_doc(__name__), "folder", asdict(GeneratorSpec())).parse_args())
    folder = args.pop("folder")
    print(ensure(GeneratorSpec(**args), folder))


if __name__ == "__main__":
    main()
