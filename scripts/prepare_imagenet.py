"""Turn the ImageNet (ILSVRC 2012) tarballs into the folder layout the harness's ResNet reads.

    python scripts/prepare_imagenet.py TARBALL_DIR outputs/datasets/imagenet
    python -m harness.train model=resnet dataset=imagenet seed=1

TARBALL_DIR must hold the three files image-net.org gives registered users (the harness downloads
nothing): ILSVRC2012_img_train.tar (138 GB), ILSVRC2012_img_val.tar (6.3 GB) and
ILSVRC2012_devkit_t12.tar.gz (the validation labels). OUT_DIR gets train/<wnid>/*.JPEG (1,281,167
images) and val/<wnid>/*.JPEG (50,000), which torchvision's ImageFolder reads. Steps:
1. torchvision.datasets.imagenet checks each tarball's MD5 and unpacks it, moving every validation
   image into the folder of its class from the devkit's ground truth (links to the tarballs are
   made in OUT_DIR when they lie elsewhere; about 300 GB free space is needed in all);
2. MLPerf's "stage 1" (the reference's README): files that are not RGB or greyscale JPEGs (one PNG
   and 22 CMYK JPEGs in the training set) are re-encoded as RGB JPEGs at quality 100, so that both
   decoders (PIL and nvJPEG, model.decode=cuda) read every file;
3. the counts are checked against ImageNet's.
Re-running skips what is done (an unpacked split is not unpacked again).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.interface.generator_cli import run_parallel  # noqa: E402
from harness.usage import module_doc  # noqa: E402

TARBALLS = ("ILSVRC2012_img_train.tar", "ILSVRC2012_img_val.tar", "ILSVRC2012_devkit_t12.tar.gz")
COUNTS = {"classes": 1000, "train": 1_281_167, "val": 50_000}


def unpack(tarballs: Path, out: Path) -> None:
    from torchvision.datasets import imagenet

    out.mkdir(parents=True, exist_ok=True)
    for name in TARBALLS:
        source, here = tarballs / name, out / name
        if not source.is_file():
            sys.exit(f"error: {source} is missing: put the ILSVRC 2012 tarballs ({', '.join(TARBALLS)}) in {tarballs}")
        if not here.exists():
            here.symlink_to(source.resolve())
    if not (out / imagenet.META_FILE).is_file():
        print("devkit: validation labels", flush=True)
        imagenet.parse_devkit_archive(str(out))
    for split, parse in (("val", imagenet.parse_val_archive), ("train", imagenet.parse_train_archive)):
        if (out / split).is_dir():
            print(f"{split}/ exists: not unpacked again", flush=True)
            continue
        print(f"{split}: checking the MD5 and unpacking (the training set takes an hour or more)", flush=True)
        parse(str(out))


def _fix_chunk(paths: list[str]) -> list[str]:
    """Re-encode the files of `paths` that are not RGB or greyscale JPEGs; the paths it changed."""
    from PIL import Image

    fixed = []
    for path in paths:
        with Image.open(path) as image:
            if image.format == "JPEG" and image.mode in ("RGB", "L"):
                continue
            rgb = image.convert("RGB")
        rgb.save(path, "JPEG", quality=100)
        fixed.append(path)
    return fixed


def fix_formats(out: Path, workers: int | None = None) -> list[str]:
    """MLPerf's stage 1: every file under train/ and val/ an RGB or greyscale JPEG."""
    files = sorted(str(p) for split in ("train", "val") for p in (out / split).rglob("*") if p.is_file())
    chunks = [(files[i: i + 2000],) for i in range(0, len(files), 2000)]
    return [p for part in run_parallel(_fix_chunk, chunks, workers) for p in part]


def check_counts(out: Path, expected: dict[str, int] = COUNTS) -> list[str]:
    """What differs from ImageNet's counts (nothing when the folder is complete)."""
    from reference_models.resnet.data import load

    folder = load(out)
    found = {"classes": len(folder.classes), "train": len(folder.train), "val": len(folder.val)}
    return [f"{k}: {found[k]:,} found, {v:,} expected" for k, v in expected.items() if found[k] != v]


def main() -> None:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("tarballs", type=Path, help="folder with the three ILSVRC 2012 tarballs")
    parser.add_argument("out", type=Path, help="the dataset folder (dataset.path of dataset=imagenet)")
    parser.add_argument("--workers", type=int, default=None, help="processes for the format pass (default: every core)")
    args = parser.parse_args()
    unpack(args.tarballs, args.out)
    fixed = fix_formats(args.out, args.workers)
    print(f"re-encoded {len(fixed)} files as RGB JPEG" + "".join(f"\n  {p}" for p in fixed), flush=True)
    problems = check_counts(args.out)
    if problems:
        sys.exit("error: the folder is not complete ImageNet: " + "; ".join(problems))
    print(f"ready: {args.out} ({COUNTS['classes']} classes, {COUNTS['train']:,} training and "
          f"{COUNTS['val']:,} validation images)\n  python -m harness.train model=resnet dataset=imagenet "
          f"dataset.path={args.out}")


if __name__ == "__main__":
    main()
