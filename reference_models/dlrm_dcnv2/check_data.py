"""A multi-hot Criteo folder checked as DLRM-DCNv2 would read it, without training (python -m harness.check_data).

Every day's three files are opened as the loader opens them (types, shapes, the npz members
uncompressed); without --quick every row is read too, in chunks: each feature's ids below its table's
rows (model.num_embeddings_per_feature, as the run would build them), labels 0 or 1, dense values finite.

    python -m harness.check_data model=dlrm_dcnv2 dataset=criteo_1tb_multihot
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness.interface.findings import DataReport
from reference_models.dlrm_dcnv2 import data as criteo
from reference_models.dlrm_dcnv2.criteo import MULTI_HOT_SIZES, REFERENCE_DAYS

CHUNK = 1 << 20  # rows read at a time: a day of the real data is 3.8 TB / 24


def check(cfg: Any, root: Path, report: DataReport, decode: bool) -> None:
    days = report.attempt(criteo.find_days, root)
    if days is None:
        return
    loaded = report.attempt(criteo.load, root)
    if loaded is None:
        return
    report.facts.append(f"{root}: {loaded}")
    if days != REFERENCE_DAYS:
        report.notes.append(f"{days} days, not the reference's {REFERENCE_DAYS}: the last is the evaluation day")
    if loaded.train.hotness() != MULTI_HOT_SIZES:
        report.problems.append(f"{root}: multi-hot widths {loaded.train.hotness()}, not the reference's {MULTI_HOT_SIZES}")
    if not decode:
        return
    rows = list(cfg.model.num_embeddings_per_feature)
    for d in range(days):
        day = criteo.read_day(root, d)
        dense_path, labels_path, sparse_path = criteo.day_files(root, d)
        for start in range(0, len(day), CHUNK):
            stop = min(start + CHUNK, len(day))
            if not np.isfinite(day.dense[start:stop]).all():
                report.problems.append(f"{dense_path}: a value that is not finite in rows {start:,}-{stop - 1:,}")
            if not np.isin(day.labels[start:stop], (0, 1)).all():
                report.problems.append(f"{labels_path}: a label other than 0 or 1 in rows {start:,}-{stop - 1:,}")
            for j, ids in enumerate(day.sparse):
                part = ids[start:stop]
                low, high = int(part.min()), int(part.max())
                if low < 0 or high >= rows[j]:
                    report.problems.append(f"{sparse_path}: feature {j} has id {low if low < 0 else high} in rows "
                                           f"{start:,}-{stop - 1:,}; its table has {rows[j]:,} rows "
                                           "(model.num_embeddings_per_feature)")
    if not report.problems:
        report.facts.append(f"every id is below its table's rows ({', '.join(map(str, rows))})")
