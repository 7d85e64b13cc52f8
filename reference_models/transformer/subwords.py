"""How the reference builds its subword vocabulary from text (Tensor2Tensor's algorithm).

Token counts come from the training text (split as the tokenizer splits it). Starting from the
single characters, four rounds each cut every escaped token into the current subtokens, count
every substring that starts where a subtoken starts, and keep, longest first, the substrings seen
at least `min_count` times once the counts of longer kept subtokens are taken off their prefixes;
every character stays, so any text can be encoded. The list is ordered by count, the reserved
padding and end-of-sentence tokens first. The reference made vocab.ende.32768 (33,708 subtokens)
this way with min_count 6 from about 1 MB sampled evenly from each training file.

    python -m reference_models.transformer.subwords OUT_VOCAB MIN_COUNT FILE...   # build and write a vocabulary
"""
from __future__ import annotations

import collections
import os
import sys
from pathlib import Path
from typing import Iterable, Mapping

from reference_models.transformer.tokenizer import RESERVED, alphabet_of, escape, split_escaped, split_tokens, write_vocab


def count_tokens(lines: Iterable[str]) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for line in lines:
        counts.update(split_tokens(line.strip()))
    return counts


def sampled_lines(path: str | Path, byte_limit: float = 1e6) -> Iterable[str]:
    """About byte_limit bytes of a file's lines, spread over the whole file: after each line taken,
    as many lines are skipped as the file's size / (2 x byte_limit), as the reference samples."""
    skip = int(os.path.getsize(path) / (byte_limit * 2))
    budget, counter = byte_limit, 0
    with open(path, encoding="utf-8", newline="\n") as f:
        for line in f:
            if counter < skip:
                counter += 1
                continue
            if budget < 0:
                break
            line = line.strip()
            budget -= len(line)
            counter = 0
            yield line


def _substring_counts(token_counts: Mapping[str, int], alphabet: set[str], index: dict[str, int],
                      max_len: int) -> collections.defaultdict:
    counts: collections.defaultdict = collections.defaultdict(int)
    for token, count in token_counts.items():
        escaped = escape(token, alphabet)
        start = 0
        for piece in split_escaped(escaped, index, max_len):
            for end in range(start + 1, len(escaped) + 1):
                counts[escaped[start:end]] += count
            start += len(piece)
    return counts


def _kept(counts: collections.defaultdict, min_count: int, alphabet: set[str]) -> tuple[list[str], int]:
    by_length: list[set[str]] = []
    for sub, count in counts.items():
        if count >= min_count:
            while len(by_length) <= len(sub):
                by_length.append(set())
            by_length[len(sub)].add(sub)
    candidates = []
    max_len = len(by_length) - 1
    for length in range(max_len, 0, -1):
        for sub in by_length[length]:
            count = counts[sub]
            if count < min_count:  # most of its occurrences were inside a longer kept subtoken
                continue
            if sub not in alphabet and sub not in RESERVED:
                candidates.append((count, sub))
            for end in range(1, length):
                counts[sub[:end]] -= count
    candidates.extend((counts.get(a, 0), a) for a in alphabet)
    return RESERVED + [t for _, t in sorted(candidates, reverse=True)], max_len


def build(token_counts: Mapping[str, int], min_count: int, rounds: int = 4) -> list[str]:
    """The subtoken list (reserved tokens first) that the reference would build from these counts."""
    alphabet = alphabet_of(token_counts) | alphabet_of(RESERVED)
    subtokens, max_len = RESERVED + sorted(alphabet), 1
    for _ in range(rounds):
        index = {t: i for i, t in enumerate(subtokens)}
        subtokens, max_len = _kept(_substring_counts(token_counts, alphabet, index, max_len), min_count, alphabet)
    return subtokens


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: python -m reference_models.transformer.subwords OUT_VOCAB MIN_COUNT FILE...")
    counts = count_tokens(line for name in sys.argv[3:] for line in sampled_lines(name))
    vocab = build(counts, int(sys.argv[2]))
    write_vocab(sys.argv[1], vocab)
    print(f"{len(vocab)} subtokens -> {sys.argv[1]}")
