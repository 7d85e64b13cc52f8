"""Write generated government reports and their summaries as the reference's packed GovReport parquet
files, with a small Llama 2-shaped base model pretrained on other reports of the same kind.

    python -m reference_models.llama2_70b_lora.generate OUT_DIR              # the embedded default
    python -m reference_models.llama2_70b_lora.generate OUT_DIR --train-documents 4000

The words are invented, the layout is not: OUT_DIR gets train-00000-of-00001.parquet and
validation-00000-of-00001.parquet (govreport.py), each document "### Summarize the following text: {report}
### Summary: {summary} </s>" after <s>, packed into rows of seq_len tokens, the validation labels -100 but on
the summaries, as the reference's scripts/utils.py makes them; and base/, a Hugging Face Llama folder
(checkpoint.py) holding a decoder pretrained on reports alone (pretrain.py), which has never seen a prompt
or a summary: the fine-tune has the task to learn, as Llama 2 had GovReport's. Words are whole tokens
(ids 0-2 are <unk>, <s> and </s>, as in Llama 2's vocabulary), so no tokenizer file is needed.

A report is about one agency and one of its programs: an opening sentence names them and the year, a
finding gives an amount in the agency's unit, a recommendation (most often the agency's usual action)
closes it, and sentences of the agency's own nouns and verbs fill between. Its summary puts the
year, the agency, the program, the amount, the unit and the action in sentences of its own, in words
the reports use (the base's output layer has learnt no others).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from harness.interface.option_help import module_doc
from harness.interface import generated, generator_cli
from reference_models.llama2_70b_lora import govreport

VERSION = 1  # of what the generator writes for a given spec: a change that alters the files bumps it
BASE_DIR = "base"
SPECIAL = ["<unk>", "<s>", "</s>"]
PROMPT = "### Summarize the following text:".split()
SUMMARY = "### Summary:".split()
ACTIONS = ["expand", "reduce", "audit", "end", "continue"]
GLUE = "the that found reviewed program recommends review it should used .".split() + ACTIONS
PREPOSITIONS = ["in", "under", "near", "with", "behind", "across"]
ONSETS = list("bdfgklmnprstvwz") + ["br", "cl", "dr", "gr", "pl", "st", "tr", "sh", "th"]
VOWELS = ["a", "e", "i", "o", "u", "ea", "oo", "ai"]


@dataclass(frozen=True)
class CorpusSpec:
    # the embedded default (conf/dataset/llama2_70b_lora_embedded.yaml repeats these; a test keeps them equal)
    agencies: int = 12
    programs_per_agency: int = 4
    nouns_per_agency: int = 6
    verbs_per_agency: int = 4
    units: int = 6
    amounts: int = 20
    years: int = 10
    filler: int = 6  # filler sentences per report, at most (at least 2)
    usual_action: float = 0.8  # how often a report recommends its agency's usual action
    train_documents: int = 3000
    validation_documents: int = 200
    pretrain_documents: int = 4000
    seq_len: int = 256
    dim: int = 128
    layers: int = 4
    heads: int = 8
    kv_heads: int = 2
    ffn_dim: int = 448
    pretrain_steps: int = 250
    pretrain_batch: int = 16
    pretrain_lr: float = 3e-3
    seed: int = 0


class Lexicon:
    """The invented words and every token's id: specials, the prompt's and the glue words, then the lexicon.
    Each agency has its own programs, nouns, verbs, unit and usual action."""

    def __init__(self, spec: CorpusSpec, rng: np.random.Generator):
        seen: set[str] = set(GLUE) | set(PREPOSITIONS)

        def fresh(syllables: int) -> str:
            while True:
                word = "".join(ONSETS[rng.integers(len(ONSETS))] + VOWELS[rng.integers(len(VOWELS))]
                               for _ in range(syllables))
                if word not in seen:
                    seen.add(word)
                    return word

        self.agencies = [fresh(3).upper() for _ in range(spec.agencies)]
        self.programs = [[fresh(3) for _ in range(spec.programs_per_agency)] for _ in range(spec.agencies)]
        self.nouns = [[fresh(2) for _ in range(spec.nouns_per_agency)] for _ in range(spec.agencies)]
        self.verbs = [[fresh(2) + "s" for _ in range(spec.verbs_per_agency)] for _ in range(spec.agencies)]
        self.units = [fresh(2) for _ in range(spec.units)]
        self.unit_of = [int(u) for u in rng.integers(spec.units, size=spec.agencies)]
        self.action_of = [int(a) for a in rng.integers(len(ACTIONS), size=spec.agencies)]
        self.amounts = [str(n) for n in range(1, spec.amounts + 1)]
        self.years = [str(2000 + y) for y in range(spec.years)]
        words = [*SPECIAL, *dict.fromkeys(PROMPT + SUMMARY + GLUE + PREPOSITIONS), *self.agencies,
                 *(w for ws in self.programs + self.nouns + self.verbs for w in ws), *self.units, *self.amounts,
                 *self.years]
        self.ids = {w: i for i, w in enumerate(words)}

    def encode(self, words: list[str]) -> list[int]:
        return [self.ids[w] for w in words]


def _pick(rng: np.random.Generator, words: list[str]) -> str:
    return words[rng.integers(len(words))]


def _filler(rng: np.random.Generator, lex: Lexicon, a: int) -> list[str]:
    words = ["the", _pick(rng, lex.nouns[a]), _pick(rng, lex.verbs[a]), "the", _pick(rng, lex.nouns[a])]
    if rng.random() < 0.4:
        words += [_pick(rng, PREPOSITIONS), "the", _pick(rng, lex.nouns[a])]
    return words + ["."]


def document(rng: np.random.Generator, lex: Lexicon, spec: CorpusSpec) -> tuple[list[str], list[str]]:
    """(report, summary) as words."""
    a = int(rng.integers(spec.agencies))
    agency, program, unit = lex.agencies[a], _pick(rng, lex.programs[a]), lex.units[lex.unit_of[a]]
    year, amount = _pick(rng, lex.years), _pick(rng, lex.amounts)
    action = ACTIONS[lex.action_of[a]] if rng.random() < spec.usual_action else _pick(rng, ACTIONS)
    fill = [_filler(rng, lex, a) for _ in range(int(rng.integers(2, spec.filler + 1)))]
    cut = int(rng.integers(len(fill) + 1))
    report = ["the", agency, "reviewed", "the", program, "program", "in", year, "."]
    for sentence in fill[:cut]:
        report += sentence
    report += ["the", "review", "found", "that", "the", program, "program", "used", amount, unit, "."]
    for sentence in fill[cut:]:
        report += sentence
    report += ["the", agency, "recommends", "that", "it", "should", action, "the", program, "program", "."]
    summary = ["in", year, agency, "reviewed", program, ".", "it", "used", amount, unit, ".", "it", "should", action, "."]
    return report, summary


def pack(docs: list[list[int]], masks: list[list[bool]], seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """The documents one after another, cut into rows of seq_len (the remainder dropped, as group_texts
    drops it); labels are the ids where the mask is true, -100 elsewhere."""
    ids = np.fromiter((t for d in docs for t in d), dtype=np.int64)
    keep = np.fromiter((m for d in masks for m in d), dtype=bool)
    rows = len(ids) // seq_len
    ids, keep = ids[:rows * seq_len].reshape(rows, seq_len), keep[:rows * seq_len].reshape(rows, seq_len)
    return ids, np.where(keep, ids, govreport.IGNORE)


def encoded(lex: Lexicon, report: list[str], summary: list[str], validation: bool) -> tuple[list[int], list[bool]]:
    """<s> prompt report ### Summary: summary </s>, and where its loss is taken: everywhere in training;
    on the summary alone in validation (the reference masks the prompt, the report and the closing </s>)."""
    head = ["<s>", *PROMPT, *report, *SUMMARY]
    ids = lex.encode(head + summary + ["</s>"])
    mask = [True] * len(ids) if not validation else [False] * len(head) + [True] * len(summary) + [False]
    return ids, mask


def write(spec: CorpusSpec, out_dir: str | Path) -> Path:
    """Write the two parquet files and the pretrained base/ into out_dir."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    lex = Lexicon(spec, rng)
    for name, count, validation in ((govreport.TRAIN_FILE, spec.train_documents, False),
                                    (govreport.VALIDATION_FILE, spec.validation_documents, True)):
        docs = [encoded(lex, *document(rng, lex, spec), validation) for _ in range(count)]
        tokens, labels = pack([d for d, _ in docs], [m for _, m in docs], spec.seq_len)
        govreport.write_split(out_dir / name, tokens, labels)
    # the base's corpus: other reports, alone, each after <s> and closed by </s>
    reports = [lex.encode(["<s>", *document(rng, lex, spec)[0], "</s>"]) for _ in range(spec.pretrain_documents)]
    corpus, _ = pack(reports, [[True] * len(r) for r in reports], spec.seq_len)
    from reference_models.llama2_70b_lora.pretrain import pretrain  # torch: imported when a base is made

    pretrain(spec, len(lex.ids), corpus, out_dir / BASE_DIR)
    return out_dir


def ensure(spec: CorpusSpec, out_dir: str | Path) -> Path:
    """The generated layout in out_dir, written first if it is missing, made from another spec, or no longer
    what was written (harness.interface.generated checks the stamp's checksums)."""
    return generated.ensure(out_dir, "reference_models.llama2_70b_lora.generate", VERSION, asdict(spec),
                            lambda tmp: write(spec, tmp))


def main() -> None:
    generator_cli.generator_main(module_doc(__name__), CorpusSpec, ensure)


if __name__ == "__main__":
    main()
