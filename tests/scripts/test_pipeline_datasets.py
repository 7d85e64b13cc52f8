"""scripts/tools/pipeline_datasets.py: the pipeline benchmark's ImageNet folder, of one size or of unlike sizes
(--jitter), as the GPU crop's launches by size are measured on; a bad --jitter is one line."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from PIL import Image

from tests.helpers import REPO, child_env

SCRIPT = REPO / "scripts" / "tools" / "pipeline_datasets.py"


def _sizes(folder: Path) -> set[tuple[int, int]]:
    sizes = set()
    for path in (folder / "train").rglob("*.JPEG"):
        with Image.open(path) as image:
            sizes.add(image.size)
    return sizes


def test_jitter_gives_images_of_unlike_sizes_and_none_gives_one(tmp_path):
    for name, extra in (("one", []), ("mixed", ["--jitter", "0.6"])):
        done = subprocess.run([sys.executable, str(SCRIPT), "imagenet", str(tmp_path / name), "--images", "40",
                               "--val-images", "20", "--workers", "1", *extra], env=child_env(OMP_NUM_THREADS="1"),
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
    assert _sizes(tmp_path / "one") == {(500, 375)}
    mixed = _sizes(tmp_path / "mixed")
    assert len(mixed) > 10 and all(200 <= w <= 800 and 150 <= h <= 600 for w, h in mixed), mixed


def test_a_jitter_out_of_range_is_one_line():
    done = subprocess.run([sys.executable, str(SCRIPT), "imagenet", "/nonexistent/x", "--jitter", "1.5"],
                          env=child_env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--jitter 1.5: give 0" in done.stderr and "Traceback" not in done.stderr
