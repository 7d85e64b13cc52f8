"""Write the GNMT generator's invented English->German-like corpus in the MLPerf Transformer layout.

    python -m reference_models.transformer.generate OUT_DIR              # the embedded default
    python -m reference_models.transformer.generate OUT_DIR --train-pairs 100000

The sentence pairs are reference_models/text/language.py's, as GNMT's generator writes them for the same
language parameters (the embedded GNMT corpus and this one hold the same sentences). They are written as the
Transformer reference's pipeline writes real WMT text: the plain training text's tokens are counted
and the reference's subword algorithm (subwords.py) builds vocab.ende.32768 from them; every pair
is encoded with EOS appended into round-robin shards utf8/wmt32k-encoded-train-NNNNN-of-NNNNN.{src,dst},
each shard shuffled; the dev split goes into one dev shard; the test split is written as plain
text, newstest2014.en (input) and newstest2014.de (BLEU reference), so data.py and the BLEU
pipeline read these files exactly as they read the real ones.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from harness.interface.option_help import module_doc
from harness.interface import generated, generator_cli
from reference_models.text.language import LanguageSpec, raw, sentence_pairs
from reference_models.transformer import data as layout
from reference_models.transformer.subwords import build, count_tokens
from reference_models.transformer.tokenizer import Subtokenizer, write_vocab

VERSION = 1  # of what the generator writes for a given spec: a change that alters the files bumps it


@dataclass(frozen=True)
class CorpusSpec:
    language: LanguageSpec = LanguageSpec()  # the GNMT generator's language pair and split sizes
    train_shards: int = 4  # the reference writes 100; a small corpus needs fewer
    min_count: int = 6  # the reference's subword threshold (its _TRAIN_DATA_MIN_COUNT)

    @classmethod
    def from_flat(cls, params: dict[str, Any]) -> "CorpusSpec":
        """From the flat mapping of conf/dataset/transformer_embedded.yaml's generator."""
        params = dict(params)
        own = {f.name: params.pop(f.name) for f in fields(cls) if f.name != "language" and f.name in params}
        return cls(LanguageSpec(**params), **own)

    def flat(self) -> dict[str, Any]:
        return {**asdict(self.language), "train_shards": self.train_shards, "min_count": self.min_count}


def _write_ids(path: Path, lines: list[list[int]]) -> None:
    path.write_text("".join(" ".join(map(str, ids)) + "\n" for ids in lines), encoding="ascii")


def write(spec: CorpusSpec, out_dir: str | Path) -> Path:
    """Write every file of the layout into out_dir."""
    out_dir = Path(out_dir)
    (out_dir / layout.SHARD_DIR).mkdir(parents=True, exist_ok=True)
    train, dev, test = sentence_pairs(spec.language)
    train_text = [(raw(s), raw(t)) for s, t in train]
    vocab = build(count_tokens(line for pair in train_text for line in pair), spec.min_count)
    write_vocab(out_dir / layout.VOCAB_FILE, vocab)
    tok = Subtokenizer(vocab)

    rng = np.random.default_rng(spec.language.seed + 1)

    def shards(tag: str, pairs: list[tuple[str, str]], count: int) -> None:
        for n in range(count):
            mine = pairs[n::count]  # round robin, as the reference deals pairs to shards
            order = rng.permutation(len(mine))  # then shuffles each shard
            name = out_dir / layout.SHARD_DIR / layout.shard_name(tag, n + 1, count)
            _write_ids(name.with_suffix(".src"), [tok.encode(mine[i][0], add_eos=True) for i in order])
            _write_ids(name.with_suffix(".dst"), [tok.encode(mine[i][1], add_eos=True) for i in order])

    shards("train", train_text, spec.train_shards)
    shards("dev", [(raw(s), raw(t)) for s, t in dev], 1)
    (out_dir / layout.TEST_SRC).write_text("".join(raw(s) + "\n" for s, _ in test), encoding="utf-8")
    (out_dir / layout.TEST_REF).write_text("".join(raw(t) + "\n" for _, t in test), encoding="utf-8")
    return out_dir


def ensure(spec: CorpusSpec, out_dir: str | Path) -> Path:
    """The generated layout in out_dir, written first if it is missing, made from another spec, or
    no longer what was written (harness.interface.generated checks the stamp's checksums)."""
    return generated.ensure(out_dir, "reference_models.transformer.generate", VERSION, spec.flat(),
                            lambda tmp: write(spec, tmp))


def main() -> None:
    args = vars(generator_cli.command_line(module_doc(__name__), "out_dir", CorpusSpec().flat()).parse_args())
    out_dir = args.pop("out_dir")
    print(f"wrote {ensure(CorpusSpec.from_flat(args), out_dir)}")


if __name__ == "__main__":
    main()
