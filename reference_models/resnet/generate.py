"""Write a synthetic image-classification dataset of real JPEG files in the ImageNet folder layout.

    python -m reference_models.resnet.generate OUT_DIR                  # the embedded default
    python -m reference_models.resnet.generate OUT_DIR --width 500 --height 375 --size-jitter 0 \
        --train-per-class 500 --val-per-class 10                           # ImageNet-size JPEGs

OUT_DIR gets train/<wnid>/<wnid>_<n>.JPEG and val/<wnid>/ILSVRC2012_val_<n>.JPEG, the layout that
scripts/prepare_imagenet.py makes of the real ImageNet and torchvision's ImageFolder reads, and
synsets.txt naming each class. A class is a shape (circle, triangle, cross, square, ring) filled
with a texture (solid, stripes across, bars up and down, checks, dots); everything else is drawn at
random per image: the two fill colours, the background colour and its gradient, the position, size
and rotation of the shape, a few distractor blobs, pixel noise and the JPEG quality. Colour therefore says nothing
about the class (a colour histogram with nearest class means stays far below the target, which
tests/reference_models/resnet/test_generate.py checks), and position and rotation keep a linear
model on pixels from solving it: a classifier must find the shape and read its texture.
Every image is drawn from its own seeded stream, so the files are the same whichever process
writes them; large sets are written on every core.
"""
from __future__ import annotations

import io
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import numpy as np
from PIL import Image, ImageDraw

from harness.interface.option_help import module_doc
from harness.interface import generated, generator_cli

VERSION = 1  # of what the generator writes for a given spec: a change that alters the files bumps it

SHAPES = ("circle", "triangle", "cross", "square", "ring")  # in the order classes take them
TEXTURES = ("solid", "stripes", "bars", "checks", "dots")  # stripes run across, bars up and down
BASE = 80.0  # the image side the geometry below is tuned at; other sizes scale it


@dataclass(frozen=True)
class ImageSpec:
    # the embedded default (conf/dataset/resnet_embedded.yaml repeats these; a test keeps them equal)
    classes: int = 15  # shape x texture pairs, shape-major: 15 are 3 shapes in 5 textures; at most 25
    train_per_class: int = 600
    val_per_class: int = 100
    width: int = 80  # mean image size in pixels; each image varies by size_jitter
    height: int = 80
    size_jitter: float = 0.2  # each side is drawn from [1 - j, 1 + j] x its mean
    noise: float = 10.0  # standard deviation of the pixel noise (0-255 scale)
    clutter: int = 2  # at most this many distractor blobs per image
    quality_min: int = 70  # JPEG quality is drawn from [quality_min, 95]
    seed: int = 0

    def __post_init__(self) -> None:
        if not 2 <= self.classes <= len(SHAPES) * len(TEXTURES):
            raise ValueError(f"classes={self.classes}: choose 2 to {len(SHAPES) * len(TEXTURES)}")
        if self.train_per_class < 1 or self.val_per_class < 1:
            raise ValueError("train_per_class and val_per_class need at least 1 image each")
        if min(self.width, self.height) < 16 or not 0 <= self.size_jitter < 1:
            raise ValueError("images need sides of at least 16 pixels and 0 <= size_jitter < 1")


def wnid(cls: int) -> str:
    """An ImageNet-style synset id (n + 8 digits) that no real ImageNet class has."""
    return f"n9{cls:07d}"


def class_name(cls: int) -> str:
    return f"{SHAPES[cls // len(TEXTURES)]} {TEXTURES[cls % len(TEXTURES)]}"


def _colour(rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 256, 3).astype(np.float32)


def _distinct(rng: np.random.Generator, *others: np.ndarray, gap: float = 90.0) -> np.ndarray:
    """A random colour at least `gap` away (RGB distance) from each of `others`, so the shape and
    its texture stay visible whatever colours they get."""
    for _ in range(100):
        c = _colour(rng)
        if all(np.linalg.norm(c - o) >= gap for o in others):
            return c
    return 255.0 - others[0]


def _outline(shape: str, cx: float, cy: float, r: float, angle: float) -> list[tuple[float, float]]:
    """The polygon of a rotated square, triangle or cross around (cx, cy) with radius r."""
    def at(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
        c, s = math.cos(angle), math.sin(angle)
        return [(cx + x * c - y * s, cy + x * s + y * c) for x, y in points]

    if shape == "square":
        return at([(r * math.cos(a), r * math.sin(a)) for a in (math.pi / 4 + k * math.pi / 2 for k in range(4))])
    if shape == "triangle":
        big = 1.2 * r
        return at([(big * math.cos(a), big * math.sin(a)) for a in (-math.pi / 2 + k * 2 * math.pi / 3 for k in range(3))])
    arm = 0.32 * r  # cross: a plus sign of arm half-width `arm`
    return at([(-arm, -r), (arm, -r), (arm, -arm), (r, -arm), (r, arm), (arm, arm), (arm, r), (-arm, r),
               (-arm, arm), (-r, arm), (-r, -arm), (-arm, -arm)])


def _mask(shape: str, w: int, h: int, cx: float, cy: float, r: float, angle: float) -> np.ndarray:
    canvas = Image.new("L", (w, h), 0)
    draw = ImageDraw.Draw(canvas)
    if shape in ("circle", "ring"):
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=255)
        if shape == "ring":
            hole = 0.55 * r
            draw.ellipse((cx - hole, cy - hole, cx + hole, cy + hole), fill=0)
    else:
        draw.polygon(_outline(shape, cx, cy, r, angle), fill=255)
    return np.asarray(canvas) > 127


def _texture(texture: str, w: int, h: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Where the first of the two fill colours goes; axis-aligned, so a flip keeps it."""
    if texture == "solid":
        return np.ones((h, w), dtype=bool)
    period = rng.uniform(5.0, 9.0) * scale
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    x += rng.uniform(0, period)
    y += rng.uniform(0, period)
    if texture == "stripes":
        return (y // (period / 2)) % 2 == 0
    if texture == "bars":
        return (x // (period / 2)) % 2 == 0
    if texture == "checks":
        return ((x // (period / 2)) + (y // (period / 2))) % 2 == 0
    dx, dy = x % period - period / 2, y % period - period / 2  # dots on a grid
    return dx * dx + dy * dy < (0.3 * period) ** 2


def render(spec: ImageSpec, cls: int, rng: np.random.Generator) -> Image.Image:
    """One image of class `cls`."""
    j = spec.size_jitter
    w = max(16, round(spec.width * rng.uniform(1 - j, 1 + j)))
    h = max(16, round(spec.height * rng.uniform(1 - j, 1 + j)))
    side = min(w, h)
    scale = side / BASE
    shape, texture = SHAPES[cls // len(TEXTURES)], TEXTURES[cls % len(TEXTURES)]

    background = _colour(rng)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    tilt = rng.uniform(-40, 40, 2).astype(np.float32)
    image = background + (x[..., None] / w - 0.5) * tilt[0] + (y[..., None] / h - 0.5) * tilt[1]

    for _ in range(int(rng.integers(0, spec.clutter + 1))):
        r = rng.uniform(0.03, 0.07) * side
        bx, by = rng.uniform(0, w), rng.uniform(0, h)
        canvas = Image.new("L", (w, h), 0)
        ImageDraw.Draw(canvas).ellipse((bx - r, by - r, bx + r, by + r), fill=255)
        image[np.asarray(canvas) > 127] = _colour(rng)  # a distractor behind the shape

    first = _distinct(rng, background)
    second = _distinct(rng, first, background)
    r = rng.uniform(0.25, 0.38) * side
    # kept near the middle, so the evaluation's centre crop still shows most of the shape
    cx = w / 2 + rng.uniform(-0.5, 0.5) * (w / 2 - r)
    cy = h / 2 + rng.uniform(-0.5, 0.5) * (h / 2 - r)
    mask = _mask(shape, w, h, cx, cy, r, rng.uniform(0, 2 * math.pi))
    fill = np.where(_texture(texture, w, h, scale, rng)[..., None], first, second)
    image = np.where(mask[..., None], fill, image)

    image += rng.normal(0.0, spec.noise, image.shape).astype(np.float32)
    return Image.fromarray(np.clip(image, 0, 255).astype(np.uint8), "RGB")


def _encode(spec: ImageSpec, split: str, cls: int, index: int) -> bytes:
    rng = np.random.default_rng([spec.seed, 0 if split == "train" else 1, cls, index])
    buf = io.BytesIO()
    render(spec, cls, rng).save(buf, "JPEG", quality=int(rng.integers(spec.quality_min, 96)))
    return buf.getvalue()


def _files(spec: ImageSpec) -> list[tuple[str, int, int, str]]:
    """(split, class, index, path relative to OUT_DIR) of every image, in a fixed order."""
    out, val_number = [], 0
    for cls in range(spec.classes):
        for i in range(spec.train_per_class):
            out.append(("train", cls, i, f"train/{wnid(cls)}/{wnid(cls)}_{i + 1}.JPEG"))
    for i in range(spec.val_per_class):  # the val files are numbered across classes, as ImageNet's
        for cls in range(spec.classes):
            val_number += 1
            out.append(("val", cls, i, f"val/{wnid(cls)}/ILSVRC2012_val_{val_number:08d}.JPEG"))
    return out


def _write_chunk(spec: ImageSpec, out_dir: str, chunk: list[tuple[str, int, int, str]]) -> int:
    for split, cls, index, rel in chunk:
        (Path(out_dir) / rel).write_bytes(_encode(spec, split, cls, index))
    return len(chunk)


def write(spec: ImageSpec, out_dir: str | Path, workers: Optional[int] = None) -> Path:
    """Write every file of `spec` under out_dir (on `workers` processes; default: every core)."""
    out_dir = Path(out_dir)
    for split in ("train", "val"):
        for cls in range(spec.classes):
            (out_dir / split / wnid(cls)).mkdir(parents=True, exist_ok=True)
    (out_dir / "synsets.txt").write_text("".join(f"{wnid(c)} {class_name(c)}\n" for c in range(spec.classes)))
    files = _files(spec)
    chunks = [files[i: i + 500] for i in range(0, len(files), 500)]
    generator_cli.run_parallel(_write_chunk, [(spec, str(out_dir), c) for c in chunks], workers)
    return out_dir


def ensure(spec: ImageSpec, out_dir: str | Path, workers: Optional[int] = None) -> Path:
    """The generated dataset in out_dir, written first if it is missing, made from another spec, or
    no longer what was written (harness.interface.generated checks the stamp's checksums)."""
    return generated.ensure(out_dir, "reference_models.resnet.generate", VERSION, asdict(spec),
                            lambda tmp: write(spec, tmp, workers))


def main() -> None:
    parser = generator_cli.command_line(module_doc(__name__), "out_dir", asdict(ImageSpec()), workers={
        "type": int, "default": None, "help": "processes that write (default: every core)"})
    args = vars(parser.parse_args())
    out_dir, workers = args.pop("out_dir"), args.pop("workers")
    try:
        spec = ImageSpec(**args)
    except ValueError as err:
        parser.error(str(err))
    print(f"wrote {ensure(spec, out_dir, workers)}")


if __name__ == "__main__":
    main()
