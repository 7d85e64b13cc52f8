"""A Transformer (WMT17, reference subwords) folder checked without training (python -m harness.check_data).

Every file is read as training reads it: the vocabulary (UTF-8, one quoted subtoken per line, none
twice), each training shard (ids only, .src and .dst of equal length, every id in the vocabulary),
the test set (UTF-8, input and reference of equal length, every line encodable); then the pairs the
reference discards by length are counted and the batches checked to fill every rank.

    python -m harness.check_data model=transformer dataset=wmt17
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.interface.findings import DataReport
from reference_models.transformer import data as wmt
from reference_models.transformer.tokenizer import Subtokenizer


def check(cfg: Any, root: Path, report: DataReport, decode: bool) -> None:
    report.attempt(wmt.check_layout, root)
    if not report.can_train:
        return  # a file is missing
    vocab = report.attempt(Subtokenizer.from_file, root / wmt.VOCAB_FILE)
    for name in (wmt.TEST_SRC, wmt.TEST_REF):
        report.attempt(wmt.read_test_lines, root / name)
    shards = report.attempt(wmt.train_shards, root) or []
    for src, dst in shards:
        report.attempt(wmt.read_ids, src)
        report.attempt(wmt.read_ids, dst)
    if vocab is None or not report.can_train:
        return  # load() would stop at the first of the problems already listed
    max_length = int(cfg.model.max_length)
    data = report.attempt(wmt.load, root, max_length)
    if data is None:
        return
    report.facts.append(f"{wmt.describe(data)}; {len(shards)} training shards")
    if data.discarded:
        report.notes.append(f"training: {data.discarded:,} pairs longer than model.max_length={max_length}: "
                            "discarded (the reference's _filter_max_length)")
    world = int(cfg.gpus) * int(cfg.nodes)
    buckets = wmt.bucket_of(data.train_src.lengths, data.train_tgt.lengths, max_length)
    batches = wmt.batch_count(buckets, max_length, int(cfg.model.batch_size))
    if batches < world:
        report.problems.append(f"{len(data.train_src)} training pairs make {batches} batches of "
                               f"model.batch_size={cfg.model.batch_size} tokens, fewer than the {world} ranks: "
                               "lower model.batch_size or use fewer ranks")
