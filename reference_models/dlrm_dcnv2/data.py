"""Criteo 1TB Click Logs in MLPerf DLRM-DCNv2's multi-hot format, read as the reference reads it.

The reference (mlcommons/training recommendation_v2/torchrec_dlrm, data/multi_hot_criteo.py) reads,
for each day d of 24, day_{d}_dense.npy (float32, 13 columns: log(x - min + 2) of the counts),
day_{d}_labels.npy (int32, one column) and day_{d}_sparse_multi_hot.npz (an uncompressed npz of 26
int32 arrays "0".."25", one row per sample and one column per hot id: 3, 2, 1, 2, 6, 1, 1, 1, 1, 7,
3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1, as materialize_synthetic_multihot_dataset.py
writes them). Days 0-22 are the training set, read in file order (the preprocessing shuffled
them); day 23 is split in halves, the first ceil(n/2) rows the validation set the reference's
target is judged on, the rest the test set. Every array is memory-mapped (the npz members at their
offsets in the archive, as the reference maps them): 3.8 TB need not fit in memory.

    python -c "from reference_models.dlrm_dcnv2.data import load; print(load('outputs/datasets/dlrm_dcnv2_embedded'))"
"""
from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.interface import DataError
from reference_models.dlrm_dcnv2.criteo import DENSE_FEATURES, MULTI_HOT_SIZES

_DAY = re.compile(r"day_(\d+)_labels\.npy$")


class DatasetError(DataError):
    """The folder is not a multi-hot Criteo dataset, or one of its files is not what the format says."""


def day_files(folder: Path, day: int) -> tuple[Path, Path, Path]:
    """(dense, labels, sparse) paths of one day."""
    return (folder / f"day_{day}_dense.npy", folder / f"day_{day}_labels.npy",
            folder / f"day_{day}_sparse_multi_hot.npz")


def find_days(folder: str | Path) -> int:
    """How many days the folder holds (day_0 .. day_{n-1}, each with its three files)."""
    folder = Path(folder)
    found = sorted(int(m.group(1)) for p in folder.glob("day_*_labels.npy") if (m := _DAY.search(p.name)))
    if not found:
        raise DatasetError(f"no day_*_labels.npy in {folder}: point dataset.path at the multi-hot Criteo 1TB folder "
                           "(docs/dlrm_dcnv2.md says how it is made) or use dataset=dlrm_dcnv2_embedded")
    days = found[-1] + 1
    if found != list(range(days)):
        missing = sorted(set(range(days)) - set(found))
        raise DatasetError(f"{folder}: day {missing[0]}'s labels are missing (found days {found[0]}-{found[-1]})")
    if days < 2:
        raise DatasetError(f"{folder}: one day only; the last day is the evaluation set, the ones before it train")
    for day in range(days):
        for path in day_files(folder, day):
            if not path.is_file():
                raise DatasetError(f"{path} is missing: each day has its dense, labels and sparse_multi_hot files")
    return days


def _npz_member(path: Path, name: str) -> np.ndarray:
    """A member of an uncompressed npz, memory-mapped at its offset (the reference's _load_from_npz)."""
    with zipfile.ZipFile(path) as archive:
        try:
            info = archive.getinfo(f"{name}.npy")
        except KeyError:
            raise DatasetError(f"{path} has no array {name!r}: the 26 sparse features are arrays '0'..'25'") from None
        if info.compress_type != zipfile.ZIP_STORED:
            raise DatasetError(f"{path}: array {name!r} is compressed; the format stores them uncompressed (np.savez)")
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        local = f.read(30)  # the local file header: its name and extra field lengths follow at 26 and 28
        f.seek(info.header_offset + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little"))
        version = np.lib.format.read_magic(f)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = reader(f)
        offset = f.tell()
    if dtype != np.int32 or len(shape) != 2:
        raise DatasetError(f"{path}: array {name!r} is {dtype} of shape {shape}, not int32 ids one row per sample")
    return np.memmap(path, dtype=dtype, mode="r", shape=shape, order="F" if fortran else "C", offset=offset)


@dataclass
class Day:
    """One day's arrays, memory-mapped: dense (n, 13) float32, labels (n, 1) int32, 26 (n, hot) int32."""

    dense: np.ndarray
    labels: np.ndarray
    sparse: list[np.ndarray]

    def __len__(self) -> int:
        return int(self.dense.shape[0])


def read_day(folder: Path, day: int) -> Day:
    dense_path, labels_path, sparse_path = day_files(folder, day)
    dense, labels = np.load(dense_path, mmap_mode="r"), np.load(labels_path, mmap_mode="r")
    if dense.dtype != np.float32 or dense.ndim != 2 or dense.shape[1] != DENSE_FEATURES:
        raise DatasetError(f"{dense_path} is {dense.dtype} {dense.shape}, not float32 (n, {DENSE_FEATURES})")
    if labels.shape != (len(dense), 1):
        raise DatasetError(f"{labels_path} has shape {labels.shape}; its dense file says ({len(dense)}, 1)")
    sparse = [_npz_member(sparse_path, str(j)) for j in range(len(MULTI_HOT_SIZES))]
    rows = {len(a) for a in sparse}
    if rows != {len(dense)}:
        raise DatasetError(f"{sparse_path} has {sorted(rows)} rows; its dense file has {len(dense)}")
    return Day(dense, labels, sparse)


class Rows:
    """Consecutive days as one sequence of rows: rows [a, b) are cut across day boundaries."""

    def __init__(self, days: list[Day]):
        self.days = days
        self.starts = np.cumsum([0] + [len(d) for d in days])

    def __len__(self) -> int:
        return int(self.starts[-1])

    def hotness(self) -> tuple[int, ...]:
        return tuple(int(a.shape[1]) for a in self.days[0].sparse)

    def take(self, start: int, stop: int) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        """(dense (m, 13) float32, 26 arrays (m, hot) int32, labels (m,) float32) of rows [start, stop)."""
        parts: list[tuple[np.ndarray, list[np.ndarray], np.ndarray]] = []
        first = int(np.searchsorted(self.starts, start, side="right")) - 1
        for i in range(first, len(self.days)):
            lo, hi = max(start - self.starts[i], 0), min(stop - self.starts[i], len(self.days[i]))
            if hi <= lo:
                break
            d = self.days[i]
            parts.append((d.dense[lo:hi], [a[lo:hi] for a in d.sparse], d.labels[lo:hi, 0]))
        if len(parts) == 1:
            dense, sparse, labels = parts[0]
            return np.array(dense), [np.array(a) for a in sparse], labels.astype(np.float32)
        return (np.concatenate([p[0] for p in parts]),
                [np.concatenate([p[1][j] for p in parts]) for j in range(len(MULTI_HOT_SIZES))],
                np.concatenate([p[2] for p in parts]).astype(np.float32))


@dataclass
class CriteoMultiHot:
    train: Rows  # days 0 .. n-2
    validation: Rows  # the first ceil(m/2) rows of the last day (the reference's "val" stage)
    test: Rows  # the rest of it ("test")
    days: int

    def __str__(self) -> str:
        return (f"{self.days} days: {len(self.train):,} training, {len(self.validation):,} validation and "
                f"{len(self.test):,} test samples")


def load(folder: str | Path) -> CriteoMultiHot:
    folder = Path(folder)
    days = find_days(folder)
    read = [read_day(folder, d) for d in range(days)]
    hot = {tuple(a.shape[1] for a in d.sparse) for d in read}
    if len(hot) > 1:
        raise DatasetError(f"{folder}: the days' multi-hot widths differ: {sorted(hot)}")
    last = read[-1]
    half = len(last) // 2 + len(last) % 2  # the reference's second_half_start_index
    val = Day(last.dense[:half], last.labels[:half], [a[:half] for a in last.sparse])
    test = Day(last.dense[half:], last.labels[half:], [a[half:] for a in last.sparse])
    return CriteoMultiHot(Rows(read[:-1]), Rows([val]), Rows([test]), days)
