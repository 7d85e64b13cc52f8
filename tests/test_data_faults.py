"""Dataset folders that used to be read wrong, given to `python -m harness.check_data` and to what
`python -m harness.train` does with the same folder (its check before anything is written, then the
model's build in the run): each is one line naming the file and what to do, the data cannot train,
and no file of the folder is lost or changed."""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from harness import check_data, registry
from harness.config import compose
from harness.interface import DataError, RunContext
from harness.train import check_dataset
from reference_models.detection.generate import GeneratorSpec
from reference_models.detection.generate import ensure as coco_ensure
from reference_models.text.language import LanguageSpec
from reference_models.gnmt.generate import write as write_wmt
from reference_models.ncf import generate as ncf_generate
from reference_models.ncf.generate import GeneratorSpec as RatingsSpec
from reference_models.resnet.generate import ImageSpec
from reference_models.resnet.generate import write as write_images
from reference_models.transformer.generate import CorpusSpec
from reference_models.transformer.generate import write as write_corpus
from tests.helpers import run_cli
from tests.helpers import said as said_by
from tests.interface.test_generated import snapshot

SMALL_RATINGS = ["dataset.generator.users=400", "dataset.generator.items=2500", "dataset.generator.mean_ratings=40"]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("made")
    write_wmt(LanguageSpec(train_pairs=300, dev_pairs=10, test_pairs=20, seed=4), root / "wmt16")
    write_corpus(CorpusSpec(LanguageSpec(train_pairs=300, dev_pairs=10, test_pairs=20, seed=4), train_shards=2),
                 root / "wmt17")
    return {"wmt17": root / "wmt17", "coco": coco_ensure(GeneratorSpec(train_images=12, val_images=4, seed=5), root / "coco"),
            "imagenet": write_images(ImageSpec(classes=3, train_per_class=6, val_per_class=2), root / "imagenet",
                                     workers=1),
            "wmt16": root / "wmt16",
            "ml": ncf_generate.write(RatingsSpec(users=300, items=400, mean_ratings=30.0), root / "ml",
                                     workers=1).parent}


def _copy(made, name: str, tmp_path: Path) -> Path:
    """A real dataset: the generator's files without its stamp."""
    out = tmp_path / name
    shutil.copytree(made[name], out, symlinks=True)
    (out / "GENERATED.json").unlink(missing_ok=True)
    return out


def _overrides(model: str, root: Path) -> list[str]:
    return [f"model={model}", f"+debug={model}", f"dataset.path={root}", "dataset.generator=null", "model.batch_size=2"]


def _check(capsys, overrides: list[str]) -> tuple[int, list[str]]:
    """check_data's exit status and its error lines, without their prefixes."""
    code = check_data.main(overrides)
    out = capsys.readouterr()
    lines = [line[len("error: "):] for line in out.out.splitlines() if line.startswith("error: ")]
    lines += [line[len("harness.check_data: error: "):] for line in out.err.splitlines()
              if line.startswith("harness.check_data: error: ")]
    return code, lines


def _train(overrides: list[str]) -> str:
    """The one line harness.train's data checks end with: before a run directory is made, else when
    the run prepares the folder and builds the model."""
    cfg = compose([*overrides, "seed=1", "device=cpu"])
    OmegaConf.resolve(cfg)
    spec = registry.get(str(cfg.model.name))
    assert spec.task is not None
    with pytest.raises(DataError) as caught:
        check_dataset(cfg)
        folder = spec.task.prepare(cfg)
        spec.build(RunContext(cfg=cfg, data_dir=Path(folder), device=torch.device("cpu"), rank=0, world_size=1,
                              seed=1, shared_seed=2))
    message = str(caught.value)
    assert "\n" not in message
    return message


def _both(capsys, model: str, root: Path) -> tuple[str, str]:
    """The one line of each command for the folder, which neither changes."""
    before = snapshot(root)
    code, lines = _check(capsys, _overrides(model, root))
    assert code == 1 and len(lines) == 1, lines
    message = _train(_overrides(model, root))
    assert snapshot(root) == before
    return lines[0], message


@pytest.mark.parametrize("link", ["loop", "outside"])
def test_a_folder_link_in_a_class_folder_that_loops_or_leaves_it_is_refused(made, tmp_path, capsys, link):
    root = _copy(made, "imagenet", tmp_path)
    first = sorted((root / "train").iterdir())[0]
    if link == "loop":  # 18 images would become hundreds, all of the first class
        (first / "up").symlink_to("..")
        said = f"{first}/up is a link to {root}/train, a folder that holds it: the images below it would be read " \
               f"again and again, all labelled {first.name}; remove the link"
    else:
        (tmp_path / "elsewhere").mkdir()
        (first / "more").symlink_to(tmp_path / "elsewhere")
        said = f"{first}/more is a link to {tmp_path}/elsewhere, outside its class folder: its images would be " \
               f"labelled {first.name}; remove the link, or copy the images into the class folder"
    assert _both(capsys, "resnet", root) == (said, said)


@pytest.mark.timeout(120)  # reading the FIFO would wait for ever
@pytest.mark.parametrize("dataset", ["imagenet", "coco", "coco annotations"])
def test_a_fifo_named_as_an_image_is_refused_not_read(made, tmp_path, capsys, dataset):
    root = _copy(made, dataset.split()[0], tmp_path)
    if dataset == "imagenet":
        fifo = sorted((root / "train").iterdir())[1] / "zz.JPEG"
        os.mkfifo(fifo)
        said = f"{fifo} is a FIFO (named pipe), not an image file: reading it would wait or fail; remove it, or put " \
               "the image there"
        assert _both(capsys, "resnet", root) == (said, said)
    elif dataset == "coco annotations":
        fifo = root / "annotations" / "instances_val2017.json"
        fifo.unlink()
        os.mkfifo(fifo)
        said = f"{fifo} is a FIFO (named pipe): point dataset.path at a COCO 2017 folder (scripts/prepare_coco2017.sh " \
               "unpacks the archives into one)"
        assert _both(capsys, "ssd", root) == (said, said)
    else:
        fifo = (root / "train2017" / "000000000003.jpg").resolve()
        fifo.unlink()
        os.mkfifo(fifo)
        checked, trained = _both(capsys, "ssd", root)
        assert checked.startswith(f"{fifo} is a FIFO (named pipe), not an image file (image 3 of "
                                  "instances_train2017.json): put the split's images in")
        assert trained.startswith(checked.split(")")[0])


@pytest.mark.parametrize("vocab", ["empty", "degenerate"])
def test_an_empty_or_degenerate_gnmt_vocabulary_is_refused(made, tmp_path, capsys, vocab):
    root = _copy(made, "wmt16", tmp_path)
    path = root / "vocab.bpe.32000"
    units = path.read_text(encoding="utf-8").splitlines()
    path.write_text("" if vocab == "empty" else "\n".join(units[:5]) + "\n", encoding="utf-8")
    checked, trained = _both(capsys, "gnmt", root)
    assert checked == trained
    if vocab == "empty":
        assert checked == f"{path} lists no BPE unit (it is empty or blank): use the vocabulary made with the data " \
                          "(scripts/download_wmt16.sh writes vocab.bpe.32000 beside the BPE files)"
    else:
        assert re.match(rf"{path} holds 16 entries and lacks \d+% of the BPE units of train.tok.clean.bpe.32000.en and "
                        r"train.tok.clean.bpe.32000.de \([\d,]+ of [\d,]+, e.g. '.+'\), which would all train as <unk>: "
                        r"use the vocabulary made with the data", checked)


@pytest.mark.parametrize("vocab,said", [
    ("", " is empty, without the reserved subtoken '<pad>_'"),
    ("'the_'\n", " line 1 is 'the_', not the reserved subtoken '<pad>_'"),
])
def test_a_transformer_vocabulary_without_its_reserved_subtokens_is_refused(made, tmp_path, capsys, vocab, said):
    root = _copy(made, "wmt17", tmp_path)
    path = root / "vocab.ende.32768"
    path.write_text(vocab, encoding="utf-8")
    message = f"{path}{said}: a vocabulary starts with '<pad>_', '<EOS>_' (ids 0 and 1); use the one the training " \
              "shards were made with"
    assert _both(capsys, "transformer", root) == (message, message)


@pytest.mark.parametrize("fault", ["categories", "images", "degenerate polygons"])
def test_coco_annotations_without_a_list_or_a_usable_image_say_why(made, tmp_path, capsys, fault):
    root = _copy(made, "coco", tmp_path)
    path = root / "annotations" / "instances_train2017.json"
    doc = json.loads(path.read_text())
    if fault == "degenerate polygons":
        for a in doc["annotations"]:
            a["segmentation"] = [[1.0, 2.0, 3.0, 4.0]]  # two points: no polygon
    else:
        del doc[fault]
    path.write_text(json.dumps(doc))
    checked, trained = _both(capsys, "maskrcnn", root)
    assert checked == trained
    if fault == "degenerate polygons":
        assert checked.startswith(f"{path} holds no usable images: none of its 12 images has an annotation training "
                                  f"can use ({len(doc['annotations'])} annotations without a polygon of 3 or more ")
    else:
        assert checked == f"{path} has no {fault!r} list: a COCO instances file holds images, annotations and " \
                          "categories; use the dataset's own instances_<split>2017.json (scripts/prepare_coco2017.sh " \
                          "unpacks it) or add the missing list"


def test_imagenet_without_class_folders_is_one_line_before_anything_is_written(made, tmp_path, capsys):
    root = _copy(made, "imagenet", tmp_path)
    for split in ("train", "val"):
        for folder in (root / split).iterdir():
            shutil.rmtree(folder)
    said = f"{root}/train holds no class folders: the images go in train/<wnid>/*.JPEG, one folder per class; point " \
           "dataset.path at an ImageNet folder"
    checked, trained = _both(capsys, "resnet", root)
    assert checked.startswith(said) and trained == checked
    with pytest.raises(DataError, match=f"^{root}/train holds no class folders"):
        check_dataset(compose(_overrides("resnet", root)))  # harness.train: exit 2, before its run directory


def test_an_unreadable_class_folder_says_so(made, tmp_path, capsys, monkeypatch):
    root = _copy(made, "imagenet", tmp_path)
    locked = sorted((root / "val").iterdir())[2]
    scandir = os.scandir

    def refuse(path="."):  # chmod 000 does not stop root, who runs these tests in containers
        if os.fspath(path) == str(locked):
            raise PermissionError(errno.EACCES, "Permission denied", str(locked))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refuse)
    said = f"{locked} cannot be read (Permission denied): make it readable (chmod -R a+rX {locked})"
    assert _both(capsys, "resnet", root) == (said, said)


@pytest.mark.parametrize("fault,line", [
    ("1,2,4.0\n", "line 3 has 3 fields where the header has 4 ('1,2,4.0')"),
    ("1,x,4.0,964982703\n", "line 3 has movieId 'x', not an integer ('1,x,4.0,964982703')"),
    (None, "it is empty"),
])
def test_a_bad_or_short_ratings_row_or_an_empty_file_names_the_file_and_line(made, tmp_path, capsys, fault, line):
    root = _copy(made, "ml", tmp_path)
    path = root / "ratings.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("" if fault is None else "".join([lines[0], lines[1], fault, *lines[2:]]))
    said = f"{path} is not a MovieLens ratings.csv: {line} (each row is userId,movieId,rating,timestamp, ids and " \
           "timestamp integers; scripts/download_ml20m.sh fetches ml-20m)"
    assert _both(capsys, "ncf", root) == (said, said)


def test_a_generated_folder_the_user_added_to_is_kept_and_named(tmp_path, capsys):
    overrides = ["model=ncf", f"data_root={tmp_path}/data", *SMALL_RATINGS]
    assert check_data.main(overrides) == 0  # generated on first use
    capsys.readouterr()
    folder = tmp_path / "data" / "ncf_embedded"
    (folder / "notes.txt").write_text("the user's own notes\n")
    (folder / "extra").mkdir()
    (folder / "extra" / "ratings_2024.csv").write_text("userId,movieId,rating,timestamp\n")
    before = snapshot(folder)
    code, lines = _check(capsys, overrides)
    said = f"{folder} differs from what its generator wrote (extra/ is not a file its generator wrote), so it is kept " \
           f"as yours: to regenerate it on purpose, delete it (rm -r {folder}) and run again, or set dataset.path to " \
           "another folder"
    assert code == 1 and lines == [said]
    with pytest.raises(DataError) as caught:  # harness.train: exit 2, before its run directory
        check_dataset(compose(overrides))
    assert str(caught.value) == said
    assert snapshot(folder) == before


def test_a_disk_that_fills_while_generating_is_one_line_naming_data_root(tmp_path, capsys, monkeypatch):
    def fills(spec, out_dir, workers=None):
        (Path(out_dir) / "ratings.csv").write_text("userId,movieId,rating,timestamp\n")
        raise OSError(errno.ENOSPC, "No space left on device", str(Path(out_dir) / "ratings.csv"))

    monkeypatch.setattr(ncf_generate, "write", fills)
    overrides = ["model=ncf", f"data_root={tmp_path}/data", *SMALL_RATINGS]
    code, lines = _check(capsys, overrides)
    assert code == 1 and len(lines) == 1
    assert lines[0].startswith(f"cannot write {tmp_path}/data/.ncf_embedded-") and "No space left on device" in lines[0]
    assert lines[0].endswith(f"while generating the dataset {tmp_path}/data/ncf_embedded: free space there, or set "
                             "data_root to a folder on a disk with room (data_root holds every generated dataset)")
    assert [p.name for p in (tmp_path / "data").iterdir()] == [".lock-ncf_embedded"]  # nothing half-written
    assert re.sub(r"-\w+/", "-*/", _train(overrides)) == re.sub(r"-\w+/", "-*/", lines[0])  # another temporary folder


@pytest.mark.e2e
@pytest.mark.parametrize("fault", ["no class folders", "a generated folder with the user's files"])
def test_harness_train_refuses_the_folder_with_exit_2_and_writes_nothing(made, tmp_path, fault):
    """End to end, as a user runs it: the README's exit 2 and nothing written for data that cannot train."""
    if fault == "no class folders":
        root = _copy(made, "imagenet", tmp_path)
        for folder in [*(root / "train").iterdir(), *(root / "val").iterdir()]:
            shutil.rmtree(folder)
        args, said = _overrides("resnet", root), f"harness.train: error: {root}/train holds no class folders: "
    else:
        root = ncf_generate.ensure(RatingsSpec(users=400, items=2500, mean_ratings=40.0),
                                   tmp_path / "data" / "ncf_embedded").parent
        (root / "notes.txt").write_text("the user's own notes\n")
        args, said = ["model=ncf", f"data_root={tmp_path}/data", *SMALL_RATINGS], \
            f"harness.train: error: {root} differs from what its generator wrote (notes.txt is not a file its "
    before = snapshot(tmp_path)
    out = run_cli("harness.train", *args, "output_root=out", cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert len(said_lines := said_by(out.stderr)) == 1 and said_lines[0].startswith(said), out.stderr
    assert snapshot(tmp_path) == before  # no run directory, no output_root, no file of the dataset changed
