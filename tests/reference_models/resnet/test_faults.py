"""Faults and quirks in an ImageNet folder, put into the generator's JPEGs: a truncated file is named (at
build time, or by the worker that meets it when it was cut short during the run); the CMYK, greyscale and PNG files
real ImageNet holds are read as the reference reads them and counted for the run's record."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf
from PIL import Image
from torchvision.io import ImageReadMode, decode_jpeg

from harness import registry
from harness.config import compose
from harness.interface import DataError, RunContext
from reference_models.resnet import data
from reference_models.resnet.generate import ImageSpec, write
from tests.helpers import run_cli, said, strict_json


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write(ImageSpec(classes=3, train_per_class=6, val_per_class=2), tmp_path_factory.mktemp("d") / "d", workers=1)


@pytest.fixture()
def bad(folder, tmp_path) -> Path:
    out = tmp_path / "bad"
    shutil.copytree(folder, out)
    (out / "GENERATED.json").unlink(missing_ok=True)
    return out


def _files(root: Path, split: str) -> list[Path]:
    return sorted((root / split).rglob("*.JPEG"))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def _quirks(root: Path, split: str) -> list[Path]:
    """A CMYK JPEG, a greyscale JPEG and a PNG named .JPEG, as real ImageNet holds them."""
    cmyk, grey, png = _files(root, split)[:3]
    for path, mode in ((cmyk, "CMYK"), (grey, "L")):
        with Image.open(path) as image:
            converted = image.convert(mode)
        converted.save(path, "JPEG", quality=95)
    with Image.open(png) as image:
        buf = io.BytesIO()
        image.save(buf, "PNG")
    png.write_bytes(buf.getvalue())
    return [cmyk, grey, png]


def _build(root: Path, *overrides: str):
    cfg = compose(["model=resnet", "+debug=resnet", f"dataset.path={root}", "dataset.generator=null", "seed=1",
                   "model.batch_size=6", "model.eval_batch_size=6", *overrides])
    OmegaConf.resolve(cfg)
    return registry.get("resnet").build(RunContext(cfg=cfg, data_dir=root, device=torch.device("cpu"),
                                                   rank=0, world_size=1, seed=1, shared_seed=2))


def test_a_truncated_validation_jpeg_stops_the_build_not_the_first_evaluation(bad):
    second, first = _files(bad, "val")[3], _files(bad, "val")[1]
    _truncate(first)
    _truncate(second)
    with pytest.raises(DataError) as caught:
        _build(bad)
    message = str(caught.value)
    assert message.startswith(f"{first} is truncated or corrupt (") and "(and 1 more): replace or delete it" in message
    assert "python -m harness.check_data model=resnet" in message and "\n" not in message


def test_a_truncated_training_jpeg_stops_the_build_not_the_epoch_that_reads_it(bad):
    path = _files(bad, "train")[4]
    _truncate(path)
    with pytest.raises(DataError) as caught:
        _build(bad)
    message = str(caught.value)
    assert message.startswith(f"{path} is truncated or corrupt (") and message.count(": replace or delete it") == 1
    assert "python -m harness.check_data model=resnet" in message and "\n" not in message


@pytest.mark.parametrize("workers", [0, 2])
def test_a_training_jpeg_cut_short_during_the_run_is_one_line_naming_it_from_a_worker_or_not(bad, workers):
    bench = _build(bad, f"model.workers={workers}")
    path = _files(bad, "train")[4]
    _truncate(path)  # after the build's check: damaged while the run reads the folder
    with pytest.raises(DataError) as caught:
        list(bench.train_batches(1))
    message = str(caught.value)
    assert message.startswith(f"{path} is truncated or corrupt (") and "replace it with a good copy" in message
    assert "\n" not in message and "Caught" not in message


def test_cmyk_greyscale_and_png_files_are_read_as_rgb_and_counted_once(bad):
    _quirks(bad, "train")
    _quirks(bad, "val")
    bench = _build(bad, "model.workers=2")
    for epoch in (1, 2):  # read twice, counted once
        for images, _ in bench.train_batches(epoch):
            assert images.shape == (6, 3, 32, 32) and torch.isfinite(images).all()
    with torch.no_grad():
        bench.evaluate(bench.model.eval(), 1)
    assert bench.data_findings() == {"train_cmyk_to_rgb": 1, "train_greyscale_to_rgb": 1, "train_not_jpeg": 1,
                                     "val_cmyk_to_rgb": 1, "val_greyscale_to_rgb": 1, "val_not_jpeg": 1}


def test_the_gpu_decoders_input_is_re_encoded_as_the_reference_does(bad):
    cmyk, grey, png = _quirks(bad, "train")
    samples = [(str(p), 0) for p in (cmyk, grey, png)]
    images = data.EncodedImages(samples, data.Crops(32, 36, train=False))
    for i, path in enumerate((cmyk, grey, png)):
        blob = images[i].data
        decoded = decode_jpeg(torch.frombuffer(bytearray(blob), dtype=torch.uint8), mode=ImageReadMode.RGB)
        with Image.open(path) as image:
            assert decoded.shape == (3, image.height, image.width)
    assert blob[:2] == b"\xff\xd8"  # the PNG became a JPEG, at quality 100 as the reference's preprocessing


@pytest.mark.e2e
def test_a_run_records_what_its_loader_converted_in_result_json(bad, tmp_path):
    _quirks(bad, "train")
    out = run_cli("harness.train", "model=resnet", "+debug=resnet", f"dataset.path={bad}", "dataset.generator=null",
                  "model.batch_size=6", "model.eval_batch_size=6", "model.workers=1", "seed=1", "output_root=out",
                  "device=cpu", "progress=false", "tensorboard=false", "telemetry=false", cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    assert not [line for line in said(out.stderr) if line.startswith("error")]
    (run_dir,) = (tmp_path / "out" / "runs").iterdir()
    result = strict_json(run_dir / "result.json")
    assert result["data_findings"] == {"train_cmyk_to_rgb": 1, "train_greyscale_to_rgb": 1, "train_not_jpeg": 1,
                                       "val_cmyk_to_rgb": 0, "val_greyscale_to_rgb": 0, "val_not_jpeg": 0}


def _corrupt_tables(path: Path) -> None:
    """A JPEG whose header opens and whose end marker is there, but whose Huffman table is nonsense:
    EncodedImages passes it on; decoding it fails."""
    raw = bytearray(path.read_bytes())
    at = raw.index(b"\xff\xc4")  # DHT: marker, length, class and id, then 16 code counts
    raw[at + 5: at + 21] = b"\xff" * 16
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("workers", [0, 2])
def test_a_corrupt_jpeg_in_the_workers_share_of_a_gpu_batch_is_one_line_naming_it(bad, monkeypatch, workers):
    """model.cpu_decode_share: the collate (in a worker, or in the training process without workers)
    decodes the last images of each batch; a file it cannot decode is named in one line."""
    from reference_models.vision import backend

    monkeypatch.setattr(backend, "resolve", lambda choice, device, probe=None: "pil")  # the GPU path, on a CPU
    bench = _build(bad, f"model.workers={workers}", "model.decode=nvimgcodec", "model.cpu_decode_share=0.5")
    sampler = bench.train_loader.sampler
    sampler.set_epoch(1)
    first_batch = list(sampler)[:6]
    path = Path(bench.folder.train[first_batch[4]][0])  # the second of the 3 the workers decode
    _corrupt_tables(path)
    with pytest.raises(DataError) as caught:
        list(bench.train_batches(1))
    message = str(caught.value)
    assert message.startswith(f"{path} is truncated or corrupt (") and "replace it with a good copy" in message
    assert "python -m harness.check_data model=resnet" in message  # as the loader's own errors say it
    assert "\n" not in message and "Caught" not in message
