"""The COCO layer: the generator writes COCO 2017's layout and annotations, pycocotools reads them, and the
loader maps categories, carries polygons and refuses what is not a dataset."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from pycocotools.coco import COCO

from harness.interface import DataError
from harness.interface.generated import verify
from reference_models.detection import coco, shapes
from reference_models.detection.generate import CATEGORY_IDS, GENERATOR, VERSION, GeneratorSpec, ensure

SMALL = GeneratorSpec(train_images=12, val_images=4, seed=5)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return ensure(SMALL, tmp_path_factory.mktemp("coco") / "shapes")


def test_generator_writes_the_coco_2017_layout(data):
    assert (data / "annotations" / "instances_train2017.json").is_file()
    assert len(list((data / "train2017").glob("*.jpg"))) == 12 and len(list((data / "val2017").glob("*.jpg"))) == 4
    doc = json.loads((data / "annotations" / "instances_val2017.json").read_text())
    assert set(doc) == {"info", "licenses", "images", "annotations", "categories"}
    assert [c["id"] for c in doc["categories"]] == list(CATEGORY_IDS)  # gaps, as COCO's ids have
    assert {"supercategory", "id", "name"} == set(doc["categories"][0])
    assert verify(data, GENERATOR, VERSION) is None


def test_annotations_are_the_visible_polygons_with_their_box_and_area(data):
    gt = COCO(str(data / "annotations" / "instances_train2017.json"))
    per_image = [len(gt.getAnnIds(imgIds=i)) for i in gt.getImgIds()]
    assert min(per_image) >= 1 and max(per_image) >= 3  # several objects per image
    assert len({a["category_id"] for a in gt.anns.values()}) >= 4
    for ann in gt.anns.values():
        mask = gt.annToMask(ann)
        assert abs(mask.sum() - ann["area"]) <= 1
        ys, xs = np.nonzero(mask)
        x, y, w, h = ann["bbox"]
        assert xs.min() >= np.floor(x) and xs.max() <= x + w and ys.min() >= np.floor(y) and ys.max() <= y + h
        assert ann["iscrowd"] == 0 and all(len(p) >= 6 for p in ann["segmentation"])


def test_generator_is_deterministic(tmp_path, data):
    again = ensure(SMALL, tmp_path / "again")
    a = json.loads((data / "GENERATED.json").read_text())["files"]
    b = json.loads((again / "GENERATED.json").read_text())["files"]
    assert a == b


def test_occluded_objects_keep_what_stays_visible():
    square = shapes.make("square", 50, 50, 40, 0.0, 1.0)
    cover = np.array([[40.0, 0], [100, 0], [100, 100], [40, 100]])  # hides the right 30 of 40 columns
    left = shapes.visible(square.outline, [cover])
    assert sum(abs(shapes.area(p)) for p in left) == pytest.approx(10 * 40, rel=1e-6)
    star = shapes.make("star", 50, 50, 40, 0.3, 1.0)
    assert sum(abs(shapes.area(p)) for p in star.parts) == pytest.approx(abs(shapes.area(star.outline)), rel=1e-6)


def test_loader_maps_categories_to_contiguous_labels_and_carries_polygons(data):
    split = coco.CocoSplit(data, "train", keep_empty=False, with_polygons=True)
    assert split.num_classes == len(CATEGORY_IDS) + 1
    assert split.label_of == {cid: i + 1 for i, cid in enumerate(CATEGORY_IDS)}
    image, target = split[0]
    assert image.size == (target.size[1], target.size[0])
    assert target.labels.min() >= 1 and len(target.polygons) == len(target.boxes)
    assert target.masks().shape == (len(target.boxes), *target.size)


def test_a_missing_split_or_a_file_name_outside_the_folder_is_a_data_error(data, tmp_path):
    with pytest.raises(DataError, match="instances_train2017.json is missing"):
        coco.check_layout(tmp_path)
    bad = tmp_path / "bad"
    shutil.copytree(data, bad)
    ann = bad / "annotations" / "instances_val2017.json"
    doc = json.loads(ann.read_text())
    doc["images"][0]["file_name"] = "../../outside.jpg"
    ann.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="points outside"):  # found when the split is read, not by a worker
        coco.CocoSplit(bad, "val")
