"""Llama 3's tokenizer: byte-level BPE over the tiktoken file Meta ships (original/tokenizer.model:
one line per token, its bytes in base64 and its rank), Llama 3's pre-tokenizing expression, and 256
special tokens numbered after the ranks (<|begin_of_text|> first: 128000 for Llama 3.1's 128,000 ranks).

    python -c "from reference_models.llama31_8b.tokenizer import load; t = load('tokenizer.model'); print(t.encode('Hello world'))"

Encoding is tiktoken's: each piece the expression cuts is merged pair by pair, always the adjacent pair
whose joined bytes have the lowest rank, until no joined pair is a token. With the tiktoken library
installed (`pip install tiktoken`) its Rust encoder does this; without it, the same merges in Python
(`_merge`), which give the same ids, a few times slower. The embedded dataset's generator writes its
own small file in this format (reference_models/llama31_8b/bpe.py), so the same code reads both.
"""
from __future__ import annotations

import base64
import binascii
import functools
from pathlib import Path
from typing import Callable, Optional

import regex

from harness.interface import DataError

# Llama 3's pre-tokenizer (Meta's llama/tokenizer.py pat_str)
PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
           r"|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL_TOKENS = 256  # Meta's num_reserved_special_tokens: <|begin_of_text|>, <|end_of_text|>, reserved ...
BOS_OFFSET = 0  # <|begin_of_text|> is the first special token


class TokenizerError(DataError):
    """A tokenizer file that cannot be read; the message names the file and the line."""


def read_ranks(path: Path) -> dict[bytes, int]:
    """{token bytes: rank} of a tiktoken file; ranks must be 0..n-1 and every single byte a token."""
    ranks: dict[bytes, int] = {}
    try:
        lines = path.read_bytes().splitlines()
    except OSError as err:
        raise TokenizerError(f"{path}: cannot read the tokenizer file ({err.strerror}): point "
                             "model.tokenizer at Llama 3.1's original/tokenizer.model") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error):
            raise TokenizerError(f"{path}:{number}: not a tiktoken line ('<base64 token> <rank>'): "
                                 f"{line[:60]!r}") from None
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise TokenizerError(f"{path}: the ranks are not 0..{len(ranks) - 1}, each once: not a tiktoken file")
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise TokenizerError(f"{path}: byte {missing[0]:#04x} has no token: a byte-level BPE file holds all 256")
    return ranks


def write_ranks(path: Path, tokens: list[bytes]) -> None:
    """A tiktoken file of `tokens`, ranked in list order."""
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % rank for rank, t in enumerate(tokens)))


def _merge(piece: bytes, ranks: dict[bytes, int]) -> list[int]:
    """tiktoken's byte-pair merge of one piece: the lowest-ranked adjacent pair first."""
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, at = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best):
                best, at = rank, i
        if best is None:
            break
        parts[at:at + 2] = [parts[at] + parts[at + 1]]
    return [ranks[p] for p in parts]


class Tokenizer:
    """Text -> ids (no special tokens added: `bos` is the id a document starts with)."""

    def __init__(self, ranks: dict[bytes, int]):
        self.ranks = ranks
        self.bos = len(ranks) + BOS_OFFSET
        self.vocab_size = len(ranks) + SPECIAL_TOKENS
        self._encode = _fast_encoder(ranks) or self._encode_pieces
        self._pattern = regex.compile(PATTERN)
        self._cached = functools.lru_cache(maxsize=1 << 20)(lambda piece: _merge(piece, ranks))

    def _encode_pieces(self, text: str) -> list[int]:
        out: list[int] = []
        for piece in self._pattern.findall(text):
            out.extend(self._cached(piece.encode("utf-8")))
        return out

    def encode(self, text: str) -> list[int]:
        return self._encode(text)

    def decode(self, ids: list[int]) -> str:
        tokens = {rank: token for token, rank in self.ranks.items()}
        return b"".join(tokens.get(i, b"") for i in ids).decode("utf-8", errors="replace")


def _fast_encoder(ranks: dict[bytes, int]) -> Optional[Callable[[str], list[int]]]:
    """tiktoken's Rust encoder over these ranks, if tiktoken is installed."""
    try:
        import tiktoken
    except ImportError:
        return None
    encoding = tiktoken.Encoding(name="llama3", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    return encoding.encode_ordinary


def load(path: str | Path) -> Tokenizer:
    return Tokenizer(read_ranks(Path(path)))
