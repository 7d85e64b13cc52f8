"""An invented English->German-like language pair: the sentence pairs of GNMT's and the Transformer's
embedded corpora (reference_models/gnmt/generate.py and reference_models/transformer/generate.py write
them in their references' layouts).

    python -c "from reference_models.text.language import LanguageSpec, sentence_pairs; print(sentence_pairs(LanguageSpec(train_pairs=2, dev_pairs=1, test_pairs=1))[0])"

Source sentences follow a small English-like grammar (subject, verb, object, an optional prepositional
phrase and an optional 'because' clause). Their translations obey rules that only attention can serve:
- word order: adjectives follow their noun, the prepositional phrase moves before the object, and
  the verb goes to the end of its clause (SOV), far from its source position;
- agreement: determiners and adjective endings agree with the noun's gender (a property of the
  target noun, invisible in the source), number and case (subject, object, after a preposition);
  the clause-final verb agrees in number with the subject at the other end of the clause;
- length changes: plural and inflection endings are separate BPE units, some source verbs are two
  words ('give up') and translate to one, German nouns are capitalised;
- noise: a fifth of the nouns have two interchangeable translations, drawn per sentence, so no
  model can reach BLEU 1 and a model must still learn everything else.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LanguageSpec:
    # the embedded default (conf/dataset/gnmt_embedded.yaml repeats these; a test keeps them equal)
    nouns: int = 60
    verbs: int = 24
    adjectives: int = 20
    prepositions: int = 6
    synonym_rate: float = 0.2
    pp_rate: float = 0.4  # share of clauses with a prepositional phrase
    subclause_rate: float = 0.1  # share of sentences with a 'because' clause
    train_pairs: int = 20000
    dev_pairs: int = 500
    test_pairs: int = 500
    seed: int = 0


# German-like function words: [definite][case][gender m, f, n, plural]
DETERMINERS = {
    True: {"nom": ["der", "die", "das", "die"], "acc": ["den", "die", "das", "die"], "dat": ["dem", "der", "dem", "den"]},
    False: {"nom": ["ein", "eine", "ein", "einige"], "acc": ["einen", "eine", "ein", "einige"],
            "dat": ["einem", "einer", "einem", "einigen"]},
}
ADJ_ENDINGS = {  # weak endings after a definite article, strong-ish after an indefinite one
    True: {"nom": ["e", "e", "e", "en"], "acc": ["en", "e", "e", "en"], "dat": ["en", "en", "en", "en"]},
    False: {"nom": ["er", "e", "es", "e"], "acc": ["en", "e", "es", "e"], "dat": ["en", "en", "en", "en"]},
}
PLURAL_ENDINGS = ["e", "en", "er"]  # by noun class
SRC_ONSETS = list("bdfgklmnprstvwz") + ["br", "cl", "dr", "gr", "pl", "st", "tr", "sh", "th"]
SRC_VOWELS = ["a", "e", "i", "o", "u", "ea", "oo", "ai"]
TGT_ONSETS = list("bdfghklmnprstwz") + ["sch", "kr", "pf", "st", "tr", "gl", "br"]
TGT_VOWELS = ["a", "e", "i", "o", "u", "ä", "ö", "ü", "ei", "au", "ie"]
CODAS = ["", "", "n", "r", "l", "m", "t", "s", "ck"]


class Word:
    """A word as BPE units: all but the last end in '@@', as subword-nmt writes them."""

    def __init__(self, pieces: list[str]):
        self.pieces = pieces

    def units(self, ending: str = "") -> list[str]:
        pieces = self.pieces + ([ending] if ending else [])
        return [p + "@@" for p in pieces[:-1]] + [pieces[-1]]

    def text(self, ending: str = "") -> str:
        return "".join(self.pieces) + ending


class Lexicon:
    def __init__(self, spec: LanguageSpec, rng: np.random.Generator):
        seen: set[str] = set()
        self.spec = spec

        def make(onsets, vowels, syllables, capital=False) -> Word:
            while True:
                sylls = [rng.choice(onsets) + rng.choice(vowels) for _ in range(syllables)]
                sylls[-1] += rng.choice(CODAS)
                if capital:
                    sylls[0] = sylls[0].capitalize()
                text = "".join(sylls)
                if text.lower() not in seen and len(text) > 2:
                    seen.add(text.lower())
                    # long words come as two BPE units, as frequent stems do in real BPE
                    return Word([sylls[0], "".join(sylls[1:])] if syllables > 1 and rng.random() < 0.6 else [text])

        def src(n):
            return [make(SRC_ONSETS, SRC_VOWELS, int(rng.integers(1, 3))) for _ in range(n)]

        def tgt(n, capital=False):
            return [make(TGT_ONSETS, TGT_VOWELS, int(rng.integers(1, 4)), capital) for _ in range(n)]

        self.src_nouns = src(spec.nouns)
        self.tgt_nouns = [[w] for w in tgt(spec.nouns, capital=True)]
        for options in self.tgt_nouns:
            if rng.random() < spec.synonym_rate:
                options.append(tgt(1, capital=True)[0])
        self.gender = rng.integers(0, 3, spec.nouns)
        self.noun_class = rng.integers(0, 3, spec.nouns)
        self.src_adjs, self.tgt_adjs = src(spec.adjectives), tgt(spec.adjectives)
        self.src_preps, self.tgt_preps = src(spec.prepositions), tgt(spec.prepositions)
        # a quarter of the source verbs are two words ('give up'); every target verb is one
        particles = src(4)
        self.src_verbs = [
            [w] if rng.random() < 0.75 else [w, particles[int(rng.integers(0, 4))]] for w in src(spec.verbs)
        ]
        self.tgt_verbs = tgt(spec.verbs)


def _noun_phrase(rng, lex: Lexicon, case: str) -> tuple[list[list[str]], list[list[str]], int]:
    """(source words, target words, number) of one noun phrase; words are lists of BPE units."""
    noun = int(rng.integers(0, len(lex.src_nouns)))
    plural = rng.random() < 0.35
    definite = rng.random() < 0.6
    adjs = [int(a) for a in rng.choice(len(lex.src_adjs), size=int(rng.choice([0, 0, 1, 1, 2])), replace=False)]
    slot = 3 if plural else int(lex.gender[noun])

    src = [["the"] if definite else (["some"] if plural else ["a"])]
    src += [lex.src_adjs[a].units() for a in adjs]
    src.append(lex.src_nouns[noun].units("s" if plural else ""))

    options = lex.tgt_nouns[noun]
    target_noun = options[int(rng.integers(0, len(options)))]
    tgt = [[DETERMINERS[definite][case][slot]]]
    tgt.append(target_noun.units(PLURAL_ENDINGS[lex.noun_class[noun]] if plural else ""))
    tgt += [lex.tgt_adjs[a].units(ADJ_ENDINGS[definite][case][slot]) for a in adjs]
    return src, tgt, int(plural)


def _clause(rng, lex: Lexicon) -> tuple[list[list[str]], list[list[str]]]:
    subj_s, subj_t, plural = _noun_phrase(rng, lex, "nom")
    obj_s, obj_t, _ = _noun_phrase(rng, lex, "acc")
    verb = int(rng.integers(0, len(lex.src_verbs)))
    src = subj_s + [w.units() for w in lex.src_verbs[verb]] + obj_s
    tgt = subj_t
    if rng.random() < lex.spec.pp_rate:
        prep = int(rng.integers(0, len(lex.src_preps)))
        pp_s, pp_t, _ = _noun_phrase(rng, lex, "dat")
        src += [lex.src_preps[prep].units()] + pp_s
        tgt += [lex.tgt_preps[prep].units()] + pp_t
    tgt += obj_t + [lex.tgt_verbs[verb].units("en" if plural else "t")]
    return src, tgt


def sentence_pair(rng, lex: Lexicon) -> tuple[list[list[str]], list[list[str]]]:
    src, tgt = _clause(rng, lex)
    if rng.random() < lex.spec.subclause_rate:
        sub_s, sub_t = _clause(rng, lex)
        src += [[","], ["because"]] + sub_s
        tgt += [[","], ["weil"]] + sub_t
    return src + [["."]], tgt + [["."]]


def _capitalise_first(words: list[list[str]]) -> list[list[str]]:
    first = words[0]
    return [[first[0][:1].upper() + first[0][1:]] + first[1:]] + words[1:]


def tokenized(words: list[list[str]]) -> str:
    """Moses-tokenized, BPE-segmented line: units separated by spaces."""
    return " ".join(u for w in words for u in w)


def raw(words: list[list[str]]) -> str:
    """The detokenized sentence: whole words, punctuation attached to the word before it."""
    out = ""
    for w in words:
        text = "".join(u[:-2] if u.endswith("@@") else u for u in w)
        out += text if text in {".", ","} or not out else " " + text
    return out


Words = list[list[str]]  # a sentence: its words, each a list of BPE units


def sentence_pairs(spec: LanguageSpec) -> tuple[list[tuple[Words, Words]], ...]:
    """The (source, target) sentences of the train, dev and test splits, capitalised: what every
    layout written from this language pair holds (GNMT's here, the Transformer's in its own)."""
    rng = np.random.default_rng(spec.seed)
    lex = Lexicon(spec, rng)
    pairs = [sentence_pair(rng, lex) for _ in range(spec.train_pairs + spec.dev_pairs + spec.test_pairs)]
    pairs = [(_capitalise_first(s), _capitalise_first(t)) for s, t in pairs]
    dev_end = spec.train_pairs + spec.dev_pairs
    return pairs[: spec.train_pairs], pairs[spec.train_pairs: dev_end], pairs[dev_end:]
