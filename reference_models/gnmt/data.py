"""MLPerf's preprocessed WMT16 En-De layout -> token id arrays, bucketed training batches, test batches.

Files (as the reference's download_dataset.sh leaves them; reference_models/gnmt/generate.py writes
the same names): vocab.bpe.32000; train.tok.clean.bpe.32000.{en,de} for training;
newstest2014.tok.bpe.32000.en as the test input and the raw newstest2014.de as BLEU's reference.

Training pairs outside [min_len, max_len] tokens (BOS and EOS counted) on either side are discarded,
the method MLPerf logs with max_sequence_length. Batches are bucketed as NVIDIA's MLPerf v0.7 GNMT
samples them: five buckets by max(source, target) length, each shuffled per epoch and trimmed to
whole global batches, the global batches shuffled, every rank taking rows rank::world of each.

    python -m reference_models.gnmt.data DATA_DIR      # counts of a dataset folder
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import torch
from torch.utils.data import Dataset

from harness.interface import DataError
from harness.interface.corpus import Corpus, read_text
from harness.interface.sharding import shard
from harness.interface.findings import describe_command
from reference_models.gnmt.tokenizer import PAD_ID, UNK_ID, VOCAB_FILE, Vocab

TRAIN = ("train.tok.clean.bpe.32000.en", "train.tok.clean.bpe.32000.de")
TEST_SRC, TEST_REF = "newstest2014.tok.bpe.32000.en", "newstest2014.de"
NUM_BUCKETS = 5
MAX_UNKNOWN = 0.01  # share of the training text's BPE units the vocabulary may lack


class DatasetError(DataError):
    pass


@dataclass
class WMTData:
    vocab: Vocab
    train_src: Corpus
    train_tgt: Corpus
    test_src: Corpus
    test_refs: list[str]
    discarded: int  # training pairs outside the length limits


def _need(data_dir: Path, name: str) -> Path:
    path = data_dir / name
    if not path.is_file():
        raise DatasetError(
            f"no {name} in {data_dir}: point dataset.path at MLPerf's preprocessed WMT16 folder "
            "(scripts/download_wmt16.sh makes it) or use dataset=gnmt_embedded"
        )
    return path


def _read(path: Path) -> list[str]:
    return read_text(path).splitlines()  # a byte that is not UTF-8 is named with its line and offset


def check_layout(data_dir: str | Path) -> None:
    for name in (VOCAB_FILE, *TRAIN, TEST_SRC, TEST_REF):
        _need(Path(data_dir), name)


def load(data_dir: str | Path, min_len: int, max_len: int, pad_multiple: int = 8) -> WMTData:
    data_dir = Path(data_dir)
    vocab = Vocab.from_file(_need(data_dir, VOCAB_FILE), pad_multiple)
    src_lines, tgt_lines = _read(_need(data_dir, TRAIN[0])), _read(_need(data_dir, TRAIN[1]))
    if len(src_lines) != len(tgt_lines):
        raise DatasetError(f"{TRAIN[0]} has {len(src_lines)} lines but {TRAIN[1]} has {len(tgt_lines)}")
    src = Corpus.from_lists([vocab.encode(line) for line in src_lines])
    tgt = Corpus.from_lists([vocab.encode(line) for line in tgt_lines])
    _check_coverage(vocab, data_dir / VOCAB_FILE, (src, tgt), (src_lines, tgt_lines))
    keep = (src.lengths >= min_len) & (src.lengths <= max_len) & (tgt.lengths >= min_len) & (tgt.lengths <= max_len)
    if not keep.all():
        src, tgt = src.subset(keep), tgt.subset(keep)
    test_in, refs = _read(_need(data_dir, TEST_SRC)), _read(_need(data_dir, TEST_REF))
    if len(test_in) != len(refs):
        raise DatasetError(f"{TEST_SRC} has {len(test_in)} lines but {TEST_REF} has {len(refs)}")
    return WMTData(vocab, src, tgt, Corpus.from_lists([vocab.encode(l) for l in test_in]), refs,
                   int((~keep).sum()))


def _check_coverage(vocab: Vocab, path: Path, corpora: tuple[Corpus, ...], lines: tuple[list[str], ...]) -> None:
    """A DataError when more than MAX_UNKNOWN of the training text's BPE units are not in the
    vocabulary: they would all train as <unk> (the reference's vocabulary is made from these files,
    so none is missing from it), and the run would train to a BLEU near 0."""
    units = sum(len(c.tokens) - 2 * len(c) for c in corpora)  # less BOS and EOS
    unknown = sum(int(np.count_nonzero(c.tokens == UNK_ID)) for c in corpora)
    if units == 0 or unknown <= MAX_UNKNOWN * units:
        return
    examples: list[str] = []
    for line in (line for side in lines for line in side):
        examples += [u for u in line.split() if u not in vocab.index and u not in examples]
        if len(examples) >= 3:
            break
    raise DatasetError(f"{path} holds {len(vocab.tokens):,} entries and lacks {unknown / units:.0%} of the BPE units of "
                       f"{TRAIN[0]} and {TRAIN[1]} ({unknown:,} of {units:,}, e.g. "
                       f"{', '.join(repr(u) for u in examples[:3])}), which would all train as <unk>: use the "
                       "vocabulary made with the data (scripts/download_wmt16.sh writes vocab.bpe.32000 beside it)")


def bucket_of(src_len: np.ndarray, tgt_len: np.ndarray, max_len: int) -> np.ndarray:
    width = (max_len + NUM_BUCKETS - 1) // NUM_BUCKETS
    return np.minimum(np.maximum(src_len, tgt_len) // width, NUM_BUCKETS - 1)


def warmup_lengths(max_len: int) -> list[tuple[int, int]]:
    """(source, target) lengths, BOS and EOS counted, of the synthetic batches a warm-up steps before run_start
    (GNMTBenchmark.warmup_batches): the longest pair a batch may hold, the first bucket's longest, and that
    source with a one-token target, the shape of each beam-search step (one query at a time). In each, the
    queries (the target less one) are fewer than the keys (the source): a kernel compiled with symbolic sizes
    traces two equal sizes as one symbol, a graph that only equal sizes fit."""
    short = min(max_len, max(3, -(-max_len // NUM_BUCKETS)))
    return list(dict.fromkeys([(max_len, max_len), (short, short), (short, 2)]))


def steps_per_epoch(buckets: np.ndarray, global_batch: int) -> int:
    return int(sum(np.count_nonzero(buckets == b) // global_batch for b in range(NUM_BUCKETS)))


def epoch_order(buckets: np.ndarray, global_batch: int, seed: int) -> np.ndarray:
    """(steps, global_batch) sample indices of one epoch; the same on every rank for one seed."""
    rng = np.random.default_rng(seed)
    groups = []
    for b in range(NUM_BUCKETS):
        idx = np.flatnonzero(buckets == b)
        rng.shuffle(idx)
        whole = len(idx) // global_batch * global_batch
        groups.append(idx[:whole].reshape(-1, global_batch))
    batches = np.concatenate(groups) if groups else np.empty((0, global_batch), dtype=np.int64)
    return batches[rng.permutation(len(batches))]


@dataclass
class Batch:
    src: torch.Tensor  # (T_src, B), sorted by decreasing source length
    src_len: torch.Tensor  # (B,) on the CPU, as pack_padded_sequence wants it
    tgt_in: torch.Tensor  # (T_tgt - 1, B): BOS ... last token
    tgt_out: torch.Tensor  # (T_tgt - 1, B): first token ... EOS
    tokens: int  # source tokens + target tokens, as NVIDIA's GNMT counts throughput

    def pin_memory(self) -> "Batch":
        """Page-locked tokens (the DataLoader's pin thread calls this), so the copy to the GPU overlaps
        compute; the lengths stay where pack_padded_sequence reads them."""
        self.src, self.tgt_in, self.tgt_out = self.src.pin_memory(), self.tgt_in.pin_memory(), self.tgt_out.pin_memory()
        return self

    def to(self, device: torch.device) -> "Batch":
        nb = device.type == "cuda"
        return Batch(self.src.to(device, non_blocking=nb), self.src_len,
                     self.tgt_in.to(device, non_blocking=nb), self.tgt_out.to(device, non_blocking=nb), self.tokens)


def _pad(seqs: list[np.ndarray]) -> torch.Tensor:
    out = np.full((max(len(s) for s in seqs), len(seqs)), PAD_ID, dtype=np.int64)
    for j, s in enumerate(seqs):
        out[: len(s), j] = s
    return torch.from_numpy(out)


def _pad_rows(corpus: Corpus, idx: np.ndarray) -> torch.Tensor:
    """(T, B) token ids of sentences `idx` of `corpus`, PAD after each one's end: _pad's array,
    made with one gather instead of a Python loop over the batch's sentences."""
    lengths = corpus.lengths[idx]
    steps = np.arange(int(lengths.max()))[:, None]
    inside = steps < lengths[None, :]  # (T, B)
    out = np.full(inside.shape, PAD_ID, dtype=np.int64)
    out[inside] = corpus.tokens[(corpus.offsets[idx][None, :] + steps)[inside]]
    return torch.from_numpy(out)


def sort_by_source(src: Corpus, idx: np.ndarray) -> np.ndarray:
    """Longest source first, as pack_padded_sequence wants a batch."""
    return idx[np.argsort(-src.lengths[idx], kind="stable")]


def collate(src: Corpus, tgt: Corpus, idx: np.ndarray, pin: bool = False) -> Batch:
    idx = sort_by_source(src, idx)
    src_t, tgt_t = _pad_rows(src, idx), _pad_rows(tgt, idx)
    src_len = torch.from_numpy(src.lengths[idx].copy())
    tokens = int(src.lengths[idx].sum() + (tgt.lengths[idx] - 1).sum())
    batch = Batch(src_t, src_len, tgt_t[:-1], tgt_t[1:], tokens)
    return batch.pin_memory() if pin else batch  # page-locked: the copy to the GPU overlaps with compute


class EpochBatches(Dataset):
    """One epoch's batches for this rank, item k the collated rows of global batch k (`order` from
    epoch_order): what a DataLoader's workers make ahead of the step, out of the training thread
    (batch_size=None: each item is a whole batch)."""

    def __init__(self, src: Corpus, tgt: Corpus, order: np.ndarray, rank: int, world_size: int):
        self.src, self.tgt, self.order, self.rank, self.world_size = src, tgt, order, rank, world_size

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, k: int) -> Batch:
        return collate(self.src, self.tgt, shard(self.order[k], self.rank, self.world_size))


def test_batches(test: Corpus, batch_size: int, rank: int, world: int) -> Iterator[tuple[np.ndarray, torch.Tensor, torch.Tensor]]:
    """This rank's share of the test set as (original indices, source (T, B), source lengths),
    longest sentences first so that each batch pads little."""
    order = sort_by_source(test, np.arange(len(test)))
    chunks = [order[i: i + batch_size] for i in range(0, len(order), batch_size)]
    for chunk in chunks[rank::world]:
        yield chunk, _pad([test[int(i)] for i in chunk]), torch.from_numpy(test.lengths[chunk].copy())


def describe(data: WMTData) -> str:
    return (f"vocabulary {len(data.vocab)}, {len(data.train_src)} training pairs "
            f"({data.discarded} discarded by length), {len(data.test_src)} test sentences")


if __name__ == "__main__":
    describe_command("python -m reference_models.gnmt.data DATA_DIR", lambda path: describe(load(path, 0, 75)))
