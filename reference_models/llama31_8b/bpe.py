"""A small byte-level BPE vocabulary learnt from a text, written as a tiktoken file like Llama 3's.

    python -c "from reference_models.llama31_8b.bpe import learn; print(len(learn(['the cat sat'] * 9, 4)))"

The embedded dataset's tokenizer (reference_models/llama31_8b/generate.py): the text is cut by Llama 3's
pre-tokenizing expression, every piece starts as its bytes (the 256 single bytes are ranks 0-255), and
`merges` times the most frequent adjacent pair over all pieces (ties: the smaller pair of bytes) is
joined into a new token, ranked in the order it was learnt, as GPT-2's and Llama 3's files were made.
tiktoken's encoder, which joins the lowest-ranked pair first, then gives each piece the merges learnt.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

import regex

from reference_models.llama31_8b.tokenizer import PATTERN


def learn(texts: Iterable[str], merges: int) -> list[bytes]:
    """The tokens, rank order: the 256 bytes, then up to `merges` learnt pairs."""
    pattern = regex.compile(PATTERN)
    pieces: Counter[tuple[bytes, ...]] = Counter()
    for text in texts:
        for piece in pattern.findall(text):
            raw = piece.encode("utf-8")
            pieces[tuple(raw[i:i + 1] for i in range(len(raw)))] += 1
    tokens = [bytes([b]) for b in range(256)]
    words = dict(pieces)
    for _ in range(merges):
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        joined = best[0] + best[1]
        tokens.append(joined)
        joined_words: Counter[tuple[bytes, ...]] = Counter()
        for word, count in words.items():
            joined_words[_join(word, best, joined)] += count
        words = dict(joined_words)
    return tokens


def _join(word: tuple[bytes, ...], pair: tuple[bytes, bytes], joined: bytes) -> tuple[bytes, ...]:
    out: list[bytes] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(joined)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)
