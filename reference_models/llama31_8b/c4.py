"""C4 (en) as the MLPerf Llama 3.1 8B reference reads it: JSON lines, one document a line
({"text": ..., "timestamp": ..., "url": ...}), in c4-train.*.json.gz and c4-validation*.json.gz files
(gzipped or plain .json), tokenized with Llama 3.1's tokenizer and packed as Megatron's GPTDataset packs
them: each document is <|begin_of_text|> and its tokens (what the Hugging Face tokenizer's encode gives
NeMo's preprocessing), the documents follow one another in one stream, and sample i is the seq_len + 1
tokens from i x seq_len (inputs and the next-token targets). Evaluation takes the first eval_samples
sequences of the validation stream, unshuffled, as the reference does.

    python -m harness.check_data model=llama31_8b dataset=c4
"""
from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from harness.interface import DataError
from harness.interface.generated import CACHE
from reference_models.llama31_8b.tokenizer import Tokenizer

TRAIN_GLOB = "c4-train.*.json*"
VALIDATION_GLOB = "c4-validation*.json*"
TOKENIZER_FILE = "tokenizer.model"  # where the embedded dataset keeps its own
FIELDS = ("text", "timestamp", "url")


class C4Error(DataError):
    """A C4 file that cannot be trained on; the message names the file and the line."""


def split_files(folder: Path, pattern: str) -> list[Path]:
    files = sorted(p for p in folder.glob(pattern) if p.name.endswith((".json", ".json.gz")))
    if not files:
        raise C4Error(f"{folder}: no {pattern.replace('*.json*', '*.json.gz')} file: put C4's (en) JSON-lines files "
                      "there (README of the MLPerf reference, 'Raw data downloading'), or name no dataset for the "
                      "embedded one")
    for path in files:
        if not path.is_file():
            raise C4Error(f"{path}: not a regular file")
    return files


def documents(path: Path) -> Iterator[str]:
    """The text of each document of one file, in file order; a line that is not a C4 record stops it."""
    opener = gzip.open if path.name.endswith(".gz") else open
    number = 0
    try:
        with opener(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                yield _text(json.loads(line), path, number)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as err:
        raise C4Error(f"{path}:{number + 1}: cannot be read ({err}): a truncated or corrupt file; "
                      "download it again") from None
    except json.JSONDecodeError as err:
        raise C4Error(f"{path}:{number}: not JSON ({err.msg}): each line of a C4 file is one "
                      '{"text": ..., "timestamp": ..., "url": ...} record') from None


def _text(record: object, path: Path, number: int) -> str:
    if not isinstance(record, dict):
        raise C4Error(f"{path}:{number}: a {type(record).__name__}, not a C4 record "
                      '({"text": ..., "timestamp": ..., "url": ...})')
    missing = [f for f in FIELDS if not isinstance(record.get(f), str)]
    if missing:
        raise C4Error(f"{path}:{number}: the record has no string '{missing[0]}': not a C4 (en) record")
    return record["text"]


def token_stream(files: list[Path], tokenizer: Tokenizer, cache_key: str) -> np.ndarray:
    """Every document of `files` as <|begin_of_text|> and its tokens, one stream (int32); kept in the
    folder's .harness-cache/ under a key of the files' names, sizes and times and the tokenizer's
    ranks, so that a second run reads it instead of tokenizing again."""
    folder = files[0].parent
    digest = hashlib.sha256(cache_key.encode())
    for path in files:
        stat = path.stat()
        digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    cached = folder / CACHE / f"tokens-{digest.hexdigest()[:24]}.npy"
    if cached.is_file():
        try:
            return np.load(cached, allow_pickle=False)
        except (OSError, ValueError):
            pass  # a cache that cannot be read is made again
    ids: list[int] = []
    for path in files:
        for text in documents(path):
            ids.append(tokenizer.bos)
            ids.extend(tokenizer.encode(text))
    stream = np.asarray(ids, dtype=np.int32)
    try:
        cached.parent.mkdir(exist_ok=True)
        tmp = cached.with_suffix(".tmp.npy")
        np.save(tmp, stream)
        tmp.replace(cached)
    except OSError:
        pass  # a read-only dataset folder: tokenized again next time
    return stream


@dataclass(frozen=True)
class Packed:
    """A token stream cut into samples of seq_len + 1 tokens that overlap by one."""

    stream: np.ndarray
    seq_len: int

    def __len__(self) -> int:
        return max(0, (len(self.stream) - 1) // self.seq_len)

    def rows(self, index: np.ndarray) -> np.ndarray:
        """Samples `index` as an int64 array (len(index), seq_len + 1)."""
        starts = np.asarray(index, dtype=np.int64)[:, None] * self.seq_len
        return self.stream[starts + np.arange(self.seq_len + 1)].astype(np.int64)


def load_split(folder: Path, pattern: str, tokenizer: Tokenizer, tokenizer_key: str, seq_len: int) -> Packed:
    return Packed(token_stream(split_files(folder, pattern), tokenizer, tokenizer_key), seq_len)
