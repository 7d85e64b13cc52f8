"""ResNet's GPU decode path (reference_models/resnet/decode.py) run on the CPU: each decoder the CPU
can run against the workers' PIL crops, several decode threads against one, model.cpu_decode_share
(the resampling alone: tests/reference_models/vision/test_resample.py; the threads themselves:
vision/test_prefetch.py).

The stated tolerance, against the CPU path (PIL decodes, crops and resizes; data.DecodedImages):
- the resampling alone (PIL's decode on both sides): every pixel within 1 level of PIL's (PIL rounds
  to uint8 after each of its two passes, the matrices once at the end), the mean difference under 0.25;
- a backend's whole path (its decode too): the same where it decodes with libjpeg-turbo as PIL does
  (torchvision on a CPU, nvImageCodec's CPU decoder). The hardware decoder's agreement is measured on
  the GPU by scripts/tools/pipeline_decoders.py and recorded in docs/benchmarks/pipeline_2026-12-01.md.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from reference_models.resnet import data, decode
from reference_models.resnet.generate import ImageSpec, write
from reference_models.vision import backend
from reference_models.vision.decoders import PilDecoder, make_decoder
from reference_models.vision.normalize import normalization

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    spec = ImageSpec(classes=2, train_per_class=6, val_per_class=1, width=120, height=90, size_jitter=0.3)
    return write(spec, tmp_path_factory.mktemp("d") / "d", workers=1)


def _decoders() -> list[str]:
    names = ["pil", "cuda"]  # "cuda" is torchvision's decode_jpeg: libjpeg-turbo when the device is a CPU
    try:
        from nvidia import nvimgcodec  # noqa: F401
        names.append("nvimgcodec")
    except ImportError:
        pass
    return names


def _both_paths(folder: Path, seed: int) -> tuple[list, torch.Tensor, list]:
    """The folder's training samples, the CPU path's uint8 crops of them (data.DecodedImages) and the
    workers' encoded items for the GPU path (data.EncodedImages), with the same random crops."""
    samples = data.load(folder).train
    crops = data.Crops(48, 55, train=True, scale=(0.2, 1.0))
    torch.manual_seed(seed)
    cpu = torch.stack([data.DecodedImages(samples, crops)[i][0] for i in range(len(samples))])
    torch.manual_seed(seed)
    return samples, cpu, [data.EncodedImages(samples, crops)[i] for i in range(len(samples))]


@pytest.mark.parametrize("name", _decoders())
def test_each_backend_gives_the_workers_pil_pictures(folder, name):
    """The whole device path (bytes from the workers, decode, crop_resize, normalisation, in the
    prefetch thread) against data.DecodedImages' crops of the same boxes and flips, normalised."""
    samples, cpu, encoded = _both_paths(folder, seed=5)
    batches = [data.collate_encoded(encoded[:6]), data.collate_encoded(encoded[6:])]
    pipeline = decode.ImageNetBatches(make_decoder(name, CPU), 48, CPU, channels_last=True)
    out = list(pipeline(batches))
    images = torch.cat([im for im, _ in out])
    assert images.shape == cpu.shape and images.is_contiguous(memory_format=torch.channels_last)
    assert torch.cat([y for _, y in out]).tolist() == [label for _, label in samples]
    diff = (images - data.normalize(cpu, channels_last=True)) * torch.tensor(data.STD).view(1, 3, 1, 1)
    assert diff.abs().max() <= 1 + 1e-3 and diff.abs().mean() < 0.25


@pytest.mark.parametrize("name", _decoders())
def test_several_decode_threads_give_the_same_images_and_labels_in_the_same_order_as_one(folder, name):
    """model.decode_threads: each thread with its own decoder (PIL, torchvision on a CPU, nvImageCodec's
    CPU decoder where installed), batches of images of several sizes, an epoch whose end falls inside
    a round of threads."""
    samples = data.load(folder).train
    torch.manual_seed(3)
    encoded = [data.EncodedImages(samples, data.Crops(40, 46, train=True, scale=(0.1, 1.0)))[i]
               for i in range(len(samples))]
    batches = [data.collate_encoded(encoded[a:b]) for a, b in ((0, 3), (3, 6), (6, 8), (8, 10), (10, 12))]
    runs = {}
    for threads in (1, 2, 3):
        pipeline = decode.ImageNetBatches([make_decoder(name, CPU) for _ in range(threads)], 40, CPU,
                                          channels_last=True)
        assert pipeline.pipeline.threads == threads
        runs[threads] = list(pipeline(batches))
    assert [len(run) for run in runs.values()] == [5, 5, 5]
    for threads in (2, 3):
        for (images, labels), (one_images, one_labels) in zip(runs[threads], runs[1]):
            assert torch.equal(images, one_images) and torch.equal(labels, one_labels)
    assert torch.cat([y for _, y in runs[1]]).tolist() == [label for _, label in samples]


@pytest.mark.parametrize("workers", [0, 2])
def test_the_models_decode_threads_option_gives_each_thread_a_decoder_and_the_run_the_same_batches(
        folder, monkeypatch, workers):
    """ResNetBenchmark with the GPU decode path (its backend swapped for PIL, which a CPU runs), built
    from a config as a run builds it: model.decode_threads=N makes N decoders, and an epoch's
    training batches through the model's own loader are the same as with one thread."""
    from harness.config import compose
    from harness.interface import RunContext
    from reference_models.resnet.benchmark import ResNetBenchmark

    monkeypatch.setattr(backend, "resolve", lambda choice, device, probe=None: "pil")

    def epoch(threads: int) -> tuple[int, list]:
        cfg = compose(["model=resnet", "+debug=resnet", f"dataset.path={folder}", "dataset.generator=null",
                       "seed=1", "model.batch_size=4", "model.eval_batch_size=4", f"model.workers={workers}",
                       f"model.decode_threads={threads}"])
        OmegaConf.resolve(cfg)
        torch.manual_seed(0)  # without workers the crops are drawn from this process's generator
        bench = ResNetBenchmark(RunContext(cfg=cfg, data_dir=folder, device=CPU, rank=0, world_size=1, seed=1,
                                           shared_seed=2))
        pipeline = bench._device_batches
        assert pipeline is not None and isinstance(pipeline.decoders[-1], PilDecoder)
        return len(pipeline.decoders), list(bench.train_batches(1))

    (one, ones), (two, twos) = epoch(1), epoch(2)
    assert (one, two, len(ones)) == (1, 2, 3)  # 12 images, batches of 4
    for (images, labels), (images_1, labels_1) in zip(twos, ones):
        assert images.dtype == torch.float32 and torch.equal(images, images_1) and torch.equal(labels, labels_1)


def test_the_loaders_pin_thread_pins_the_files_bytes_and_the_pipeline_keeps_them_to_the_batchs_end(folder,
                                                                                                   monkeypatch):
    """The DataLoader pins tensors and containers of them, not a dataclass: EncodedBatch pins itself,
    so the GPU decoder copies the files from page-locked memory (queued on its stream, not staged
    through pageable memory per file); the bytes stay referenced until the batch's GPU work is done."""
    from torch.utils.data._utils.pin_memory import pin_memory

    pinned: list[torch.Tensor] = []

    def fake_pin(self, *args, **kwargs):  # the CPU has no page-locked memory to give: record the request
        out = self.clone()
        pinned.append(out)
        return out

    samples = data.load(folder).train
    batch = data.collate_encoded([data.EncodedImages(samples, data.Crops(32, 37, train=True))[i] for i in range(3)])
    before = batch.data.clone()
    monkeypatch.setattr(torch.Tensor, "pin_memory", fake_pin)
    out = pin_memory(batch)
    assert isinstance(out, data.EncodedBatch)
    assert any(t is out.data for t in pinned) and any(t is out.labels for t in pinned)
    assert torch.equal(out.data, before) and out.offsets == batch.offsets
    monkeypatch.undo()
    pipeline = decode.ImageNetBatches(make_decoder("pil", CPU), 32, CPU, channels_last=False)
    _, keep = pipeline._prepare(out, 0)
    assert any(t is out.data for t in keep)


def _affine(pixels: torch.Tensor) -> torch.Tensor:
    """crop_resize's last pass (normalization's affine) on integral pixel values."""
    scale, shift = normalization(data.MEAN, data.STD, CPU)
    return torch.addcmul(shift, pixels.float(), scale)


@pytest.mark.parametrize("share", [0.0, 0.05, 0.5, 0.9])
def test_a_batch_the_workers_partly_decoded_is_the_cpu_paths_images_in_the_batchs_order(folder, share):
    """model.cpu_decode_share: batches of 6 whose last round(6 x share) images (0, 0 by rounding, 3,
    5 = B - 1) the workers decoded, through the GPU path with PIL's decoder and 1 or 3 decode
    threads: every image within the stated tolerance of the CPU path's, the workers' rows equal to
    the bit to the CPU path's uint8 crops under the same affine, the labels in order, channels_last."""
    samples, cpu, encoded = _both_paths(folder, seed=6)
    batches = [data.collate_encoded(encoded[a:a + 6], cpu_share=share, size=48) for a in (0, 6)]
    k = data.workers_share(6, share)
    assert [0 if b.pixels is None else len(b.pixels) for b in batches] == [k, k]
    runs = []
    for threads in (1, 3):
        pipeline = decode.ImageNetBatches([make_decoder("pil", CPU) for _ in range(threads)], 48, CPU,
                                          channels_last=True)
        runs.append(list(pipeline(batches)))
    for (images, labels), (images_3, labels_3) in zip(*runs):
        assert torch.equal(images, images_3) and torch.equal(labels, labels_3)
    images = torch.cat([im for im, _ in runs[0]])
    assert images.shape == cpu.shape and images.dtype == torch.float32
    assert all(im.is_contiguous(memory_format=torch.channels_last) for im, _ in runs[0])
    assert torch.cat([y for _, y in runs[0]]).tolist() == [label for _, label in samples]
    diff = (images - data.normalize(cpu, channels_last=True)) * torch.tensor(data.STD).view(1, 3, 1, 1)
    assert diff.abs().max() <= 1 + 1e-3 and diff.abs().mean() < 0.25
    for b, (batch_images, _) in enumerate(runs[0]):
        workers = [6 * b + i for i in range(6 - k, 6)]
        assert torch.equal(batch_images[6 - k:], _affine(cpu[workers]))
        if k == 0:  # today's path, the same pictures as a batch collated without the option
            alone, _ = next(iter(decode.ImageNetBatches(make_decoder("pil", CPU), 48, CPU, True)(
                [data.collate_encoded(encoded[6 * b: 6 * b + 6])])))
            assert torch.equal(batch_images, alone)


@pytest.mark.parametrize("workers", [0, 2])
def test_the_models_cpu_decode_share_gives_the_cpu_paths_batches(folder, monkeypatch, workers):
    """ResNetBenchmark built from a config as a run builds it, the GPU decode path's backend swapped
    for PIL: model.cpu_decode_share=0.5 (2 of each batch of 4 decoded by the workers, or by the
    training process without workers) gives an epoch of the CPU path's batches (model.decode=cpu,
    the same seeds and so the same crops): the workers' rows to the bit, the GPU's within the
    stated tolerance, the labels the same; with 1 or 2 decode threads."""
    from harness.config import compose
    from harness.interface import RunContext
    from reference_models.resnet.benchmark import ResNetBenchmark

    monkeypatch.setattr(backend, "resolve", lambda choice, device, probe=None: "cpu" if choice == "cpu" else "pil")

    def epoch(*overrides: str) -> list:
        cfg = compose(["model=resnet", "+debug=resnet", f"dataset.path={folder}", "dataset.generator=null",
                       "seed=1", "model.batch_size=4", "model.eval_batch_size=4", f"model.workers={workers}",
                       *overrides])
        OmegaConf.resolve(cfg)
        torch.manual_seed(0)  # without workers the crops are drawn from this process's generator
        bench = ResNetBenchmark(RunContext(cfg=cfg, data_dir=folder, device=CPU, rank=0, world_size=1, seed=1,
                                           shared_seed=2))
        return list(bench.train_batches(1))

    cpu = epoch("model.decode=cpu")
    for threads in (1, 2):
        shared = epoch("model.decode=nvimgcodec", "model.cpu_decode_share=0.5", f"model.decode_threads={threads}")
        assert len(shared) == len(cpu) == 3  # 12 images, batches of 4
        for (images, labels), (pixels, cpu_labels) in zip(shared, cpu):
            assert images.dtype == torch.float32 and torch.equal(labels, cpu_labels)
            assert torch.equal(images[2:], _affine(pixels[2:]))
            diff = (images[:2] - data.normalize(pixels[:2], channels_last=False)) * torch.tensor(data.STD).view(1, 3, 1, 1)
            assert diff.abs().max() <= 1 + 1e-3


@pytest.mark.skipif(not torch.cuda.is_available() or "nvimgcodec" not in _decoders(),
                    reason="needs a CUDA device and nvImageCodec")
def test_on_a_gpu_a_batch_the_workers_partly_decoded_is_the_cpu_paths_images(folder):
    """model.cpu_decode_share=0.5 on CUDA, as a run has it: pinned batches, the hardware decoder for
    the first half of each batch, the workers' crops copied from pinned memory for the rest; within
    the stated tolerance of the CPU path, the workers' rows its uint8 crops under the same affine."""
    cuda = torch.device("cuda")
    samples, cpu, encoded = _both_paths(folder, seed=7)
    batches = [data.collate_encoded(encoded[a:a + 6], cpu_share=0.5, size=48).pin_memory() for a in (0, 6)]
    out = list(decode.ImageNetBatches(make_decoder("nvimgcodec", cuda), 48, cuda, channels_last=True)(batches))
    images = torch.cat([im for im, _ in out]).cpu()
    assert torch.cat([y for _, y in out]).cpu().tolist() == [label for _, label in samples]
    diff = (images - data.normalize(cpu, channels_last=True)) * torch.tensor(data.STD).view(1, 3, 1, 1)
    assert diff.abs().max() <= 1 + 1e-3 and diff.abs().mean() < 0.25
    for b in range(2):
        workers = [6 * b + i for i in range(3, 6)]
        assert torch.allclose(images[6 * b + 3: 6 * b + 6], _affine(cpu[workers]), atol=1e-5)
