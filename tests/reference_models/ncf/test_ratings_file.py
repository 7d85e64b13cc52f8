"""ratings.csv that pandas cannot read: one line naming the file, the line and how to fix it, from
`python -m harness.check_data` and from what `python -m harness.train` does with the same folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from reference_models.ncf.generate import GeneratorSpec, write
from tests.test_data_faults import _both


@pytest.mark.parametrize("value", ["99999999999999999999", "-9223372036854775809"])
def test_an_id_outside_int64_names_the_file_line_and_range(tmp_path: Path, capsys, value: str) -> None:
    """Before: harness.train said only 'error: OverflowError: Overflow' and check_data printed pandas' traceback."""
    path = write(GeneratorSpec(users=300, items=400, mean_ratings=30.0), tmp_path / "ml", workers=1)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join([*lines[:3], f"{value},3,3.0,5\n", *lines[3:]]))
    said = (f"{path} is not a MovieLens ratings.csv: line 4 has userId {value}, outside the 64-bit integer range "
            f"(-9223372036854775808 to 9223372036854775807) ('{value},3,3.0,5') (each row is "
            "userId,movieId,rating,timestamp, ids and timestamp integers; scripts/download_ml20m.sh fetches ml-20m)")
    assert _both(capsys, "ncf", path.parent) == (said, said)
