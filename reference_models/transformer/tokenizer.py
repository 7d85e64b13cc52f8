"""The reference's subword tokenizer: text <-> ids over the vocabulary file vocab.ende.32768.

As MLPerf's Transformer reference (translation/tensorflow/transformer/utils/tokenizer.py, from
Tensor2Tensor's SubwordTextEncoder): a line is split into tokens where letters/digits meet
anything else (a single space between two words is dropped); each token is escaped ('_' -> '\\u',
'\\' -> '\\\\', characters outside the vocabulary's alphabet -> '\\<code point>;') and ended
with '_'; the escaped token is cut into the longest subtokens the vocabulary has, left to right.
Decoding joins the subtokens, splits at '_', unescapes, and puts a space between two adjacent
word tokens. The vocabulary file lists one subtoken per line in single quotes; line i is id i, the
first two being padding (0) and end of sentence (1), as the v0.7 reference reads its file
("reserved tokens assumed in file"). No library implements this encoder outside TensorFlow,
hence this file.

    python -m reference_models.transformer.tokenizer VOCAB_FILE "Some text."   # ids and the text back
"""
from __future__ import annotations

import functools
import re
import sys
import unicodedata
from pathlib import Path
from typing import Iterable, Sequence

PAD_ID, EOS_ID = 0, 1
RESERVED = ["<pad>_", "<EOS>_"]
ESCAPE_CHARS = set("\\_u;0123456789")
_UNESCAPE = re.compile(r"\\u|\\\\|\\([0-9]+);")
_UNDEFINED = "\u3013"


@functools.lru_cache(maxsize=1 << 16)
def is_alnum(char: str) -> bool:
    """A letter or a number: the reference's _ALPHANUMERIC_CHAR_SET, by Unicode category."""
    return unicodedata.category(char)[0] in "LN"


def split_tokens(text: str) -> list[str]:
    """Tokens at every change between alphanumeric and other characters; a lone space between two
    tokens is dropped (it is implied between two words)."""
    if not text:
        return []
    out, start = [], 0
    kinds = [is_alnum(c) for c in text]
    for pos in range(1, len(text)):
        if kinds[pos] != kinds[pos - 1]:
            token = text[start:pos]
            if token != " " or start == 0:
                out.append(token)
            start = pos
    out.append(text[start:])
    return out


def join_tokens(tokens: Sequence[str]) -> str:
    """The inverse of split_tokens: a space between two word tokens."""
    words = [is_alnum(t[0]) for t in tokens]
    return "".join((" " if i and words[i - 1] and words[i] else "") + t for i, t in enumerate(tokens))


def escape(token: str, alphabet: set[str]) -> str:
    token = token.replace("\\", "\\\\").replace("_", "\\u")
    return "".join(c if c in alphabet and c != "\n" else f"\\{ord(c)};" for c in token) + "_"


def unescape(token: str) -> str:
    def one(match: re.Match) -> str:
        if match.group(1) is None:
            return "_" if match.group(0) == "\\u" else "\\"
        try:
            return chr(int(match.group(1)))
        except (ValueError, OverflowError):
            return _UNDEFINED

    return _UNESCAPE.sub(one, token)


def alphabet_of(subtokens: Iterable[str]) -> set[str]:
    """Every character of the vocabulary (its reserved tokens included) and the escape characters."""
    return {c for t in subtokens for c in t} | ESCAPE_CHARS


def split_escaped(token: str, index: dict[str, int], max_len: int) -> list[str]:
    """The escaped token as the longest known subtokens, left to right."""
    out, start = [], 0
    while start < len(token):
        for end in range(min(len(token), start + max_len), start, -1):
            if token[start:end] in index:
                out.append(token[start:end])
                start = end
                break
        else:
            raise ValueError(f"the vocabulary cannot spell {token!r}: it lacks one of its characters")
    return out


class Subtokenizer:
    def __init__(self, subtokens: Sequence[str]):
        self.subtokens = list(subtokens)
        self.index = {t: i for i, t in enumerate(self.subtokens)}
        self.alphabet = alphabet_of(self.subtokens)
        self.max_len = max(len(t) for t in self.subtokens)
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_file(cls, path: str | Path) -> "Subtokenizer":
        """The vocabulary file's subtokens, line i as id i. A byte that is not UTF-8, a line that is
        not a quoted subtoken, a file that does not start with the RESERVED subtokens (an empty one),
        or a subtoken listed twice is a DataError naming the line: the
        reference's dict would give a repeated subtoken the id of its last line, so text would encode
        differently from the shards made with the first (and BLEU would be quietly wrong)."""
        from harness.interface.contract import DataError
        from harness.interface.corpus import read_text, repeated, text_lines

        lines = text_lines(read_text(path), universal=False)  # as the reference opens it: newline="\n"
        subtokens = []
        for n, line in enumerate(lines, 1):
            quoted = line.strip()
            if len(quoted) < 3 or quoted[0] != "'" or quoted[-1] != "'":
                raise DataError(f"{path} line {n} is {line[:40]!r}, not a subtoken in single quotes: every line of "
                                "the vocabulary is one quoted subtoken ('the_'); fix or remove that line")
            subtokens.append(quoted[1:-1])
        if subtokens[:len(RESERVED)] != RESERVED:  # ids 0 and 1 are padding and end of sentence
            n = next((i for i, (t, r) in enumerate(zip(subtokens, RESERVED), 1) if t != r), len(subtokens) + 1)
            what = (f" line {n} is {subtokens[n - 1]!r}, not" if n <= len(subtokens) else
                    " is empty, without" if not subtokens else f" ends at line {n - 1}, before")
            raise DataError(f"{path}{what} the reserved subtoken {RESERVED[n - 1]!r}: a vocabulary starts with "
                            f"{', '.join(repr(r) for r in RESERVED)} (ids {PAD_ID} and {EOS_ID}); use the one the "
                            "training shards were made with")
        twice = repeated(subtokens)
        if twice is not None:
            first, again, token = twice
            raise DataError(f"{path} line {again + 1}: subtoken {token!r} repeats line {first + 1}: each subtoken "
                            "must appear once (ids are line numbers); remove the repeated line, and re-encode the "
                            "training shards if they were made with this file")
        return cls(subtokens)

    def __len__(self) -> int:
        return len(self.subtokens)

    def encode(self, text: str, add_eos: bool = False) -> list[int]:
        ids: list[int] = []
        for token in split_tokens(text):
            cached = self._cache.get(token)
            if cached is None:
                cached = [self.index[s] for s in split_escaped(escape(token, self.alphabet), self.index, self.max_len)]
                if len(self._cache) < 1 << 20:
                    self._cache[token] = cached
            ids.extend(cached)
        return ids + [EOS_ID] if add_eos else ids

    def decode(self, ids: Iterable[int]) -> str:
        escaped = "".join(self.subtokens[i] for i in ids if i < len(self.subtokens))
        return join_tokens([unescape(t) for t in escaped.split("_") if t])

    def decode_until_eos(self, ids: Sequence[int]) -> str:
        """The text of a decoded sequence, cut before its first EOS (the reference's _trim_and_decode)."""
        ids = list(ids)
        return self.decode(ids[: ids.index(EOS_ID)] if EOS_ID in ids else ids)


def write_vocab(path: str | Path, subtokens: Sequence[str]) -> None:
    """The vocabulary file as the reference saves it: one quoted subtoken per line."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(f"'{t}'\n" for t in subtokens)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m reference_models.transformer.tokenizer VOCAB_FILE TEXT")
    tok = Subtokenizer.from_file(sys.argv[1])
    ids = tok.encode(sys.argv[2], add_eos=True)
    print(ids)
    print(tok.decode_until_eos(ids))
