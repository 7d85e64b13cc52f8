"""BLEU as the Transformer reference computes it (compute_bleu.py), next to SacreBLEU."""
from __future__ import annotations

import random

import pytest
import sacrebleu

from reference_models.transformer.metric import bleu, bleu_tokenize, compute_bleu


def _corrupt(rng: random.Random, line: str) -> str:
    words = line.split()
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(words))
        words[i] = rng.choice(["der", "Haus", "nicht", "und", words[i].upper()])
    if rng.random() < 0.3:
        words = words[: max(1, len(words) - 2)]
    return " ".join(words)


REFS = [
    "Die Stadt hat 3,5 Millionen Einwohner, sagte er am 12. März 2014.",
    "\"Wir wissen es nicht\", erklärte die Sprecherin (SPD) in Berlin!",
    "Das kostet 20 € pro Person - oder 15 $?",
    "Gutes Wetter: Sonne, 25 Grad und kein Regen.",
] * 5


def test_equal_to_sacrebleu_intl_uncased_exp_smoothing_on_ordinary_text():
    rng = random.Random(3)
    for _ in range(20):
        hyps = [_corrupt(rng, r) for r in REFS]
        theirs = sacrebleu.corpus_bleu(hyps, [REFS], lowercase=True, tokenize="intl", smooth_method="exp").score
        assert bleu(hyps, REFS) == pytest.approx(theirs / 100, abs=1e-6)


def test_where_the_reference_tokenizer_and_sacrebleus_intl_differ():
    # the reference pastes the punctuation class into its regular expression unescaped: '\' escapes
    # the ']' after it and is never split off; its "not a digit" is \d, SacreBLEU's \P{N}
    assert bleu_tokenize("a\\b") == ["a\\b"] and bleu_tokenize("x]y") == ["x", "]", "y"]
    assert bleu_tokenize("½.") == ["½", "."]
    intl = sacrebleu.tokenizers.tokenizer_intl.TokenizerV14International()
    assert intl("a\\b").split() == ["a", "\\", "b"] and intl("½.").split() == ["½."]


def test_compute_bleu_by_hand():
    ref, hyp = "a b c d e f".split(), "a b c d x".split()
    # precisions 4/5, 3/4, 2/3, 1/2; brevity penalty exp(1 - 6/5)
    expected = (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25 * 2.718281828459045 ** (1 - 6 / 5)
    assert compute_bleu([ref], [hyp]) == pytest.approx(expected, rel=1e-6)
    # no 4-gram match: 1 / (2 x its 4 four-grams) instead of 0
    hyp = "a b c x d e f".split()
    expected = (6 / 7 * 4 / 6 * 2 / 5 * (1 / (2 * 4))) ** 0.25
    assert compute_bleu([ref], [hyp]) == pytest.approx(expected, rel=1e-6)
    assert compute_bleu([ref], [ref]) == 1.0 and compute_bleu([ref], [[]]) == 0.0


def test_uncased_and_a_fraction():
    assert bleu(["DIE Stadt ist groß ."], ["die stadt ist groß ."]) == 1.0
    with pytest.raises(ValueError, match="hypotheses for"):
        bleu(["a"], ["a", "b"])
