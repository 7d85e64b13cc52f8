"""python -m harness.check_data: a dataset folder checked without training, one line per problem, exit 1
when the data cannot train; what the loader will drop or convert as the reference does is said too."""
from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from harness import check_data
from reference_models.detection.generate import GeneratorSpec
from reference_models.detection.generate import ensure as coco_ensure
from reference_models.text.language import LanguageSpec
from reference_models.ncf.generate import GeneratorSpec as RatingsSpec
from reference_models.ncf.generate import write as write_ratings
from reference_models.resnet.generate import ImageSpec
from reference_models.resnet.generate import write as write_images
from reference_models.transformer.generate import CorpusSpec
from reference_models.transformer.generate import write as write_corpus
from tests.helpers import run_cli


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("made")
    return {"coco": coco_ensure(GeneratorSpec(train_images=12, val_images=4, seed=5), root / "coco"),
            "imagenet": write_images(ImageSpec(classes=3, train_per_class=6, val_per_class=2), root / "imagenet",
                                     workers=1),
            "wmt17": write_corpus(CorpusSpec(LanguageSpec(train_pairs=300, dev_pairs=10, test_pairs=20, seed=4),
                                             train_shards=2), root / "wmt17")}


def _copy(made, name: str, tmp_path: Path) -> Path:
    out = tmp_path / name
    shutil.copytree(made[name], out)
    (out / "GENERATED.json").unlink(missing_ok=True)
    return out


def _check(capsys, model: str, root: Path, *flags: str) -> tuple[int, list[str], str]:
    code = check_data.main([f"model={model}", f"+debug={model}", f"dataset.path={root}", "dataset.generator=null",
                            *flags])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def test_a_whole_dataset_can_train(made, tmp_path, capsys):
    code, lines, _ = _check(capsys, "maskrcnn", _copy(made, "coco", tmp_path))
    assert code == 0 and lines[-1].startswith("OK: the data can train")
    assert "  train2017: 12 images (12 used), " in "\n".join(lines) and "  val2017: decoded 4 images" in lines


def test_every_problem_of_a_coco_folder_is_one_line_and_the_data_cannot_train(made, tmp_path, capsys):
    root = _copy(made, "coco", tmp_path)
    (root / "train2017" / "000000000003.jpg").unlink()
    val_image = root / "val2017" / "000000000014.jpg"
    val_image.write_bytes(val_image.read_bytes()[:-300])
    ann = root / "annotations" / "instances_val2017.json"
    doc = json.loads(ann.read_text())
    doc["annotations"][0]["category_id"] = 99
    doc["annotations"][1]["bbox"][2] = -4.0
    doc["annotations"][2]["segmentation"].append([1.0, 2.0])
    ann.write_text(json.dumps(doc))
    code, lines, err = _check(capsys, "maskrcnn", root)
    assert code == 1 and "4 problems stop training" in err
    a0, a1 = doc["annotations"][0]["id"], doc["annotations"][1]["id"]
    errors = [line for line in lines if line.startswith("error: ")]
    assert errors[:3] == [
        f"error: {root.resolve()}/train2017/000000000003.jpg is missing (image 3 of instances_train2017.json): put "
        f"the split's images in {root.resolve()}/train2017 (scripts/prepare_coco2017.sh unpacks them) or remove their "
        "entries from the annotation file",
        f"error: instances_val2017.json annotation {a0} (image 13): category_id 99 is not in the file's categories "
        "(1, 2, 3, 5, 7, 9): fix the annotation or add the category",
        f"error: instances_val2017.json annotation {a1} (image 13): bbox [40.0, 40.0, -4.0, 27.0] has a negative width "
        "or height, which no detection can match: fix or remove the annotation (COCO boxes are [x, y, width, height])"]
    assert errors[3].startswith(f"error: {val_image.resolve()} (image 14 of instances_val2017.json) is truncated or "
                                "corrupt (") and errors[3].endswith("): replace it with the dataset's own file")
    assert "  handled as the reference does: val2017: 1 polygons of fewer than 3 points dropped (detectron2's rule)" \
        in lines


def test_the_images_are_decoded_or_with_quick_their_headers_and_ends_read(made, tmp_path, capsys):
    root = _copy(made, "coco", tmp_path)
    val_image = root / "val2017" / "000000000015.jpg"
    val_image.write_bytes(val_image.read_bytes()[:-300])
    for flags in ((), ("--quick",)):
        code, lines, _ = _check(capsys, "ssd", root, *flags)
        errors = [line for line in lines if line.startswith("error: ")]
        assert code == 1 and len(errors) == 1
        assert errors[0].startswith(f"error: {val_image.resolve()} (image 15 of instances_val2017.json) is truncated "
                                    "or corrupt (")


def test_an_imagenet_folder_names_bad_files_and_counts_the_quirks_the_reference_handles(made, tmp_path, capsys):
    root = _copy(made, "imagenet", tmp_path)
    train = sorted((root / "train").rglob("*.JPEG"))
    with Image.open(train[0]) as image:
        image.convert("CMYK").save(train[0], "JPEG")
    buf = io.BytesIO()
    with Image.open(train[1]) as image:
        image.save(buf, "PNG")
    train[1].write_bytes(buf.getvalue())
    train[2].write_bytes(b"")
    code, lines, _ = _check(capsys, "resnet", root)
    assert code == 1
    assert f"error: {train[2]} is empty (0 bytes): replace it with a good copy or delete it" in lines
    text = "\n".join(lines)
    assert "handled as the reference does: train: 1 CMYK JPEGs: converted to RGB" in text
    assert "handled as the reference does: train: 1 files that are not JPEG inside (a PNG named .JPEG)" in text


def test_a_vocabulary_with_a_subtoken_twice_cannot_train(made, tmp_path, capsys):
    root = _copy(made, "wmt17", tmp_path)
    vocab = root / "vocab.ende.32768"
    vocab.write_text(vocab.read_text(encoding="utf-8") + "'the_'\n", encoding="utf-8")
    code, lines, _ = _check(capsys, "transformer", root)
    (error,) = [line for line in lines if line.startswith("error: ")]
    assert code == 1 and "subtoken 'the_' repeats line" in error


def test_movielens_ratings_are_preprocessed_and_what_the_reference_drops_is_said(tmp_path, capsys):
    ratings = write_ratings(RatingsSpec(users=400, items=2500, mean_ratings=40.0), tmp_path / "ml", workers=1)
    root = ratings.parent
    lines = ratings.read_text().splitlines()
    ratings.write_text("\n".join(lines + [lines[1], "999999,1,4.0,1"]) + "\n")  # a repeat; a user of one rating
    code, out, _ = _check(capsys, "ncf", root)
    assert code == 0 and out[-1].startswith("OK: the data can train")
    assert "  handled as the reference does: ratings.csv: 1 repeated (user, movie) ratings: one positive each, the " \
        "latest kept" in out
    assert "  handled as the reference does: ratings.csv: 1 users with fewer than 20 ratings: dropped (the " \
        "reference's rule)" in out
    ratings.write_text("userId,movieId\n1,2\n")
    code, out, _ = _check(capsys, "ncf", root)
    assert code == 1 and out[-1].startswith("error: ") and "is not a MovieLens ratings.csv" in out[-1]


def test_the_problem_lines_are_capped_unless_all_are_asked_for(made, tmp_path, capsys, monkeypatch):
    root = _copy(made, "imagenet", tmp_path)
    for path in sorted((root / "val").rglob("*.JPEG")):
        path.write_bytes(b"")
    monkeypatch.setattr(check_data, "SHOWN", 2)
    code, lines, _ = _check(capsys, "resnet", root)
    assert code == 1 and sum(line.startswith("error: ") for line in lines) == 2
    assert "... and 4 more problems (--all lists every one)" in lines
    code, lines, _ = _check(capsys, "resnet", root, "--all")
    assert sum(line.startswith("error: ") for line in lines) == 6


def test_a_bad_command_line_is_exit_2(capsys):
    assert check_data.main(["model=bert_base"]) == 2
    assert "throughput-only" in capsys.readouterr().err
    assert check_data.main([]) == 2 and "name the model" in capsys.readouterr().err
    assert check_data.main(["model=ncf", "--fast"]) == 2 and "unknown flag --fast" in capsys.readouterr().err
    assert check_data.main(["model=resnet", "dataset.path=/nonexistent", "dataset.generator=null"]) == 1
    assert "no train/ folder in /nonexistent" in capsys.readouterr().err


@pytest.mark.e2e
def test_the_command_as_a_user_runs_it(made, tmp_path):
    root = _copy(made, "imagenet", tmp_path)
    bad = sorted((root / "val").rglob("*.JPEG"))[1]
    bad.write_bytes(bad.read_bytes()[:200])
    out = run_cli("harness.check_data", "model=resnet", "dataset=imagenet", f"dataset.path={root}", "model.batch_size=4",
                  cwd=tmp_path)
    assert out.returncode == 1
    assert f"error: {bad} is truncated or corrupt (" in out.stdout
    assert out.stderr.strip().splitlines()[-1].startswith("harness.check_data: 1 problem stop training")
