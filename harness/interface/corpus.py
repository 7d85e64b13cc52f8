"""Sentences of token ids of varying length, stored flat: what a translation model's data is.

    corpus = Corpus.from_lists([[2, 7, 3], [2, 3]]); corpus[1]; corpus.lengths; corpus.subset(corpus.lengths < 3)

Sentence i is tokens[offsets[i]:offsets[i + 1]]: one int32 array and one int64 array, however many
sentences (WMT's 4.5 million pairs would be 9 million Python lists otherwise).

The text files around a corpus (vocabularies, test sets) are read through `read_text`, which names
the file, the line and the byte offset of a byte that is not UTF-8, and vocabularies are checked
with `repeated`: a token listed twice would take the id of its last line (the references' dicts
keep the last), encoding text differently from the shards that were made with the first.

    read_text(Path("newstest2014.en"))   # DataError: ... line 17 (byte offset 1234): byte 0xe9 is not UTF-8 ...
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from harness.interface.contract import DataError


def read_text(path: str | Path) -> str:
    """The file's text, decoded as UTF-8; a byte that is not UTF-8 is a DataError naming the file,
    the line and the offset."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise DataError(f"{path} line {line} (byte offset {err.start}): byte 0x{data[err.start]:02x} is not UTF-8 "
                        f"({err.reason}): the file must be UTF-8 text; re-encode it (e.g. iconv -f latin1 -t utf-8) "
                        "or fix that line") from None


def text_lines(text: str, universal: bool = True) -> list[str]:
    """The lines of a text as iterating over the open file gives them, without their line ends: split
    at "\\n" (and, universal=True as open()'s default newline=None does, at "\\r\\n" and "\\r"), never at
    the other characters str.splitlines() also splits at (U+2028, "\\x0c", ...)."""
    if universal:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the line end of the last line, not a line
    return lines


def repeated(tokens: Sequence[str]) -> Optional[tuple[int, int, str]]:
    """(first index, repeating index, token) of the first token that appears twice, or None."""
    seen: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token in seen:
            return seen[token], i, token
        seen[token] = i
    return None


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
