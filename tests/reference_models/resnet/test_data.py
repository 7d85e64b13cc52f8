"""Reading an ImageNet folder: the MLPerf crops, the two decoders agreeing, evaluation shards, bad folders."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
import torch
from PIL import Image
from torchvision import transforms

from harness.interface import RunContext
from harness.interface.loader import make_shard_loader
from reference_models.resnet import data
from reference_models.resnet.generate import ImageSpec, write


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write(ImageSpec(classes=3, train_per_class=6, val_per_class=2), tmp_path_factory.mktemp("d") / "d", workers=1)


def test_load_lists_every_image_with_its_class(folder):
    f = data.load(folder)
    assert len(f.classes) == 3 and len(f.train) == 18 and len(f.val) == 6
    assert sorted({label for _, label in f.val}) == [0, 1, 2]


def test_the_list_is_torchvisions_where_torchvision_reads_the_folder_right(folder, tmp_path):
    """The same classes, paths (as strings) and order as ImageFolder's, with a nested folder, a link
    inside a class folder, a link to a class folder elsewhere, other files and mixed-case extensions."""
    from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

    root = tmp_path / "d"
    shutil.copytree(folder, root)
    first, second = sorted((root / "train").iterdir())[:2]
    (first / "sub" / "deeper").mkdir(parents=True)
    for i, image in enumerate(sorted(second.glob("*.JPEG"))[:3]):
        shutil.copy(image, first / "sub" / f"b{i}.jpeg")
        shutil.copy(image, first / "sub" / "deeper" / f"a{i}.JPG")
    (first / "notes.txt").write_text("not an image")
    (first / "same").symlink_to("sub")  # inside the class folder: read twice, as torchvision reads it
    (tmp_path / "store").mkdir()
    shutil.move(str(second), tmp_path / "store" / second.name)
    second.symlink_to(tmp_path / "store" / second.name)
    classes, index = find_classes(str(root / "train"))
    listed = data.load(root)
    assert listed.classes == classes
    assert [listed.train, listed.val] == [make_dataset(str(root / s), index, extensions=IMG_EXTENSIONS)
                                          for s in ("train", "val")]
    assert len(listed.train) == 18 + 2 * 6


def test_a_folder_without_val_or_with_other_classes_is_a_one_line_error(folder, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(folder / "train", bad / "train")
    with pytest.raises(data.DatasetError, match="no val/ folder .*prepare_imagenet.py"):
        data.load(bad)
    shutil.copytree(folder / "val", bad / "val")
    shutil.rmtree(next((bad / "val").iterdir()))
    with pytest.raises(data.DatasetError, match="differ"):
        data.load(bad)


def test_the_evaluation_crop_is_resize_then_centre_crop(tmp_path):
    y, x = torch.meshgrid(torch.arange(375.0), torch.arange(500.0), indexing="ij")
    smooth = torch.stack((x / 2, y / 1.5, 128 + 60 * torch.sin(x / 40) * torch.cos(y / 30))).round().to(torch.uint8)
    path = tmp_path / "smooth.png"
    transforms.ToPILImage()(smooth).save(path)
    ours, _ = data.DecodedImages([(str(path), 0)], data.Crops(224, 256, train=False))[0]
    with Image.open(path) as image:
        theirs = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.PILToTensor()])(
            image.convert("RGB"))
    assert ours.shape == theirs.shape == (3, 224, 224) and ours.dtype == torch.uint8
    assert (ours.float() - theirs.float()).abs().mean() < 1.5  # one crop-and-resize instead of two steps


def test_training_crops_stay_inside_the_image_and_follow_the_area_range():
    crops = data.Crops(224, 256, train=True, scale=(0.05, 1.0), ratio=(0.75, 1.33))
    image = Image.new("RGB", (500, 375))
    torch.manual_seed(0)
    boxes = [crops.box(image) for _ in range(200)]
    assert all(t >= 0 and l >= 0 and t + h <= 375 and l + w <= 500 for t, l, h, w, _ in boxes)
    assert all(0.04 <= h * w / (500 * 375) <= 1.0 for _, _, h, w, _ in boxes)
    assert 60 < sum(flip for *_, flip in boxes) < 140


def test_the_gpu_decoders_batch_matches_the_workers_pil_crops(folder):
    """decode=cuda's path (bytes from the workers, one decode_jpeg call per batch, crops resized by
    torch) run on the CPU, against decode=cpu's PIL crops of the same boxes and flips."""
    samples = data.load(folder).train[:6]
    crops = data.Crops(64, 73, train=True, scale=(0.25, 1.0))
    torch.manual_seed(3)
    pil = torch.stack([data.DecodedImages(samples, crops)[i][0] for i in range(6)])
    torch.manual_seed(3)
    batch = data.collate_encoded([data.EncodedImages(samples, crops)[i] for i in range(6)])
    decoded = data.decode_batch(batch, 64, torch.device("cpu"))
    assert decoded.shape == pil.shape and decoded.dtype == torch.float32
    assert batch.labels.tolist() == [label for _, label in samples]
    assert (decoded.float() - pil.float()).abs().mean() < 3


def test_normalize_gives_float_with_the_imagenet_statistics():
    images = torch.tensor(data.MEAN).round().to(torch.uint8).view(1, 3, 1, 1).expand(2, 3, 4, 4).contiguous()
    out = data.normalize(images, channels_last=True)
    assert out.dtype == torch.float32 and out.abs().max() < 0.01
    assert out.is_contiguous(memory_format=torch.channels_last)


def test_evaluation_shards_cover_the_set_once_over_ranks():
    dataset = list(range(10))
    seen = []
    for rank in range(3):
        ctx = RunContext(cfg=None, data_dir=None, device=torch.device("cpu"), rank=rank,
                         world_size=3, seed=rank, shared_seed=0)
        seen += [int(x) for batch in make_shard_loader(dataset, ctx, batch_size=4) for x in batch]
    assert seen == dataset


@pytest.mark.parametrize("share, k", [(0.0, 0), (0.05, 0), (0.5, 3), (0.8, 5)])
def test_the_workers_share_of_a_gpu_batch_is_the_cpu_paths_crops_to_the_bit(folder, tmp_path, share, k):
    """model.cpu_decode_share: the collate decodes the last round(B x share) images with the CPU path's
    PIL crop (a CMYK file among them from the file itself, as DecodedImages reads it) and leaves the
    first B - k encoded, exactly as a batch of those alone; the labels of all B in the batch's order."""
    samples = list(data.load(folder).train[:6])
    cmyk = tmp_path / "cmyk.JPEG"
    with Image.open(samples[5][0]) as image:
        image.convert("CMYK").save(cmyk, "JPEG", quality=95)
    samples[5] = (str(cmyk), samples[5][1])
    crops = data.Crops(40, 46, train=True, scale=(0.1, 1.0))
    torch.manual_seed(4)
    cpu = [data.DecodedImages(samples, crops)[i] for i in range(6)]
    torch.manual_seed(4)
    items = [data.EncodedImages(samples, crops)[i] for i in range(6)]
    assert items[5].converted and not items[0].converted and items[5].path == str(cmyk)
    batch = data.collate_encoded(items, cpu_share=share, size=40)
    assert data.workers_share(6, share) == k and len(batch.offsets) - 1 == 6 - k
    assert batch.labels.tolist() == [label for _, label in samples]
    if k == 0:
        assert batch.pixels is None
    else:
        assert batch.pixels is not None and batch.pixels.dtype == torch.uint8 and batch.pixels.shape == (k, 3, 40, 40)
        assert torch.equal(batch.pixels, torch.stack([image for image, _ in cpu[6 - k:]]))
    alone = data.collate_encoded(items[:6 - k])
    assert torch.equal(batch.data, alone.data) and batch.offsets == alone.offsets
    assert torch.equal(batch.boxes, alone.boxes) and torch.equal(batch.flips, alone.flips)


def test_every_image_of_a_batch_may_fall_to_the_workers():
    """A small batch whose share rounds up to all of it: nothing left encoded, a batch all the same."""
    image = Image.new("RGB", (30, 20), (10, 200, 30))
    buf = io.BytesIO()
    image.save(buf, "JPEG")
    items = [data.EncodedImage(buf.getvalue(), (0, 0, 20, 30), i == 1, i, f"x{i}.JPEG", False) for i in range(2)]
    batch = data.collate_encoded(items, cpu_share=0.9, size=8)
    assert batch.offsets == [0] and batch.data.numel() == 0 and batch.boxes.shape == (0, 4)
    assert batch.pixels is not None and batch.pixels.shape == (2, 3, 8, 8) and batch.labels.tolist() == [0, 1]
