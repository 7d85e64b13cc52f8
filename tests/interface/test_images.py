"""The image checks made before training: a missing, empty, cut-short or mislabelled file is named; a whole
JPEG with bytes after its end marker, or a CMYK one, is not a problem."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from harness.interface.images import find_problems, image_problem, probe, summary_of


@pytest.fixture()
def jpeg(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "whole.JPEG"
    Image.fromarray(rng.integers(0, 255, (40, 60, 3), dtype=np.uint8)).save(path, quality=90)
    return path


def test_a_whole_jpeg_is_fine_and_its_facts_are_read(jpeg):
    assert image_problem(jpeg) is None and image_problem(jpeg, decode=True) is None
    facts = probe(jpeg, size=(60, 40))
    assert (facts.problem, facts.format, facts.mode) == (None, "JPEG", "RGB")


@pytest.mark.parametrize("cut", [11, 300])
def test_a_jpeg_cut_short_is_found_from_its_end_without_a_full_decode(jpeg, cut):
    data = jpeg.read_bytes()
    jpeg.write_bytes(data[:-cut])
    problem = image_problem(jpeg)  # the header opens; the missing end marker sends it to a decode
    assert problem is not None and problem.startswith("is truncated or corrupt (")


def test_bytes_after_the_end_marker_are_not_a_problem(jpeg):
    jpeg.write_bytes(jpeg.read_bytes() + b"\0" * 100)  # padding some writers leave
    assert image_problem(jpeg) is None


def test_missing_empty_not_an_image_and_wrong_size_are_named(tmp_path, jpeg):
    (tmp_path / "empty.JPEG").write_bytes(b"")
    (tmp_path / "text.JPEG").write_text("not an image")
    assert image_problem(tmp_path / "gone.JPEG") == "is missing"
    assert image_problem(tmp_path / "empty.JPEG") == "is empty (0 bytes)"
    assert image_problem(tmp_path / "text.JPEG") == "is not an image PIL can read"
    assert image_problem(jpeg, size=(640, 480)) == "is 60x40, its annotation says 640x480"


def test_cmyk_and_png_content_are_readable_facts_not_problems(tmp_path):
    cmyk = tmp_path / "cmyk.JPEG"
    Image.new("CMYK", (20, 20), (0, 50, 100, 0)).save(cmyk)
    png = tmp_path / "png.JPEG"  # as ImageNet's n02105855_2933.JPEG is a PNG inside
    buf = io.BytesIO()
    Image.new("RGB", (20, 20)).save(buf, "PNG")
    png.write_bytes(buf.getvalue())
    assert (probe(cmyk, decode=True).mode, probe(png, decode=True).format) == ("CMYK", "PNG")
    assert find_problems([(cmyk, None), (png, None)], decode=True) == []


def test_many_files_are_checked_in_order_and_summed_up_in_one_line(tmp_path, jpeg):
    items = [(jpeg, None)] * 100 + [(tmp_path / "gone.JPEG", None), (tmp_path / "also_gone.JPEG", None)]
    problems = find_problems(items)  # threads: still in the items' order
    assert [p for p, _ in problems] == [str(tmp_path / "gone.JPEG"), str(tmp_path / "also_gone.JPEG")]
    assert summary_of(problems, "replace it") == f"{tmp_path / 'gone.JPEG'} is missing (and 1 more): replace it"
