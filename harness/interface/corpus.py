"""Sentences of token ids of varying length, stored flat: what a translation model's data is.

    corpus = Corpus.from_lists([[2, 7, 3], [2, 3]]); corpus[1]; corpus.lengths; corpus.subset(corpus.lengths < 3)

Sentence i is tokens[offsets[i]:offsets[i + 1]]: one int32 array and one int64 array, however many
sentences (WMT's 4.5 million pairs would be 9 million Python lists otherwise).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass
class Corpus:
    tokens: np.ndarray  # int32
    offsets: np.ndarray  # int64, len n + 1

    @classmethod
    def from_parts(cls, tokens: Sequence[np.ndarray], lengths: Sequence[np.ndarray]) -> "Corpus":
        """From consecutive chunks: the tokens of some sentences and those sentences' lengths."""
        all_lengths = np.concatenate(lengths).astype(np.int64) if len(lengths) else np.zeros(0, np.int64)
        offsets = np.zeros(len(all_lengths) + 1, dtype=np.int64)
        np.cumsum(all_lengths, out=offsets[1:])
        all_tokens = np.concatenate(tokens).astype(np.int32) if len(tokens) else np.zeros(0, np.int32)
        if len(all_tokens) != offsets[-1]:
            raise ValueError(f"{len(all_tokens)} tokens for sentences of {offsets[-1]} tokens in all")
        return cls(all_tokens, offsets)

    @classmethod
    def from_lists(cls, seqs: Sequence[Sequence[int]]) -> "Corpus":
        lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
        tokens = np.fromiter((t for s in seqs for t in s), dtype=np.int32, count=int(lengths.sum()))
        return cls.from_parts([tokens], [lengths])

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.tokens[self.offsets[i]: self.offsets[i + 1]]

    def subset(self, keep: np.ndarray) -> "Corpus":
        """The sentences where the boolean mask `keep` is true, in order."""
        return Corpus.from_parts([self.tokens[np.repeat(keep, self.lengths)]], [self.lengths[keep]])
