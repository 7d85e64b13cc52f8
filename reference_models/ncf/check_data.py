"""A MovieLens folder checked as NCF would read it, without training (python -m harness.check_data).

ratings.csv is parsed and preprocessed as training preprocesses it (the reference's implicit
positives, users with fewer than 20 ratings dropped, the latest rating of each user held out);
what the preprocessing drops is counted.

    python -m harness.check_data model=ncf dataset=ml20m
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from harness.interface.findings import DataReport
from reference_models.ncf import data as movielens


def check(cfg: Any, root: Path, report: DataReport, decode: bool) -> None:
    path = report.attempt(movielens.ratings_path, root)
    if path is None:
        return
    columns = report.attempt(movielens.read_ratings, path)
    if columns is None:
        return
    users, items, timestamps = columns
    span = int(items.max()) + 1
    pairs = np.unique(users.astype(np.int64) * span + items)
    counts = np.unique(pairs // span, return_counts=True)[1]  # distinct movies per user, as preprocess counts
    report.facts.append(f"{path}: {len(users):,} ratings of {len(counts):,} users")
    if len(pairs) < len(users):
        report.notes.append(f"ratings.csv: {len(users) - len(pairs):,} repeated (user, movie) ratings: one positive "
                            "each, the latest kept")
    short = int((counts < movielens.MIN_RATINGS).sum())
    if short:
        report.notes.append(f"ratings.csv: {short:,} users with fewer than {movielens.MIN_RATINGS} ratings: dropped "
                            "(the reference's rule)")
    data = report.attempt(movielens.preprocess, users, items, timestamps)
    if data is not None:
        report.facts.append(movielens.describe(data))
