"""Faults in a COCO-format dataset, put into the generator's files: each is one line naming the file and the
record and what to do, found when the split is read or the model built (not after an epoch), or, where
real COCO has such records (degenerate polygons, crowd and tiny boxes), dropped as the references drop
them and counted."""
from __future__ import annotations

import json
import logging
import shutil

import pytest
import torch
from omegaconf import OmegaConf
from pycocotools import mask as mask_utils

from harness import registry
from harness.config import compose
from harness.interface import DataError, RunContext
from reference_models.detection import coco
from reference_models.detection.cocoeval import score_parts
from reference_models.detection.generate import GeneratorSpec, ensure
from tests.helpers import run_cli, said, strict_json

SMALL = GeneratorSpec(train_images=12, val_images=4, seed=5)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return ensure(SMALL, tmp_path_factory.mktemp("coco") / "shapes")


@pytest.fixture()
def bad(data, tmp_path):
    """A copy of the dataset to put a fault in (no generator stamp: nothing regenerates it)."""
    out = tmp_path / "bad"
    shutil.copytree(data, out)
    (out / "GENERATED.json").unlink()
    return out


def edit(root, split, change) -> None:
    path = root / "annotations" / f"instances_{split}2017.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _build(name: str, root, rank: int = 0, world: int = 1):
    cfg = compose([f"model={name}", f"+debug={name}", f"dataset.path={root}", "dataset.generator=null", "seed=1",
                   "model.workers=0"])
    OmegaConf.resolve(cfg)
    return registry.get(name).build(RunContext(cfg=cfg, data_dir=root, device=torch.device("cpu"),
                                               rank=rank, world_size=world, seed=1, shared_seed=2))


def test_an_image_listed_but_missing_is_named_when_the_split_is_read(bad):
    (bad / "train2017" / "000000000003.jpg").unlink()
    (bad / "train2017" / "000000000004.jpg").unlink()
    with pytest.raises(DataError) as caught:
        coco.CocoSplit(bad, "train", keep_empty=False)
    assert str(caught.value).startswith(f"{bad.resolve()}/train2017/000000000003.jpg is missing (image 3 of "
                                        "instances_train2017.json and 1 more): put the split's images in")


def test_a_truncated_validation_image_stops_the_build_not_the_first_evaluation(bad):
    path = bad / "val2017" / "000000000014.jpg"
    path.write_bytes(path.read_bytes()[:-300])
    with pytest.raises(DataError) as caught:
        _build("ssd", bad)  # before any training step
    message = str(caught.value)
    assert message.startswith(f"{path.resolve()} (image 14 of instances_val2017.json) is truncated or corrupt (")
    assert "python -m harness.check_data model=ssd" in message and "\n" not in message


def test_a_validation_image_of_another_size_than_its_annotation_stops_the_build(bad):
    edit(bad, "val", lambda doc: doc["images"][1].update(width=doc["images"][1]["width"] + 7))
    with pytest.raises(DataError, match=r"000000000014.jpg \(image 14 of instances_val2017.json\) is \d+x\d+, its "
                                        r"annotation says"):
        _build("maskrcnn", bad)


def _degenerate_polygons(doc: dict) -> None:
    anns = doc["annotations"]
    anns[0]["segmentation"] = [[10.0, 10.0, 20.0, 20.0]] + anns[0]["segmentation"]  # 2 points first: read as a box
    anns[1]["segmentation"] = [[5.0, 5.0]]  # its only polygon: 1 point
    anns[2]["segmentation"].append([1.0, 2.0, 3.0, 4.0, 5.0])  # an odd number of coordinates


def test_pycocotools_fails_on_such_polygons():
    """The fault is real: a first polygon of two points is taken for a box and fails with an unrelated
    TypeError; one of one point with an error that names nothing."""
    with pytest.raises(TypeError, match="Argument 'bb' has incorrect type"):
        mask_utils.frPyObjects([[10.0, 10.0, 20.0, 20.0]], 100, 100)
    with pytest.raises(Exception, match="input type is not supported"):
        mask_utils.frPyObjects([[5.0, 5.0]], 100, 100)


def test_polygons_of_fewer_than_3_points_are_dropped_and_counted_as_detectron2_drops_them(bad, caplog):
    edit(bad, "train", _degenerate_polygons)
    with caplog.at_level(logging.WARNING, logger="harness.coco"):
        train = coco.CocoSplit(bad, "train", keep_empty=False, with_polygons=True)
    assert train.findings["polygons_dropped"] == 3 and train.findings["annotations_without_valid_polygon"] == 1
    assert any("3 polygons of fewer than 3 points dropped" in r.getMessage() for r in caplog.records)
    for i in range(len(train)):  # every target rasterises: no TypeError from pycocotools
        target = train.target(i)
        assert target.masks().shape[0] == len(target.boxes)
    dropped = json.loads((bad / "annotations" / "instances_train2017.json").read_text())["annotations"][1]["id"]
    assert all(a["id"] != dropped for i in range(len(train)) for a in train._usable(
        train.coco.imgToAnns[train.ids[i]]))


def test_degenerate_validation_polygons_leave_the_mask_ground_truth_and_scoring_works(bad):
    edit(bad, "val", _degenerate_polygons)
    val = coco.CocoSplit(bad, "val", keep_empty=True, with_polygons=True)
    assert val.findings["polygons_dropped"] == 3 and val.findings["annotations_without_valid_polygon"] == 1
    doc = json.loads((bad / "annotations" / "instances_val2017.json").read_text())
    assert len(val.coco.anns) == len(doc["annotations"]) - 1  # the one without a polygon left the ground truth
    perfect = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 1.0,
                "segmentation": val.coco.annToRLE(a)} for a in val.coco.anns.values()]  # the ground truth itself
    scores = score_parts(val.coco, perfect, ["BBOX", "SEGM"])  # COCOeval rasterises the ground truth: no TypeError
    assert scores == {"BBOX": pytest.approx(1.0), "SEGM": pytest.approx(1.0)}


def test_mask_rcnn_counts_what_it_dropped_for_the_runs_record(bad):
    edit(bad, "train", _degenerate_polygons)
    edit(bad, "val", _degenerate_polygons)
    edit(bad, "train", lambda doc: doc["annotations"][3].update(iscrowd=1))
    findings = _build("maskrcnn", bad).data_findings()
    assert findings["train_polygons_dropped"] == 3 and findings["val_polygons_dropped"] == 3
    assert findings["train_annotations_without_valid_polygon"] == 1
    assert findings["val_annotations_without_valid_polygon"] == 1
    assert findings["train_crowd_annotations_dropped"] == 1 and findings["train_cmyk_to_rgb"] == 0
    assert all(isinstance(v, int) for v in findings.values())


def test_a_negative_width_box_is_an_error_in_val_and_left_out_of_training(bad):
    def negative(doc):
        doc["annotations"][0]["bbox"][2] = -12.5

    edit(bad, "val", negative)
    ann_id = json.loads((bad / "annotations" / "instances_val2017.json").read_text())["annotations"][0]["id"]
    with pytest.raises(DataError) as caught:
        coco.CocoSplit(bad, "val", keep_empty=True)
    assert str(caught.value).startswith(f"instances_val2017.json annotation {ann_id} (image 13): bbox [")
    assert "negative width or height, which no detection can match: fix or remove the annotation" in str(caught.value)
    edit(bad, "train", negative)
    train = coco.CocoSplit(bad, "train", keep_empty=False)  # the references drop boxes of a side <= 1 pixel
    assert train.findings["boxes_too_small"] == 1


def test_a_category_outside_the_list_names_the_file_annotation_and_category(bad):
    edit(bad, "train", lambda doc: doc["annotations"][4].update(category_id=99))
    ann = json.loads((bad / "annotations" / "instances_train2017.json").read_text())["annotations"][4]
    with pytest.raises(DataError) as caught:
        coco.CocoSplit(bad, "train", keep_empty=False)
    assert str(caught.value) == (f"instances_train2017.json annotation {ann['id']} (image {ann['image_id']}): "
                                 "category_id 99 is not in the file's categories (1, 2, 3, 5, 7, 9): fix the "
                                 "annotation or add the category")


def test_an_annotation_of_an_image_not_in_images_is_counted_and_warned_about(bad, caplog):
    edit(bad, "val", lambda doc: doc["annotations"][0].update(image_id=4242))
    with caplog.at_level(logging.WARNING, logger="harness.coco"):
        val = coco.CocoSplit(bad, "val", keep_empty=True)
    assert val.findings["annotations_without_image"] == 1
    (warning,) = [r.getMessage() for r in caplog.records if "image_id" in r.getMessage()]
    assert "instances_val2017.json: 1 annotations name an image_id that is not in its images" in warning
    assert "image_id 4242" in warning


def test_records_that_pycocotools_would_lose_silently_are_errors(bad):
    edit(bad, "val", lambda doc: doc["annotations"][1].update(id=doc["annotations"][0]["id"]))
    with pytest.raises(DataError, match="annotation id .* appears twice"):
        coco.CocoSplit(bad, "val")
    edit(bad, "val", lambda doc: doc["annotations"][1].update(id=10**9, bbox=[1, 2, "x", 4]))
    with pytest.raises(DataError, match=r"annotation 1000000000 \(image \d+\): bbox \[1, 2, 'x', 4\] is not"):
        coco.CocoSplit(bad, "val")


@pytest.mark.e2e
def test_a_truncated_training_image_ends_the_run_before_training_with_one_line_naming_it(bad, tmp_path):
    path = bad / "train2017" / "000000000007.jpg"
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    # found by the build's check of every training image's header and end, before any step
    out = run_cli("harness.train", "model=ssd", "+debug=ssd", f"dataset.path={bad}", "dataset.generator=null",
                  "model.workers=1", "model.batch_size=12", "seed=1", "output_root=out", "device=cpu", "progress=false",
                  "tensorboard=false", "telemetry=false", cwd=tmp_path, timeout=300)
    assert out.returncode == 1
    expected = (f"error: {path.resolve()} (image 7 of instances_train2017.json) is truncated or corrupt (image file is "
                "truncated")
    errors = [line for line in said(out.stderr) if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(expected), out.stderr
    assert "Traceback" not in out.stderr and "Caught DataError" not in out.stderr
    assert "python -m harness.check_data model=ssd dataset=ssd_embedded" in errors[0]
    (run_dir,) = (tmp_path / "out" / "runs").iterdir()
    result = strict_json(run_dir / "result.json")
    assert result["status"] == "failed" and result["reason"] == errors[0][len("error: "):]
    assert errors[0] in (run_dir / "train.log").read_text()
    records = [json.loads(line[len(":::MLLOG "):]) for line in (run_dir / "mlperf.log").read_text().splitlines()]
    assert records[-1]["key"] == "run_stop" and records[-1]["metadata"]["status"] == "aborted"
    assert "run_start" not in {r["key"] for r in records}  # not an epoch in: no time to train was spent
