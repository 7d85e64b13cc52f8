"""Write a synthetic English->German-like parallel corpus in MLPerf's preprocessed WMT16 layout.

    python -m reference_models.gnmt.generate OUT_DIR              # the embedded default
    python -m reference_models.gnmt.generate OUT_DIR --train-pairs 100000

The languages are invented, the files are not: OUT_DIR gets vocab.bpe.32000, the BPE-segmented,
Moses-tokenized train.tok.clean.bpe.32000.{en,de}, newstest_dev.tok.clean.bpe.32000.{en,de} and
newstest2014.tok.bpe.32000.en, and the raw (detokenized) newstest2014.de references, so the loader
and the BLEU pipeline that read real WMT16 read these unchanged.

The sentences are reference_models/text/language.py's (shared with the Transformer's corpus).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path

from harness.interface.option_help import module_doc
from harness.interface import generated, generator_cli
from reference_models.gnmt.tokenizer import VOCAB_FILE
from reference_models.text.language import LanguageSpec, raw, sentence_pairs, tokenized

VERSION = 1  # of what the generator writes for a given spec: a change that alters the files bumps it

TRAIN = ("train.tok.clean.bpe.32000.en", "train.tok.clean.bpe.32000.de")
DEV = ("newstest_dev.tok.clean.bpe.32000.en", "newstest_dev.tok.clean.bpe.32000.de")
TEST_SRC, TEST_REF = "newstest2014.tok.bpe.32000.en", "newstest2014.de"


def generate(spec: LanguageSpec) -> dict[str, list[str]]:
    """File name -> lines of the whole layout."""
    train, dev, test = sentence_pairs(spec)
    files = {
        TRAIN[0]: [tokenized(s) for s, _ in train], TRAIN[1]: [tokenized(t) for _, t in train],
        DEV[0]: [tokenized(s) for s, _ in dev], DEV[1]: [tokenized(t) for _, t in dev],
        TEST_SRC: [tokenized(s) for s, _ in test], TEST_REF: [raw(t) for _, t in test],
    }
    # the vocabulary is every unit of the training text, most frequent first, as get_vocab.py lists it
    counts = Counter(u for name in TRAIN for line in files[name] for u in line.split())
    files[VOCAB_FILE] = [u for u, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return files


def write(spec: LanguageSpec, out_dir: str | Path) -> Path:
    """Write every file of the layout into out_dir."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, lines in generate(spec).items():
        (out_dir / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out_dir


def ensure(spec: LanguageSpec, out_dir: str | Path) -> Path:
    """The generated layout in out_dir, written first if it is missing, made from another spec, or
    no longer what was written (harness.interface.generated checks the stamp's checksums)."""
    return generated.ensure(out_dir, "reference_models.gnmt.generate", VERSION, asdict(spec),
                            lambda tmp: write(spec, tmp))


def main() -> None:
    generator_cli.generator_main(module_doc(__name__), LanguageSpec, ensure)


if __name__ == "__main__":
    main()
