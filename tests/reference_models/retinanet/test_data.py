"""openimages-mlperf's layout: the embedded generator writes it, the shared COCO reader reads it through its
Layout, and the training transform hands torchvision targets with labels 0..K-1 cut to the image."""
from __future__ import annotations

import json
import random

import pytest
import torch
from omegaconf import OmegaConf
from PIL import Image

from harness.interface import DataError
from reference_models.detection import coco
from reference_models.detection.generate import CATEGORY_IDS
from reference_models.retinanet.data import OPENIMAGES, TrainTransform, prepare, torchvision_target

SMALL = {"train_images": 6, "val_images": 3, "seed": 5}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    cfg = OmegaConf.create({"dataset": {"path": str(tmp_path_factory.mktemp("oi") / "shapes"), "generator": SMALL}})
    return prepare(cfg)


def test_generator_writes_the_openimages_mlperf_layout_in_coco_json(data):
    labels = data / "validation" / "labels" / "openimages-mlperf.json"
    doc = json.loads(labels.read_text())
    assert set(doc) == {"info", "licenses", "images", "annotations", "categories"}
    assert [c["id"] for c in doc["categories"]] == list(CATEGORY_IDS)
    assert len(list((data / "train" / "data").glob("*.jpg"))) == 6 and len(doc["images"]) == 3
    assert not (data / "annotations").exists() and not (data / "train2017").exists()
    # the stamp holds the layout: the COCO 2017 dataset of the same parameters is another folder's
    assert json.loads((data / "GENERATED.json").read_text())["params"]["layout"]["folders"] == ["train", "validation"]


def test_the_shared_reader_reads_it_and_labels_run_from_zero(data):
    val = coco.CocoSplit(data, "val", keep_empty=True, include_crowd=True, layout=OPENIMAGES)
    assert len(val) == 3 and val.images_dir == (data / "validation" / "data").resolve()
    image, target = val[0]
    truth = torchvision_target(target)
    assert image.size == (target.size[1], target.size[0])
    assert 0 <= int(truth["labels"].min()) and int(truth["labels"].max()) < len(CATEGORY_IDS)
    assert val.category_of[int(truth["labels"][0]) + 1] == target_category(val, target)
    with pytest.raises(DataError, match="openimages-mlperf folder"):
        coco.CocoSplit(data / "validation", "val", layout=OPENIMAGES)


def target_category(val: coco.CocoSplit, target: coco.Target) -> int:
    anns = [a for a in val.coco.imgToAnns[target.image_id] if a["bbox"][2] > 1 and a["bbox"][3] > 1]
    return anns[0]["category_id"]


def test_boxes_are_cut_to_the_image_and_flips_keep_them_there():
    target = coco.Target(7, torch.tensor([[-4.0, 2, 20, 30], [65, 5, 70, 9], [10, 10, 30, 20]]),
                         torch.tensor([1, 2, 6]), [], (40, 60))
    truth = torchvision_target(target)  # the second box lies right of the 60-pixel image: dropped
    assert truth["boxes"].tolist() == [[0.0, 2, 20, 30], [10, 10, 30, 20]] and truth["labels"].tolist() == [0, 5]
    image = Image.new("RGB", (60, 40))
    random.seed(0)
    flips = [TrainTransform(1.0)(image, target), TrainTransform(0.0)(image, target)]
    (pixels, flipped), (_, kept) = flips
    assert pixels.dtype == torch.uint8 and pixels.shape == (3, 40, 60)
    assert flipped["boxes"].tolist() == [[40.0, 2, 60, 30], [30, 10, 50, 20]]
    assert kept["boxes"].tolist() == truth["boxes"].tolist() and flipped["labels"].tolist() == [0, 5]
