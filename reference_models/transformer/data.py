"""MLPerf's Transformer data layout (WMT17 En-De, reference subwords) -> token id arrays and batches.

The folder, as the reference's process_data.py leaves it (reference_models/transformer/generate.py
and scripts/prepare_wmt17.py write the same names):

    vocab.ende.32768                                 the subword vocabulary, one quoted subtoken per line
    utf8/wmt32k-encoded-train-NNNNN-of-NNNNN.src     training sources: subtoken ids, EOS (1) last, one
    utf8/wmt32k-encoded-train-NNNNN-of-NNNNN.dst     sentence per line; .dst the targets, line by line
    newstest2014.en, newstest2014.de                 the BLEU test set as plain text (input, reference)

Training pairs with more than max_length ids on either side are discarded (the reference's
_filter_max_length; max_sequence_length, method discard). Batches are made as the reference's
input pipeline makes them: pairs are bucketed by their longer side (bucket bounds from 8 up by
x1.1), and a bucket's batch holds batch_size // (the bucket's upper bound) pairs, so that a batch
has at most batch_size tokens of padded length per side. Each epoch shuffles every bucket and then
the batches, from the run's shared seed; rank r of W takes batches r, r + W, ... (whole rounds of
W only, so every rank steps together). A batch is padded with one gather per side; on a GPU,
DataLoader workers collate the batches ahead of the step (Collated, EpochOrder) and its pin thread
pins them (reference_models/transformer/benchmark.py).

    python -m reference_models.transformer.data DATA_DIR      # counts of a dataset folder
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from harness.interface import DataError
from harness.interface.corpus import Corpus, read_text
from harness.interface.findings import describe_command
from reference_models.transformer.tokenizer import PAD_ID, Subtokenizer

VOCAB_FILE = "vocab.ende.32768"
SHARD_DIR = "utf8"
PREFIX = "wmt32k-encoded"
TEST_SRC, TEST_REF = "newstest2014.en", "newstest2014.de"
MIN_BOUNDARY, BOUNDARY_SCALE = 8, 1.1


def shard_name(tag: str, n: int, total: int) -> str:
    """'wmt32k-encoded-train-00001-of-00100' (.src and .dst are added), as the reference names shards."""
    return f"{PREFIX}-{tag}-{n:05d}-of-{total:05d}"


class DatasetError(DataError):
    pass


@dataclass
class TranslationData:
    vocab: Subtokenizer
    train_src: Corpus
    train_tgt: Corpus
    test_src: Corpus  # the test input, encoded with EOS as the reference's translate_file does
    test_refs: list[str]
    discarded: int  # training pairs longer than max_length


def _need(path: Path) -> Path:
    if not path.is_file():
        raise DatasetError(f"no {path.name} in {path.parent}: point dataset.path at a folder in the MLPerf "
                           "Transformer layout (scripts/prepare_wmt17.py makes it) or use dataset=transformer_embedded")
    return path


def train_shards(data_dir: Path) -> list[tuple[Path, Path]]:
    sources = sorted((data_dir / SHARD_DIR).glob(f"{PREFIX}-train-*-of-*.src"))
    if not sources:
        raise DatasetError(f"no {SHARD_DIR}/{PREFIX}-train-*.src in {data_dir}: point dataset.path at a folder in the "
                           "MLPerf Transformer layout (scripts/prepare_wmt17.py makes it)")
    return [(src, _need(src.with_suffix(".dst"))) for src in sources]


def check_layout(data_dir: str | Path) -> None:
    data_dir = Path(data_dir)
    for name in (VOCAB_FILE, TEST_SRC, TEST_REF):
        _need(data_dir / name)
    train_shards(data_dir)


def read_ids(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(all ids, ids per line) of a file of space-separated ids, one sentence per line."""
    try:
        text = path.read_text(encoding="ascii").strip("\n")
        lines = text.split("\n") if text else []
        lengths = np.fromiter((len(line.split()) for line in lines), dtype=np.int64, count=len(lines))
        ids = np.array(text.split(), dtype=np.int64)
    except (UnicodeDecodeError, ValueError):
        raise DatasetError(f"{path}{_first_bad_line(path)} holds something other than token ids: each line is one "
                           "sentence of space-separated ids (scripts/prepare_wmt17.py writes them)") from None
    if np.any(lengths == 0):
        raise DatasetError(f"{path} line {int(np.argmax(lengths == 0)) + 1} is empty: every sentence ends with EOS")
    return ids, lengths


def _first_bad_line(path: Path) -> str:
    """" line N" of the first line that is not ids, for the message (read again only on failure)."""
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not all(word.isdigit() for word in line.split()):
                return f" line {n}"
    return ""


def read_test_lines(path: Path) -> list[str]:
    """The lines of a plain-text test file (UTF-8, named with line and offset where it is not)."""
    return read_text(path).strip().splitlines()


def _encode(vocab: Subtokenizer, line: str, n: int) -> list[int]:
    try:
        return vocab.encode(line.strip(), add_eos=True)
    except ValueError as err:  # a vocabulary without one of the escape characters cannot spell everything
        raise DatasetError(f"{TEST_SRC} line {n}: {err}: {VOCAB_FILE} must hold every character of its alphabet "
                           "and the escape characters \\_u;0-9 as subtokens") from None


def load(data_dir: str | Path, max_length: int) -> TranslationData:
    data_dir = Path(data_dir)
    vocab = Subtokenizer.from_file(_need(data_dir / VOCAB_FILE))
    parts: dict[str, list[np.ndarray]] = {"src": [], "tgt": [], "src_len": [], "tgt_len": []}
    for src_path, tgt_path in train_shards(data_dir):
        (src_ids, src_len), (tgt_ids, tgt_len) = read_ids(src_path), read_ids(tgt_path)
        if len(src_len) != len(tgt_len):
            raise DatasetError(f"{src_path.name} has {len(src_len)} lines but {tgt_path.name} has {len(tgt_len)}")
        for key, value in (("src", src_ids), ("tgt", tgt_ids), ("src_len", src_len), ("tgt_len", tgt_len)):
            parts[key].append(value)
    src, tgt = Corpus.from_parts(parts["src"], parts["src_len"]), Corpus.from_parts(parts["tgt"], parts["tgt_len"])
    for name, corpus in (("source", src), ("target", tgt)):
        if len(corpus.tokens) and (corpus.tokens.min() < 0 or corpus.tokens.max() >= len(vocab)):
            raise DatasetError(f"training {name} ids reach {int(corpus.tokens.max())}, beyond the "
                               f"{len(vocab)}-subtoken {VOCAB_FILE}: the shards were encoded with another vocabulary")
    keep = (src.lengths <= max_length) & (tgt.lengths <= max_length)
    if not keep.all():
        src, tgt = src.subset(keep), tgt.subset(keep)
    lines = read_test_lines(data_dir / TEST_SRC)
    refs = read_test_lines(_need(data_dir / TEST_REF))
    if len(lines) != len(refs):
        raise DatasetError(f"{TEST_SRC} has {len(lines)} lines but {TEST_REF} has {len(refs)}")
    test = Corpus.from_lists([_encode(vocab, line, n) for n, line in enumerate(lines, 1)])
    return TranslationData(vocab, src, tgt, test, refs, int((~keep).sum()))


def bucket_bounds(max_length: int) -> np.ndarray:
    """Upper bounds (exclusive) of the length buckets: 8, 9, ..., x1.1 each, then max_length + 1."""
    bounds, x = [], MIN_BOUNDARY
    while x < max_length:
        bounds.append(x)
        x = max(x + 1, int(x * BOUNDARY_SCALE))
    return np.array(bounds + [max_length + 1])


def bucket_of(src_len: np.ndarray, tgt_len: np.ndarray, max_length: int) -> np.ndarray:
    return np.searchsorted(bucket_bounds(max_length), np.maximum(src_len, tgt_len), side="right")


def epoch_batches(buckets: np.ndarray, max_length: int, batch_tokens: int, seed: int) -> list[np.ndarray]:
    """The batches of pair indices of one epoch, in order; the same on every rank for one seed."""
    rng = np.random.default_rng(seed)
    bounds = bucket_bounds(max_length)
    batches = []
    for b, bound in enumerate(bounds):
        idx = np.flatnonzero(buckets == b)
        if not len(idx):
            continue
        rng.shuffle(idx)
        size = max(batch_tokens // int(bound), 1)
        batches += [idx[i: i + size] for i in range(0, len(idx), size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def batch_count(buckets: np.ndarray, max_length: int, batch_tokens: int) -> int:
    counts = np.bincount(buckets, minlength=len(bucket_bounds(max_length)))
    sizes = np.maximum(batch_tokens // bucket_bounds(max_length), 1)
    return int(np.sum(-(-counts // sizes)))


@dataclass
class Batch:
    src: torch.Tensor  # (B, S) ids, 0-padded
    tgt: torch.Tensor  # (B, T) ids, EOS last, 0-padded
    src_pad: Optional[torch.Tensor]  # (B, S) True at padding; None when no sentence is padded
    tokens: int  # real source + target tokens, what the throughput meter counts (a host int: no sync)

    def pin_memory(self) -> "Batch":
        """Page-locked tensors (the DataLoader's pin thread calls this, as it does a tensor's), so the
        copy to the GPU overlaps compute."""
        self.src, self.tgt = self.src.pin_memory(), self.tgt.pin_memory()
        self.src_pad = None if self.src_pad is None else self.src_pad.pin_memory()
        return self

    def to(self, device: torch.device) -> "Batch":
        nb = device.type == "cuda"
        pad = None if self.src_pad is None else self.src_pad.to(device, non_blocking=nb)
        return Batch(self.src.to(device, non_blocking=nb), self.tgt.to(device, non_blocking=nb), pad, self.tokens)


def pad(seqs: list[np.ndarray]) -> torch.Tensor:
    out = np.full((len(seqs), max(len(s) for s in seqs)), PAD_ID, dtype=np.int64)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return torch.from_numpy(out)


def lengths_of(corpus: Corpus, idx: np.ndarray) -> np.ndarray:
    """The lengths of sentences `idx` alone (Corpus.lengths differences the whole corpus' offsets at
    every call, 4.5 million of them for WMT17's training side)."""
    return corpus.offsets[idx + 1] - corpus.offsets[idx]


def pad_rows(corpus: Corpus, idx: np.ndarray, lengths: np.ndarray, multiple: int = 1) -> torch.Tensor:
    """(B, L) ids of sentences `idx` (of `lengths`), PAD after each one's end: pad()'s array, made
    with one gather instead of a Python loop over the batch's hundreds of sentences. With the
    lengths of lengths_of, a batch of 8,192 tokens from 4.5 million pairs takes 0.7 ms instead of
    the loop's 11 ms (one core of a 2-core VM). `multiple`: L rounded up to a multiple of it."""
    steps = np.arange(-(-int(lengths.max()) // multiple) * multiple)[None, :]
    inside = steps < lengths[:, None]  # (B, L)
    out = np.full(inside.shape, PAD_ID, dtype=np.int64)
    out[inside] = corpus.tokens[(corpus.offsets[idx][:, None] + steps)[inside]]
    return torch.from_numpy(out)


def collate(src: Corpus, tgt: Corpus, idx: np.ndarray, multiple: int = 1) -> Batch:
    """Pairs `idx` as one batch, padded (each side to a multiple of `multiple`); pinned on CUDA by the
    DataLoader's pin thread (Batch.pin_memory)."""
    idx = np.asarray(idx, dtype=np.int64)
    src_len, tgt_len = lengths_of(src, idx), lengths_of(tgt, idx)
    src_t, tgt_t = pad_rows(src, idx, src_len, multiple), pad_rows(tgt, idx, tgt_len, multiple)
    src_pad = None if src_len.min() == src_t.shape[1] else src_t == PAD_ID
    return Batch(src_t, tgt_t, src_pad, int(src_len.sum() + tgt_len.sum()))


class Collated(Dataset):
    """Batches of training pairs collated by DataLoader workers, ahead of the step and out of the
    training thread: the keys are index arrays of pairs (an epoch's batches, which EpochOrder hands
    the DataLoader as its sampler; batch_size=None), the items their collated Batch."""

    def __init__(self, src: Corpus, tgt: Corpus, multiple: int = 1):
        self.src, self.tgt, self.multiple = src, tgt, multiple

    def __getitem__(self, idx: np.ndarray) -> Batch:
        return collate(self.src, self.tgt, idx, self.multiple)


class EpochOrder:
    """A DataLoader's sampler over Collated: the batches of the epoch being fed, set before each
    epoch's iteration, so that one DataLoader and its persistent workers serve every epoch. A
    DataLoader per epoch would fork its processes again for every epoch: some 70 ms to the first
    batch on a 2-core CPU, where the embedded corpus at 8,192 tokens has epochs of 43 batches, under
    2 s of Transformer-big on an H200."""

    def __init__(self) -> None:
        self.batches: Sequence[np.ndarray] = ()

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def test_batches(test: Corpus, batch_size: int, rank: int, world: int) -> Iterator[tuple[np.ndarray, torch.Tensor]]:
    """This rank's share of the test set as (original indices, padded source (B, S)), longest
    sentences first as the reference's translate_file orders them."""
    order = np.argsort(-test.lengths, kind="stable")
    chunks = [order[i: i + batch_size] for i in range(0, len(order), batch_size)]
    for chunk in chunks[rank::world]:
        yield chunk, pad([test[int(i)] for i in chunk])


def describe(data: TranslationData) -> str:
    return (f"vocabulary {len(data.vocab)}, {len(data.train_src)} training pairs "
            f"({data.discarded} discarded by length), {len(data.test_src)} test sentences")


if __name__ == "__main__":
    describe_command("python -m reference_models.transformer.data DATA_DIR", lambda path: describe(load(path, 256)))
