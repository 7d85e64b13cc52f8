"""BLEU as MLPerf's GNMT reference scores it: sacrebleu over detokenized text, lowercased, 'intl'
tokenization, against the raw newstest2014 references; rounded to two decimals like the reference
and logged as a fraction (24.35 -> 0.2435)."""
from __future__ import annotations

from typing import Sequence


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    import sacrebleu

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    score = sacrebleu.corpus_bleu(list(hypotheses), [list(references)], lowercase=True, tokenize="intl")
    return round(score.score, 2) / 100.0
