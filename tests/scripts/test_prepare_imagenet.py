"""scripts/prepare_imagenet.py after unpacking (torchvision's ImageNet parsers do that part): MLPerf's
stage 1 re-encodes what is not an RGB or greyscale JPEG, and incomplete folders are named."""
from __future__ import annotations

import importlib.util

from PIL import Image

from reference_models.resnet.generate import ImageSpec, write
from tests.helpers import REPO

_spec = importlib.util.spec_from_file_location("prepare_imagenet", REPO / "scripts" / "prepare_imagenet.py")
prepare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prepare)


def test_png_and_cmyk_files_become_rgb_jpegs_and_the_rest_is_left_alone(tmp_path):
    out = write(ImageSpec(classes=2, train_per_class=3, val_per_class=1), tmp_path / "imagenet", workers=1)
    train = sorted((out / "train").rglob("*.JPEG"))
    Image.open(train[0]).convert("RGB").save(train[0], "PNG")  # a PNG under a .JPEG name, as ImageNet has one
    Image.open(train[1]).convert("CMYK").save(train[1], "JPEG")  # and 22 CMYK JPEGs
    Image.open(train[2]).convert("L").save(train[2], "JPEG")  # greyscale JPEGs are fine as they are
    untouched = train[3].read_bytes()
    fixed = prepare.fix_formats(out, workers=1)
    assert sorted(fixed) == sorted(map(str, train[:2]))
    for path in train[:3]:
        with Image.open(path) as image:
            assert image.format == "JPEG" and image.mode in ("RGB", "L")
    assert train[3].read_bytes() == untouched


def test_counts_that_differ_from_imagenets_are_named(tmp_path):
    out = write(ImageSpec(classes=2, train_per_class=3, val_per_class=1), tmp_path / "imagenet", workers=1)
    assert prepare.check_counts(out, {"classes": 2, "train": 6, "val": 2}) == []
    assert prepare.check_counts(out) == ["classes: 2 found, 1,000 expected", "train: 6 found, 1,281,167 expected",
                                         "val: 2 found, 50,000 expected"]
