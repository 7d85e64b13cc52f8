"""A GNMT (MLPerf's preprocessed WMT16) folder checked without training (python -m harness.check_data).

Every file is read as training reads it (UTF-8, the vocabulary without a unit twice and covering the
training text, source and target of equal length, test input and reference of equal length); then the pairs outside the
length limits are counted and the buckets checked to fill one global batch.

    python -m harness.check_data model=gnmt dataset=wmt16
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.interface.corpus import read_text
from harness.interface.findings import DataReport
from reference_models.gnmt import data as wmt
from reference_models.gnmt.tokenizer import VOCAB_FILE, Vocab


def check(cfg: Any, root: Path, report: DataReport, decode: bool) -> None:
    report.attempt(wmt.check_layout, root)
    if not report.can_train:
        return  # a file is missing
    report.attempt(Vocab.from_file, root / VOCAB_FILE)
    for name in (*wmt.TRAIN, wmt.TEST_SRC, wmt.TEST_REF):
        report.attempt(read_text, root / name)
    if not report.can_train:
        return  # load() would stop at the first of the problems already listed
    hp = cfg.model
    data = report.attempt(wmt.load, root, int(hp.min_length), int(hp.max_length))
    if data is None:
        return
    report.facts.append(wmt.describe(data))
    if data.discarded:
        report.notes.append(f"training: {data.discarded:,} pairs outside model.min_length={hp.min_length} .. "
                            f"model.max_length={hp.max_length} tokens: discarded (the reference's filter)")
    global_batch = int(hp.batch_size) * int(cfg.gpus) * int(cfg.nodes)
    buckets = wmt.bucket_of(data.train_src.lengths, data.train_tgt.lengths, int(hp.max_length))
    if wmt.steps_per_epoch(buckets, global_batch) == 0:
        report.problems.append(f"{len(data.train_src)} training pairs cannot fill one global batch of {global_batch} "
                               "(model.batch_size x gpus) in any length bucket: lower model.batch_size")
