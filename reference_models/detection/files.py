"""The files of a COCO-format dataset folder: where the annotation files and image folders are (its
`Layout`), and an annotation file read through pycocotools with the lists an instances file must hold.

COCO 2017's layout (`COCO2017`, SSD's and Mask R-CNN's, the default everywhere):

    root/annotations/instances_train2017.json   root/train2017/<file_name>
    root/annotations/instances_val2017.json     root/val2017/<file_name>

A model whose reference reads another layout of the same COCO JSON (RetinaNet's openimages-mlperf:
root/train/labels/openimages-mlperf.json and root/train/data/) gives its own `Layout`.

    python -c "from reference_models.detection.files import check_layout; check_layout('outputs/datasets/ssd_embedded')"
"""
from __future__ import annotations

import contextlib
import io
import stat
from dataclasses import dataclass
from pathlib import Path

from pycocotools.coco import COCO

from harness.interface import DataError
from harness.interface.images import file_kind

SPLITS = ("train", "val")


@dataclass(frozen=True)
class Layout:
    """Where a split's annotation file and image folder are under the dataset's root: `images` and
    `annotations` are paths with `{split}` standing for the split's folder name (`folders`: train's,
    then val's), which also names the split in messages; `folder_hint` and `images_hint` say in
    messages what such a folder is and what writes its images."""

    images: str
    annotations: str
    folders: tuple[str, str]
    folder_hint: str
    images_hint: str

    def name(self, split: str) -> str:
        """The split's folder name: train2017, val2017 (COCO), train, validation (OpenImages)."""
        return self.folders[SPLITS.index(split)]

    def images_dir(self, root: str | Path, split: str) -> Path:
        return Path(root) / self.images.format(split=self.name(split))

    def annotation_file(self, root: str | Path, split: str) -> Path:
        return Path(root) / self.annotations.format(split=self.name(split))


COCO2017 = Layout(images="{split}", annotations="annotations/instances_{split}.json",
                  folders=("train2017", "val2017"),
                  folder_hint="a COCO 2017 folder (scripts/prepare_coco2017.sh unpacks the archives into one)",
                  images_hint="scripts/prepare_coco2017.sh unpacks them")


def check_layout(root: str | Path, layout: Layout = COCO2017) -> Path:
    """The dataset folder, or a DataError naming the first missing piece and how to get it."""
    root = Path(root)
    for split in SPLITS:
        ann, images = layout.annotation_file(root, split), layout.images_dir(root, split)
        for need, kind in ((ann, stat.S_ISREG), (images, stat.S_ISDIR)):
            try:
                mode = need.stat().st_mode
            except OSError:
                mode = None
            if mode is None or not kind(mode):  # a FIFO named as the annotation file would block its reader
                what = "is missing" if mode is None else f"is {file_kind(mode)}"
                raise DataError(f"{need} {what}: point dataset.path at {layout.folder_hint}")
    return root


def load_coco(path: Path) -> COCO:
    """pycocotools' COCO index of an annotation file, without its progress prints."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            coco = COCO(str(path))
    except (ValueError, KeyError, TypeError, AssertionError) as err:
        # pycocotools asserts that the file holds a JSON object; json's errors give the line and column
        raise DataError(f"{path} is not a COCO annotation file ({type(err).__name__}: {err})") from None
    for key in ("images", "annotations", "categories"):  # pycocotools indexes a file without them, then fails later
        if not isinstance(coco.dataset.get(key), list):
            what = f"no {key!r} list" if key not in coco.dataset else f"a {key!r} that is not a list"
            raise DataError(f"{path} has {what}: a COCO instances file holds images, annotations and categories; "
                            "use the dataset's own instances_<split>2017.json (scripts/prepare_coco2017.sh unpacks "
                            "it) or add the missing list")
    return coco
