"""The CUDA crop's gathering kernel (reference_models/vision/gather_resize.py), run on the CPU by
Triton's interpreter, against PIL and against the matrices' path (resample.py).

The interpreter reads TRITON_INTERPRET when triton is first imported, so the kernel runs in a
child process; where a GPU is, the child runs it compiled on the GPU instead (an older Triton's
interpreter, as torch 2.11's, cannot run its loop over a scalar argument). The tolerance is
resample.py's: every pixel within 1 level of PIL's; against the matrices' path (float32 on the
CPU), the kernel with float32 storage differs only at rounding ties, by 1 level; float16 storage
(CUDA's) is held to PIL's tolerance.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

CHILD = r"""
import json, sys
import numpy as np
import torch
from PIL import Image
from reference_models.resnet import data
from reference_models.vision.decoders import pil_decode
from reference_models.vision.gather_resize import GROUP_SLACK, _needs, gathered_crop_resize
from reference_models.vision.normalize import normalization
from reference_models.vision.resample import crop_resize, size_groups

folder, dev = sys.argv[1], torch.device(sys.argv[2])
paths = [p for p, _ in data.load(folder).train][:5]
big = sys.argv[3] + "/big.jpg"  # 4x the others a side: a crop whose passes need far more
with Image.open(paths[0]) as im:
    im.convert("RGB").resize((480, 360), Image.Resampling.BILINEAR).save(big, quality=90)
paths.insert(2, big)
images = [pil_decode(np.fromfile(p, dtype=np.uint8)) for p in paths]
on_dev = [im.to(dev) for im in images]
sizes = [im.shape[1:] for im in images]
# downscales, an upscale (a fifth of the image), the large image's, a whole image, a box on the right edge,
# mirrored, one clipped to its box
parts = [(0.1, 0.2, 0.6, 0.7), (0.3, 0.4, 0.2, 0.2), (0.1, 0.1, 0.8, 0.7), (0, 0, 1, 1), (0.05, 0.6, 0.95, 0.4),
         (0.2, 0, 0.8, 0.9)]
boxes = torch.tensor([(int(a * h), int(b * w), max(1, int(c * h)), max(1, int(d * w)))
                      for (a, b, c, d), (h, w) in zip(parts, sizes)])
n = len(paths)
flips = torch.tensor([False, True, False, True, False, True])
clips = torch.tensor([[0, 0, h, w] for h, w in sizes])
clips[5] = torch.tensor([boxes[5, 0], boxes[5, 1], boxes[5, 0] + boxes[5, 2], boxes[5, 1] + boxes[5, 3]])
size = 48
matrices = crop_resize(images, boxes, flips, size, clips=clips)
gathered = gathered_crop_resize(on_dev, boxes, flips, size, clips, torch.empty(n, 3, size, size, device=dev)).cpu()
exact = gathered_crop_resize(on_dev, boxes, flips, size, clips, torch.empty(n, 3, size, size, device=dev),
                             dtype=torch.float32).cpu()
pil = []
for i, p in enumerate(paths):
    with Image.open(p) as im:
        im = im.convert("RGB")
        t, l, h, w = (int(v) for v in boxes[i])
        if i == 5:  # clipped to the box: PIL's crop(...).resize(...)
            im = im.crop((l, t, l + w, t + h)).resize((size, size), Image.Resampling.BILINEAR)
        else:
            im = im.resize((size, size), Image.Resampling.BILINEAR, box=(l, t, l + w, t + h))
        if flips[i]:
            im = im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        pil.append(torch.from_numpy(np.asarray(im)).permute(2, 0, 1).float())
pil = torch.stack(pil)
scale, shift = normalization([123.7, 116.3, 103.5], [58.4, 57.1, 57.4], dev)
normalised = gathered_crop_resize(on_dev, boxes, flips, size, clips, torch.empty(n, 3, size, size, device=dev),
                                  affine=(scale, shift)).cpu()
scale, shift = scale.cpu(), shift.cpu()
whole = torch.zeros(n + 2, 3, size, size, device=dev).to(memory_format=torch.channels_last)
gathered_crop_resize(on_dev, boxes, flips, size, clips, whole[1:-1])
whole = whole.cpu()
meta = torch.cat([boxes.float(), clips.float(), flips.float().view(-1, 1)], dim=1).numpy()
rows, taps_x, _ = _needs(meta, size)
print(json.dumps({
    "pil_max": float((gathered - pil).abs().max()), "pil_mean": float((gathered - pil).abs().mean()),
    "matrices_max": float((exact - matrices).abs().max()),
    "matrices_differ": float((exact != matrices).float().mean()),
    "integral": bool(torch.equal(gathered, gathered.round())),
    "affine_max": float((normalised - (gathered * scale + shift)).abs().max()),
    "groups": len(size_groups(list(zip(rows.tolist(), taps_x.tolist())), slack=GROUP_SLACK)),
    "rows_given": bool(torch.equal(whole[1:-1], gathered) and not whole[0].any() and not whole[-1].any()),
}))
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    from reference_models.resnet.generate import ImageSpec, write
    spec = ImageSpec(classes=2, train_per_class=3, val_per_class=1, width=120, height=90, size_jitter=0.3)
    return write(spec, tmp_path_factory.mktemp("d") / "d", workers=1)


@pytest.mark.timeout(240)
def test_the_gathering_kernel_crops_as_pil_does(folder, tmp_path):
    """Six crops of differently sized images, in groups of like size: each pixel within 1 level of
    PIL's, integral levels, the same as the matrices' path but at rounding ties (float32 storage),
    the affine applied, written into the rows of a larger batch it is given."""
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"  # compiled where a GPU is, else interpreted
    env = {**os.environ, **({"TRITON_INTERPRET": "1"} if device == "cpu" else {})}
    done = subprocess.run([sys.executable, "-c", CHILD, str(folder), device, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=220, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["pil_max"] <= 1 and got["pil_mean"] < 0.25, got
    assert got["matrices_max"] <= 1 and got["matrices_differ"] < 0.01, got
    assert got["integral"], got
    assert got["affine_max"] < 1e-4, got
    assert got["groups"] > 1, got  # crops of unlike size in launches of their own, back in the batch's order
    assert got["rows_given"], got  # rows of a larger channels-last batch, the others untouched
