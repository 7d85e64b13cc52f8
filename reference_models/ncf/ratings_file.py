"""ratings.csv of a MovieLens folder: found, its columns read, and the line that cannot be read named.

pandas' C reader parses ml-20m's 20M rows in seconds; where it fails, its message names no line (a
value it cannot convert) or no file, so the file is then scanned for the first line that is wrong.

    python -c "from reference_models.ncf.ratings_file import read_ratings; print(read_ratings('ratings.csv')[0][:5])"
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import numpy as np

from harness.interface import DataError

RATINGS_FILE = "ratings.csv"
COLUMNS = ("userId", "movieId", "rating", "timestamp")
_INTEGER = re.compile(r"\s*[+-]?\d+\s*$")
INT64 = (-(2**63), 2**63 - 1)  # what the columns are read into: pandas' OverflowError names no line


class DatasetError(DataError):
    """The dataset is missing or not in the MovieLens ratings.csv format."""


def ratings_path(data_dir: str | Path) -> Path:
    path = Path(data_dir) / RATINGS_FILE
    if not path.is_file():
        raise DatasetError(
            f"no {RATINGS_FILE} in {data_dir}: point dataset.path at an unpacked MovieLens folder "
            f"(scripts/download_ml20m.sh fetches ml-20m) or use dataset=ncf_embedded"
        )
    return path


def read_ratings(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(userId, movieId, timestamp) columns of a MovieLens ratings.csv, in file order."""
    import pandas as pd  # pandas' C reader parses ml-20m's 20M rows in seconds; numpy's takes minutes

    try:
        frame = pd.read_csv(
            path,
            usecols=["userId", "movieId", "timestamp"],
            dtype={"userId": np.int64, "movieId": np.int64, "timestamp": np.int64},
        )
    except (ValueError, OverflowError, pd.errors.ParserError) as err:
        bad = first_bad_line(Path(path))  # pandas' message names no line of a value it cannot convert
        if bad is not None:
            raise DatasetError(f"{path} is not a MovieLens ratings.csv: {bad} (each row is {','.join(COLUMNS)}, ids "
                               "and timestamp integers; scripts/download_ml20m.sh fetches ml-20m)") from None
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DatasetError(
            f"{path} is not a MovieLens ratings.csv ({','.join(COLUMNS)}): {first}"
        ) from None
    if frame.empty:
        raise DatasetError(f"{path} has a header but no ratings")
    return (
        frame["userId"].to_numpy(),
        frame["movieId"].to_numpy(),
        frame["timestamp"].to_numpy(),
    )


def first_bad_line(path: Path) -> Optional[str]:
    """What is wrong with the first line of `path` that pandas could not read as ratings ("line 7 has ..."),
    or None; read only once pandas has failed (a scan of ml-20m's 20M lines takes half a minute)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        header = f.readline().rstrip("\r\n")
        if not header.strip():
            return "it is empty"
        names = [name.strip() for name in header.split(",")]
        lacking = [c for c in COLUMNS if c != "rating" and c not in names]
        if lacking:
            return f"line 1, the header {header[:80]!r}, has no {' or '.join(lacking)} column"
        wanted = [names.index(c) for c in COLUMNS if c != "rating"]
        for n, line in enumerate(f, 2):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue  # pandas skips blank lines
            fields = text.split(",")
            if len(fields) != len(names):
                return f"line {n} has {len(fields)} fields where the header has {len(names)} ({text[:80]!r})"
            for i in wanted:
                if not _INTEGER.match(fields[i]):
                    return f"line {n} has {names[i]} {fields[i][:40]!r}, not an integer ({text[:80]!r})"
                if not INT64[0] <= int(fields[i]) <= INT64[1]:
                    return (f"line {n} has {names[i]} {fields[i].strip()[:40]}, outside the 64-bit integer range "
                            f"({INT64[0]} to {INT64[1]}) ({text[:80]!r})")
    return None
