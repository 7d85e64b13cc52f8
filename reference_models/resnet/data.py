"""ImageNet in the folder layout torchvision's ImageFolder reads, with MLPerf's preprocessing.

    DATA_DIR/train/<wnid>/*.JPEG    DATA_DIR/val/<wnid>/*.JPEG

scripts/prepare_imagenet.py makes this layout of the real ImageNet; reference_models/resnet/generate.py
writes the embedded default in it. Preprocessing, as the MLPerf reference (imagenet_preprocessing.py):
- training: a random crop covering [min_crop_area, 1] of the image with an aspect ratio in
  crop_ratio (torchvision's RandomResizedCrop parameters), resized to image_size, flipped
  horizontally with probability 1/2;
- evaluation: the centre crop that resizing the shorter side to resize_size and cutting image_size
  out of the middle shows;
- both: RGB, minus the ImageNet mean, divided by its standard deviation (on the device).
Each crop is one crop-and-resize of the decoded image (PIL's resize with a box on the CPU, bilinear
with antialiasing on the GPU), so both decoders produce the same pictures. The workers hand over
uint8 images (a quarter of float32's bytes through shared memory); the device converts them. On
the GPU decode paths the workers read the files and draw the crops (EncodedImages); with
model.cpu_decode_share they also decode the last round(B x share) images of each batch, in its
collate, with the CPU path's own crop (pil_crop, collate_encoded).

Files as real ImageNet has them: 22 CMYK JPEGs and one PNG named .JPEG in the training set, and
greyscale JPEGs. The reference's preprocessing re-encodes the first two as RGB JPEGs at quality 100
and decodes every image to 3 channels; here the CPU decoder converts each to RGB as it reads it, and
decode=cuda re-encodes the first two in the worker as the reference does. Each file converted or
re-encoded is counted once (REPAIRS) for result.json's data_findings. A file that is missing,
truncated or not an image is a one-line error naming it; every file's header and end are checked
when the model is built (check_images, each rank its share of both splits), so a bad one does not
wait for the epoch or the evaluation that reads it, and `python -m harness.check_data model=resnet
dataset=imagenet` decodes every file. How the folder is listed (links, FIFOs, empty or unreadable
class folders): reference_models/resnet/listing.py.

    python -m reference_models.resnet.data DATA_DIR      # class and image counts of a dataset folder
"""
from __future__ import annotations

import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple, Optional, Sequence

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset
from torchvision.transforms import RandomResizedCrop

from harness.interface.findings import SampleFlags, describe_command
from harness.interface.images import DECODE_ERRORS, EOI, find_problems, summary_of, what_is_wrong
from reference_models.resnet import listing
from reference_models.resnet.listing import SPLITS, DatasetError

MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)
# what the loaders convert or re-encode as they read, one flag per file (data_findings)
REPAIRS = ("cmyk_to_rgb", "greyscale_to_rgb", "not_jpeg")


@dataclass(frozen=True)
class Folder:
    classes: list[str]  # wnids, sorted: label i is classes[i]
    train: list[tuple[str, int]]  # (path, label)
    val: list[tuple[str, int]]


def check_layout(root: str | Path) -> None:
    """train/ and val/ hold the same class folders (reference_models/resnet/listing.py); no image is listed."""
    listing.classes_of(Path(root))


def load(root: str | Path) -> Folder:
    """Every image's path and label, as torchvision's ImageFolder lists them (reference_models/resnet/listing.py:
    links that loop or lead out of a class folder, and files that are not regular, are refused)."""
    root = Path(root)
    classes = listing.classes_of(root)
    return Folder(classes, *(listing.images(root, split, classes) for split in SPLITS))


@dataclass(frozen=True)
class Crops:
    """How each image is cut: random crops and flips for training, the centre crop for evaluation."""

    size: int
    resize: int
    train: bool
    scale: tuple[float, float] = (0.05, 1.0)
    ratio: tuple[float, float] = (0.75, 1.33)

    def box(self, image: Image.Image) -> tuple[int, int, int, int, bool]:
        """(top, left, height, width, flip) in the image's pixels; reads only its header."""
        if self.train:
            top, left, h, w = RandomResizedCrop.get_params(image, list(self.scale), list(self.ratio))
            return top, left, h, w, bool(torch.rand(()) < 0.5)
        width, height = image.size
        side = max(1, round(min(width, height) * self.size / self.resize))
        return (height - side) // 2, (width - side) // 2, side, side, False


def _unreadable(path: str, err: BaseException) -> DatasetError:
    if isinstance(err, FileNotFoundError):
        return DatasetError(f"{path} is missing (it was there when the folder was listed): restore it, or start "
                            "again so that the list is made anew")
    return DatasetError(f"{path} {what_is_wrong(err)}: replace it with a good copy or delete it")


def _note(flags: Optional[SampleFlags], i: int, image: Image.Image) -> None:
    """Count what reading this file converts: CMYK or greyscale to RGB, a PNG (or other) named .JPEG."""
    if flags is None:
        return
    if image.format != "JPEG":
        flags.mark(i, "not_jpeg")
    if image.mode == "CMYK":
        flags.mark(i, "cmyk_to_rgb")
    elif image.mode != "RGB":
        flags.mark(i, "greyscale_to_rgb")


def pil_crop(image: Image.Image, box: tuple[int, int, int, int], flip: bool, size: int) -> torch.Tensor:
    """uint8 (3, size, size): the image in RGB, its box (top, left, height, width) resized to size x
    size by PIL's bilinear filter, mirrored where `flip`. The CPU path's crop: the workers make the
    same pixels whether they decode every image (DecodedImages) or a share of a GPU-decoded batch
    (collate_encoded with cpu_share)."""
    top, left, h, w = box
    crop = image.convert("RGB").resize((size, size), Image.Resampling.BILINEAR, box=(left, top, left + w, top + h))
    if flip:
        crop = crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    return torch.from_numpy(np.asarray(crop).copy()).permute(2, 0, 1)


class ImageFiles(Dataset):
    """A split's (path, label) samples with the crops drawn for them; a subclass reads one. `flags`
    (shared with the workers) counts the files that were not RGB JPEGs."""

    def __init__(self, samples: Sequence[tuple[str, int]], crops: Crops, flags: Optional[SampleFlags] = None):
        self.samples, self.crops, self.flags = samples, crops, flags

    def __len__(self) -> int:
        return len(self.samples)

    def describe_sample(self, i: int) -> str:
        return str(self.samples[i][0])


class DecodedImages(ImageFiles):
    """(uint8 CHW crop, label): the worker decodes, crops, resizes and flips (PIL)."""

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        path, label = self.samples[i]
        try:
            with Image.open(path) as image:
                top, left, h, w, flip = self.crops.box(image)
                _note(self.flags, i, image)
                crop = pil_crop(image, (top, left, h, w), flip, self.crops.size)
        except DECODE_ERRORS as err:
            raise _unreadable(path, err) from None
        return crop, label


class EncodedImage(NamedTuple):
    """One training image as EncodedImages hands it to the collate."""

    data: bytes  # the JPEG the GPU decodes: the file's bytes, or its re-encoding (`converted`)
    box: tuple[int, int, int, int]  # top, left, height, width
    flip: bool
    label: int
    path: str  # names the file where the workers' share (collate_encoded's cpu_share) cannot decode it
    converted: bool  # `data` is a re-encoding (not a JPEG, or CMYK): the workers' share reads the file itself


class EncodedImages(ImageFiles):
    """EncodedImage (JPEG bytes, crop box, flip, label, path): the worker reads the file and draws the crop from its
    header; the GPU decodes (decode='cuda'). A file that is not a JPEG, or a CMYK one, is re-encoded
    here as an RGB JPEG at quality 100, as the reference's preprocessing re-encodes them; a JPEG
    without its end marker is decoded here to be sure it is whole (the GPU's error would not name it)."""

    def __getitem__(self, i: int) -> EncodedImage:
        path, label = self.samples[i]
        converted = False
        try:
            data = Path(path).read_bytes()
            with Image.open(io.BytesIO(data)) as image:
                top, left, h, w, flip = self.crops.box(image)
                _note(self.flags, i, image)
                if image.format != "JPEG" or image.mode == "CMYK":
                    out = io.BytesIO()
                    image.convert("RGB").save(out, "JPEG", quality=100)
                    data, converted = out.getvalue(), True
                elif EOI not in data[-4096:]:
                    image.load()
        except DECODE_ERRORS as err:
            raise _unreadable(path, err) from None
        return EncodedImage(data, (top, left, h, w), flip, label, str(path), converted)


@dataclass
class EncodedBatch:
    """A training batch of B images for the GPU decode path: the first B - k still encoded, the last k
    (collate_encoded's cpu_share) decoded and cropped by the workers; labels of all B in batch order."""

    data: torch.Tensor  # the encoded images' bytes, end to end (one shared-memory block per batch)
    offsets: list[int]  # encoded image i is data[offsets[i]:offsets[i + 1]]
    boxes: torch.Tensor  # (B - k, 4) top, left, height, width
    flips: torch.Tensor  # (B - k,) bool
    labels: torch.Tensor  # (B,)
    pixels: Optional[torch.Tensor] = None  # (k, 3, S, S) uint8: the workers' crops, rows B - k .. B - 1

    def pin_memory(self) -> "EncodedBatch":
        """The DataLoader's pin thread calls this (it pins only tensors and containers of them, not a
        dataclass): with the bytes in page-locked memory the GPU decoder's copies of the files are
        queued on its stream instead of staged through pageable memory one file at a time (the
        profile of docs/benchmarks/pipeline_2026-12-01.md: a pageable copy and an event sync per
        image, 39.5 ms of the decode thread per batch of 256)."""
        self.data, self.boxes, self.flips, self.labels = (t.pin_memory() for t in
                                                          (self.data, self.boxes, self.flips, self.labels))
        if self.pixels is not None:  # the workers' crops: one queued copy to the device, not a staged one
            self.pixels = self.pixels.pin_memory()
        return self


def workers_share(batch_size: int, cpu_share: float) -> int:
    """How many of a batch's images the workers decode: the last round(batch_size x cpu_share)
    (Python's round, half to even), the same count for every batch of that size."""
    return round(batch_size * cpu_share)


def collate_encoded(items: Sequence[EncodedImage], cpu_share: float = 0.0, size: int = 0, hint: str = ""
                    ) -> EncodedBatch:
    """The DataLoader's collate for the GPU decode paths, run in the worker that loaded the items.
    cpu_share > 0 (model.cpu_decode_share): the last workers_share(len(items), cpu_share) images are
    decoded, cropped to `size`, resized and flipped here with PIL, exactly as DecodedImages does
    (pil_crop), so idle workers take that share of the decode thread's work; the GPU decodes the
    rest. `functools.partial(collate_encoded, cpu_share=..., size=...)` pickles to the workers. A file
    the workers cannot decode is one line naming it, with `hint` (the check-data command) as the
    loader adds it to the dataset's own errors."""
    k = workers_share(len(items), cpu_share) if cpu_share > 0 else 0
    if k and size < 1:
        raise ValueError(f"collate_encoded: cpu_share={cpu_share} needs the crops' size (got {size})")
    encoded, decoded = items[: len(items) - k], items[len(items) - k:]
    offsets = np.concatenate(([0], np.cumsum([len(item.data) for item in encoded], dtype=np.int64))).tolist()
    joined = bytearray(b"".join(item.data for item in encoded))
    data = torch.frombuffer(joined, dtype=torch.uint8) if joined else torch.empty(0, dtype=torch.uint8)
    pixels = torch.stack([_decode_in_worker(item, size, hint) for item in decoded]) if k else None
    return EncodedBatch(data, offsets, torch.tensor([item.box for item in encoded], dtype=torch.int64).view(-1, 4),
                        torch.tensor([item.flip for item in encoded], dtype=torch.bool),
                        torch.tensor([item.label for item in items]), pixels)


def _decode_in_worker(item: EncodedImage, size: int, hint: str) -> torch.Tensor:
    """The CPU path's crop of one encoded item: decoded from the bytes the worker already read, or
    from the file itself where those are a re-encoding (a CMYK JPEG, a PNG: DecodedImages converts
    the file, not a JPEG of it)."""
    try:
        with Image.open(item.path if item.converted else io.BytesIO(item.data)) as image:
            return pil_crop(image, item.box, item.flip, size)
    except DECODE_ERRORS as err:
        error = _unreadable(item.path, err)
        raise (DatasetError(f"{error} ({hint} lists every such problem)") if hint else error) from None


def decode_batch(batch: EncodedBatch, size: int, device: torch.device) -> torch.Tensor:
    """float32 (B, 3, size, size) pixel values (0-255) on `device`: nvJPEG decodes the batch on a CUDA
    device (libjpeg-turbo on the CPU, which the tests use), then each crop is resized there and the
    flipped ones are flipped together. Three kernels per image: the batch costs a few milliseconds
    of launches, where the workers would spend seconds decoding."""
    import warnings

    from torchvision.io import ImageReadMode, decode_jpeg

    blobs = [batch.data[a:b] for a, b in zip(batch.offsets, batch.offsets[1:])]
    with warnings.catch_warnings():  # torchvision 0.29 points to TorchCodec, which does not decode batches of JPEGs
        warnings.simplefilter("ignore", DeprecationWarning)
        images = decode_jpeg(blobs, mode=ImageReadMode.RGB, device=device)
    out = torch.empty((len(images), 3, size, size), dtype=torch.float32, device=device)
    for i, (image, (top, left, h, w)) in enumerate(zip(images, batch.boxes.tolist())):
        crop = image[None, :, top: top + h, left: left + w].float()
        out[i] = torch.nn.functional.interpolate(crop, size=(size, size), mode="bilinear", antialias=True,
                                                 align_corners=False)[0]
    flips = batch.flips.to(device)
    return torch.where(flips.view(-1, 1, 1, 1), out.flip(-1), out)


@lru_cache(maxsize=None)
def _mean_std(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    # made once per device and kept: a tensor built from a list on a GPU is a copy from pageable host memory,
    # which torch waits for (a sync point in every step, the GPU's queue drained before the forward is
    # launched) and which a CUDA-graph capture refuses
    return torch.tensor(MEAN, device=device).view(1, 3, 1, 1), torch.tensor(STD, device=device).view(1, 3, 1, 1)


def normalize(images: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """Pixel values (uint8, or float from decode_batch) (B, 3, H, W) -> float32, minus the ImageNet
    mean, over its standard deviation."""
    mean, std = _mean_std(images.device)
    out = (images.float() - mean) / std
    return out.contiguous(memory_format=torch.channels_last) if channels_last else out


def check_images(samples: Sequence[tuple[str, int]], hint: str = "") -> None:
    """A DatasetError naming the first of `samples` whose header does not open or whose JPEG is cut
    short (harness.interface.images), and how many more there are; the model checks its share of
    both splits with it when it is built."""
    problems = find_problems((path, None) for path, _ in samples)
    if problems:
        lists = f"; {hint} lists every file with a problem" if hint else ""
        raise DatasetError(summary_of(problems, f"replace or delete it{lists}"))


def describe(folder: Folder) -> str:
    return f"{len(folder.classes)} classes, {len(folder.train):,} training images, {len(folder.val):,} validation images"


if __name__ == "__main__":
    describe_command("python -m reference_models.resnet.data DATA_DIR", lambda path: describe(load(path)))
