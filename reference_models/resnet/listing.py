"""The class folders and images of an ImageNet folder, listed as torchvision's ImageFolder lists them.

    DATA_DIR/train/<wnid>/*.JPEG    DATA_DIR/val/<wnid>/*.JPEG

The list is torchvision's (find_classes, make_dataset): the class folders sorted by name, then per
class every file with an image extension under its folder, folders in path order, files by name,
links followed. torchvision's walk follows a folder link wherever it leads: one that points above
itself (train/n01/up -> ..) makes it read the dataset again under that class until the path grows
too long (24 images become 984, all labelled n01), and one into another class folder labels that
class's images as this one. A file named .JPEG that is not a regular file (a FIFO) blocks the
worker that opens it for ever. Here the same list is made by a walk that refuses, in one line naming
them, a folder link that loops or leads out of its class folder, a file with an image extension that
is not a regular file (or a link to one), a folder it cannot read and a class folder without
images. Links to class folders or to files elsewhere (a dataset assembled from links) are read.

    python -m reference_models.resnet.data DATA_DIR      # class and image counts of a dataset folder
"""
from __future__ import annotations

import os
from pathlib import Path

from torchvision.datasets.folder import IMG_EXTENSIONS

from harness.interface import DataError
from harness.interface.images import file_kind

SPLITS = ("train", "val")
_FIX_LAYOUT = ("point dataset.path at an ImageNet folder with train/<wnid>/ and val/<wnid>/ "
               "(scripts/prepare_imagenet.py makes it) or use dataset=resnet_embedded")


class DatasetError(DataError):
    pass


def split_dir(root: Path, split: str) -> Path:
    path = root / split
    if not path.is_dir():
        raise DatasetError(f"no {split}/ folder in {root}: {_FIX_LAYOUT}")
    return path


def class_folders(root: Path, split: str) -> list[str]:
    """The class folders (wnids) of one split, sorted as torchvision's find_classes sorts them."""
    path = split_dir(root, split)
    try:
        classes = sorted(entry.name for entry in os.scandir(path) if entry.is_dir())
    except OSError as err:
        raise DatasetError(f"{path} cannot be read ({err.strerror or err}): make it readable "
                           f"(chmod -R a+rX {path})") from None
    if not classes:
        raise DatasetError(f"{path} holds no class folders: the images go in {split}/<wnid>/*.JPEG, one folder per "
                           f"class; {_FIX_LAYOUT}")
    return classes


def classes_of(root: Path) -> list[str]:
    """The classes (train/'s folders, which val/ must have too); a DatasetError when either split
    is missing, unreadable, holds no class folder, or the two differ."""
    classes = class_folders(root, "train")
    val = class_folders(root, "val")
    if val != classes:
        differ = sorted(set(classes) ^ set(val))[:3]
        raise DatasetError(f"train/ has {len(classes)} class folders and val/ {len(val)}, which differ "
                           f"(e.g. {', '.join(differ)}): both need the same <wnid> folders")
    return classes


def images(root: Path, split: str, classes: list[str]) -> list[tuple[str, int]]:
    """(path, label) of every image of the split, in torchvision's make_dataset order and spelling."""
    directory = str(split_dir(root, split))
    samples: list[tuple[str, int]] = []
    problems: list[str] = []
    for label, name in enumerate(classes):
        target = os.path.join(directory, name)
        found = [(os.path.join(folder, fname), label)
                 for folder, fnames in sorted(_walk(target, name, problems)) for fname in sorted(fnames)]
        if not found and not problems:
            problems.append(f"{target} holds no image ({', '.join(IMG_EXTENSIONS)}): put the class's images there, "
                            "or remove the class folder from both train/ and val/")
        samples += found
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise DatasetError(problems[0] + more)
    return samples


def _walk(top: str, name: str, problems: list[str]) -> list[tuple[str, list[str]]]:
    """(folder, image file names) of every folder under the class folder `top`, following links that
    stay inside it without looping; what cannot be listed or read is added to `problems`."""
    top_real = os.path.realpath(top)
    out: list[tuple[str, list[str]]] = []
    todo: list[tuple[str, tuple[str, ...]]] = [(top, (top_real,))]  # a folder, and the real paths leading to it
    while todo:
        folder, chain = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as err:
            problems.append(f"{folder} cannot be read ({err.strerror or err}): make it readable "
                            f"(chmod -R a+rX {folder})")
            continue
        fnames = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                if entry.name.lower().endswith(IMG_EXTENSIONS):
                    fnames.append(entry.name)
                    if not _regular(entry):
                        problems.append(_not_regular(entry.path))
                continue
            real = os.path.realpath(entry.path)
            if entry.is_symlink():
                if real in chain or chain[-1].startswith(real.rstrip(os.sep) + os.sep):  # back up its own path
                    problems.append(f"{entry.path} is a link to {real}, a folder that holds it: the images below it "
                                    f"would be read again and again, all labelled {name}; remove the link")
                    continue
                if real != top_real and not real.startswith(top_real + os.sep):
                    problems.append(f"{entry.path} is a link to {real}, outside its class folder: its images would be "
                                    f"labelled {name}; remove the link, or copy the images into the class folder")
                    continue
            todo.append((entry.path, chain + (real,)))
        out.append((folder, fnames))
    return out


def _regular(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()  # follows a link: a link to a regular file is one
    except OSError:
        return False


def _not_regular(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        target = os.readlink(path) if os.path.islink(path) else None
        what = f"a link to {target}, which cannot be read ({err.strerror})" if target else f"unreadable ({err.strerror})"
        return f"{path} is {what}: restore what it points to, or remove it"
    return (f"{path} is {file_kind(mode)}, not an image file: reading it would wait or fail; remove it, or put the "
            "image there")
