"""The GNMT vocabulary (vocab.bpe.32000) and the way back from BPE ids to plain text.

As MLPerf's reference (seq2seq/data/tokenizer.py): four special tokens first, then one BPE unit per
line of the vocabulary file, padded with filler tokens to a multiple of 8 (tensor-core friendly;
32,320 for WMT16); a sentence is its whitespace-split units wrapped in BOS ... EOS. Decoding joins
the units, removes BPE's '@@ ' joints, and detokenizes with Moses' rules: the reference shells out
to Moses' detokenizer.perl (default language, English rules); sacremoses is its maintained Python
port and is used here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "<\\s>"  # the reference's EOS is literally <\s>
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
VOCAB_FILE = "vocab.bpe.32000"


class Vocab:
    def __init__(self, units: Sequence[str], pad_multiple: int = 8):
        tokens = [PAD, UNK, BOS, EOS] + [u for u in units if u]
        fillers = -len(tokens) % pad_multiple
        tokens += [f"madeupword{i:04d}" for i in range(fillers)]
        self.tokens = tokens
        self.index = {t: i for i, t in enumerate(tokens)}

    @classmethod
    def from_file(cls, path: str | Path, pad_multiple: int = 8) -> "Vocab":
        """One BPE unit per line after the four special tokens. A file without a unit is a DataError;
        so is a byte that is not UTF-8, or a unit listed twice (or a special token listed), naming the line: the reference's
        dict would give it the id of its last line, and text would encode differently from what the
        training data means."""
        from harness.interface.contract import DataError
        from harness.interface.corpus import read_text, text_lines

        units = [line.strip() for line in text_lines(read_text(path))]
        line_of = {t: -i for i, t in enumerate([PAD, UNK, BOS, EOS])}  # <= 0: a special token, not a line
        for n, unit in enumerate(units, 1):
            if not unit:
                continue  # an empty line is no unit (Vocab skips it)
            if unit in line_of:
                first = line_of[unit]
                was = f"repeats line {first}" if first > 0 else \
                    f"is the special token {-first} ({PAD}, {UNK}, {BOS}, {EOS} come before the file's lines)"
                raise DataError(f"{path} line {n}: {unit!r} {was}: each unit must appear once (ids follow the "
                                "lines); remove that line")
            line_of[unit] = n
        if len(line_of) == 4:  # the special tokens alone: every word of the text would be <unk>
            raise DataError(f"{path} lists no BPE unit (it is empty or blank): use the vocabulary made with the data "
                            "(scripts/download_wmt16.sh writes vocab.bpe.32000 beside the BPE files)")
        return cls(units, pad_multiple)

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, line: str) -> list[int]:
        """BOS, the line's BPE units (unknown ones as UNK), EOS."""
        get = self.index.get
        return [BOS_ID, *(get(u, UNK_ID) for u in line.split()), EOS_ID]

    def units(self, ids: Iterable[int]) -> list[str]:
        """The BPE units of a decoded sequence up to its EOS, without PAD and BOS; an unknown unit
        stays '<unk>', as the reference's detokenizer leaves it."""
        out = []
        for i in ids:
            if i == EOS_ID:
                break
            if i not in (PAD_ID, BOS_ID):
                out.append(self.tokens[i])
        return out


def join_bpe(units: Sequence[str]) -> str:
    """'Gesch@@ ichte .' -> 'Geschichte .' (still Moses-tokenized)."""
    return " ".join(units).replace("@@ ", "").replace("@@", "").strip()


class Detokenizer:
    """Moses detokenization, as the reference applies to its output before BLEU."""

    def __init__(self, lang: str = "en"):
        from sacremoses import MosesDetokenizer

        self._moses = MosesDetokenizer(lang=lang)

    def __call__(self, tokenized: str) -> str:
        return self._moses.detokenize(tokenized.split())
