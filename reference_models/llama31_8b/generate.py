"""Write generated English-like documents as C4 (en) JSON-lines files, with a tokenizer learnt from them.

    python -m reference_models.llama31_8b.generate OUT_DIR              # the embedded default
    python -m reference_models.llama31_8b.generate OUT_DIR --train-documents 20000

The words are invented, the files are not: OUT_DIR gets c4-train.NNNNN-of-NNNNN.json.gz and
c4-validation.00000-of-00001.json.gz, gzipped JSON lines {"text", "timestamp", "url"} as AllenAI's C4
release writes them, so c4.py reads them as it reads real C4; and tokenizer.model, a byte-level BPE
vocabulary learnt from the training text (bpe.py) in the tiktoken format of Llama 3.1's own
original/tokenizer.model, so the same tokenizer code reads both.

Each document is about one of `topics` topics: its sentences draw their nouns, verbs and adjectives from
that topic's share of the lexicon, so the words already read tell a model which words come next
(attention over the document pays). A sentence is a subject, a verb that agrees with it in number, an
object, and sometimes a prepositional phrase; an 'and' joins a second clause now and then.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from harness.interface.option_help import module_doc
from harness.interface import generated, generator_cli
from reference_models.llama31_8b.bpe import learn
from reference_models.llama31_8b.c4 import TOKENIZER_FILE
from reference_models.llama31_8b.tokenizer import write_ranks

VERSION = 1  # of what the generator writes for a given spec: a change that alters the files bumps it
ONSETS = list("bdfgklmnprstvwz") + ["br", "cl", "dr", "gr", "pl", "st", "tr", "sh", "th"]
VOWELS = ["a", "e", "i", "o", "u", "ea", "oo", "ai"]
CODAS = ["", "", "n", "r", "l", "m", "t", "s"]
PREPOSITIONS = ["in", "on", "under", "near", "with", "behind"]


@dataclass(frozen=True)
class CorpusSpec:
    # the embedded default (conf/dataset/llama31_8b_embedded.yaml repeats these; a test keeps them equal)
    topics: int = 8
    nouns_per_topic: int = 6
    verbs_per_topic: int = 4
    adjectives_per_topic: int = 4
    sentences: int = 6  # per document, at most (at least 2)
    train_documents: int = 6000
    validation_documents: int = 600
    train_files: int = 2
    merges: int = 120  # BPE merges learnt after the 256 bytes
    seed: int = 0


def _word(rng: np.random.Generator, syllables: int) -> str:
    return "".join(ONSETS[rng.integers(len(ONSETS))] + VOWELS[rng.integers(len(VOWELS))]
                   + CODAS[rng.integers(len(CODAS))] for _ in range(syllables))


class Lexicon:
    def __init__(self, spec: CorpusSpec, rng: np.random.Generator):
        seen: set[str] = set()

        def fresh(syllables: int) -> str:
            while True:
                word = _word(rng, syllables)
                if word not in seen and word not in PREPOSITIONS:
                    seen.add(word)
                    return word

        self.nouns = [[fresh(2) for _ in range(spec.nouns_per_topic)] for _ in range(spec.topics)]
        self.verbs = [[fresh(2) for _ in range(spec.verbs_per_topic)] for _ in range(spec.topics)]
        self.adjectives = [[fresh(3) for _ in range(spec.adjectives_per_topic)] for _ in range(spec.topics)]
        self.sites = [fresh(2) for _ in range(spec.topics)]


def _pick(rng: np.random.Generator, words: list[str]) -> str:
    return words[rng.integers(len(words))]


def _noun_phrase(rng: np.random.Generator, lex: Lexicon, topic: int) -> tuple[str, bool]:
    plural = bool(rng.random() < 0.3)
    noun = _pick(rng, lex.nouns[topic]) + ("s" if plural else "")
    adjective = _pick(rng, lex.adjectives[topic]) + " " if rng.random() < 0.4 else ""
    article = "the" if plural or rng.random() < 0.6 else "a"
    return f"{article} {adjective}{noun}", plural


def _clause(rng: np.random.Generator, lex: Lexicon, topic: int) -> str:
    subject, plural = _noun_phrase(rng, lex, topic)
    verb = _pick(rng, lex.verbs[topic]) + ("" if plural else "s")
    obj, _ = _noun_phrase(rng, lex, topic)
    place = f" {_pick(rng, PREPOSITIONS)} {_noun_phrase(rng, lex, topic)[0]}" if rng.random() < 0.3 else ""
    return f"{subject} {verb} {obj}{place}"


def document(rng: np.random.Generator, lex: Lexicon, spec: CorpusSpec, index: int) -> dict[str, str]:
    """One C4 record: its text, a timestamp and a url, as the C4 files hold them."""
    topic = int(rng.integers(spec.topics))
    sentences = []
    for _ in range(int(rng.integers(2, spec.sentences + 1))):
        text = _clause(rng, lex, topic)
        if rng.random() < 0.2:
            text += " and " + _clause(rng, lex, topic)
        sentences.append(text[0].upper() + text[1:] + ".")
    day = int(rng.integers(1, 29))
    return {"text": " ".join(sentences), "timestamp": f"2019-04-{day:02d}T{index % 24:02d}:{index % 60:02d}:00Z",
            "url": f"https://{lex.sites[topic]}.example/{index}"}


def _write_json_gz(path: Path, records: list[dict[str, str]]) -> None:
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:  # the same bytes every time
        f.write(data)


def write(spec: CorpusSpec, out_dir: str | Path) -> Path:
    """Write every file of the layout into out_dir."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    lex = Lexicon(spec, rng)
    docs = [document(rng, lex, spec, i) for i in range(spec.train_documents + spec.validation_documents)]
    train, validation = docs[:spec.train_documents], docs[spec.train_documents:]
    for n in range(spec.train_files):
        _write_json_gz(out_dir / f"c4-train.{n:05d}-of-{spec.train_files:05d}.json.gz", train[n::spec.train_files])
    _write_json_gz(out_dir / "c4-validation.00000-of-00001.json.gz", validation)
    write_ranks(out_dir / TOKENIZER_FILE, learn((d["text"] for d in train), spec.merges))
    return out_dir


def ensure(spec: CorpusSpec, out_dir: str | Path) -> Path:
    """The generated layout in out_dir, written first if it is missing, made from another spec, or
    no longer what was written (harness.interface.generated checks the stamp's checksums)."""
    return generated.ensure(out_dir, "reference_models.llama31_8b.generate", VERSION, asdict(spec),
                            lambda tmp: write(spec, tmp))


def main() -> None:
    generator_cli.generator_main(module_doc(__name__), CorpusSpec, ensure)


if __name__ == "__main__":
    main()
