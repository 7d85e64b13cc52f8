"""BLEU as MLPerf's Transformer reference scores it: its compute_bleu.py, not SacreBLEU's default.

The reference lowercases hypotheses and references (uncased BLEU, the one held to the target),
tokenizes both with bleu_tokenize (mteval-v14's international rules: punctuation split off unless
between digits, symbols split off) and scores the corpus with Tensor2Tensor's compute_bleu: clipped
n-gram matches up to 4, an n-gram order with no match scored 1 / (2^k x its count) for the k-th
such order, the log precisions summed over the orders that have any and divided by 4, the brevity
penalty exp(1 - r/c) when shorter. No rounding; logged as the fraction it is (0.25 is 25 BLEU).

SacreBLEU's `tokenize="intl", lowercase=True, smooth_method="exp"` gives the same number on
ordinary text (tests/reference_models/transformer/test_metric.py shows it), but not always: the
reference builds its punctuation class by pasting every punctuation character into a regular
expression, so its backslash escapes the following ']' and is itself never split off, and its
"not a digit" is \\d where SacreBLEU's is \\P{N}. The reference's code is therefore followed here.
"""
from __future__ import annotations

import collections
import functools
import math
import re
import sys
import unicodedata
from typing import Sequence

import numpy as np

MAX_ORDER = 4


@functools.lru_cache(maxsize=1)
def _patterns() -> tuple[re.Pattern, re.Pattern, re.Pattern]:
    def chars(prefix: str) -> str:
        return "".join(chr(x) for x in range(sys.maxunicode) if unicodedata.category(chr(x)).startswith(prefix))

    punctuation = chars("P")  # pasted unescaped, exactly as the reference builds these expressions
    return (re.compile(r"([^\d])([" + punctuation + r"])"), re.compile(r"([" + punctuation + r"])([^\d])"),
            re.compile("([" + chars("S") + "])"))


def bleu_tokenize(text: str) -> list[str]:
    nondigit_punct, punct_nondigit, symbol = _patterns()
    text = nondigit_punct.sub(r"\1 \2 ", text)
    text = punct_nondigit.sub(r" \1 \2", text)
    return symbol.sub(r" \1 ", text).split()


def _ngrams(tokens: Sequence[str]) -> collections.Counter:
    return collections.Counter(tuple(tokens[i: i + n]) for n in range(1, MAX_ORDER + 1)
                               for i in range(len(tokens) - n + 1))


def compute_bleu(references: Sequence[Sequence[str]], translations: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU of tokenized translations against one tokenized reference each, as a fraction."""
    ref_len = hyp_len = 0
    matches, possible = [0] * MAX_ORDER, [0] * MAX_ORDER
    for ref, hyp in zip(references, translations):
        ref_len += len(ref)
        hyp_len += len(hyp)
        ref_counts, hyp_counts = _ngrams(ref), _ngrams(hyp)
        for ngram, count in ref_counts.items():
            matches[len(ngram) - 1] += min(count, hyp_counts[ngram])
        for ngram, count in hyp_counts.items():
            possible[len(ngram) - 1] += count
    precisions, smooth = [0.0] * MAX_ORDER, 1.0
    for i in range(MAX_ORDER):
        if possible[i] > 0:
            if matches[i] > 0:
                precisions[i] = matches[i] / possible[i]
            else:
                smooth *= 2
                precisions[i] = 1.0 / (smooth * possible[i])
    geo_mean = math.exp(sum(math.log(p) for p in precisions if p) / MAX_ORDER) if max(precisions) > 0 else 0.0
    if hyp_len == 0 or ref_len == 0:
        return 0.0  # the reference divides by zero here: nothing was translated
    ratio = hyp_len / ref_len
    # the reference returns it as a float32, and so it was logged
    return float(np.float32(geo_mean * (math.exp(1 - 1.0 / ratio) if ratio < 1.0 else 1.0)))


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Uncased BLEU of detokenized hypotheses against the plain-text references, as a fraction."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    refs = [bleu_tokenize(r.lower()) for r in references]
    hyps = [bleu_tokenize(h.lower()) for h in hypotheses]
    return compute_bleu(refs, hyps)
