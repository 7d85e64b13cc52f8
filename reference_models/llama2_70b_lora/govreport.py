"""SCROLLS GovReport as the MLPerf Llama 2 70B LoRA reference trains on it: already tokenized with Llama 2's
SentencePiece tokenizer and packed, in train-00000-of-00001.parquet and validation-00000-of-00001.parquet
(the reference's scrolls_gov_report_8k folder). Each row is one packed sequence: `input_ids`,
`attention_mask` and `labels`, lists of the same length (8,192), labels -100 where no loss is taken.

    python -c "from pathlib import Path; from reference_models.llama2_70b_lora import govreport as g; p = g.read_split(Path('validation-00000-of-00001.parquet')); print(len(p), p.seq_len)"

How the reference made them (scripts/utils.py): each document is "### Summarize the following text:\\n
{report}\\n ### Summary:\\n {summary}</s>" tokenized with <s> in front, the documents concatenated and cut
into rows of 8,192 tokens (the remainder dropped); a training row's labels are its input_ids, a validation
row's are -100 on each prompt and report and on the closing </s>, so the validation loss is the summaries'.
No tokenizer is needed to train: the files hold the ids. A 0 in attention_mask (padding) masks the label
there too.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.interface import DataError

TRAIN_FILE, VALIDATION_FILE = "train-00000-of-00001.parquet", "validation-00000-of-00001.parquet"
IGNORE = -100  # Hugging Face's ignore_index: no loss at this position
COLUMNS = ("input_ids", "labels")  # attention_mask is read where present


class GovReportError(DataError):
    """A GovReport parquet file that cannot be trained on; the message names the file and the row."""


@dataclass(frozen=True)
class Packed:
    """Packed rows: tokens and labels, int64 arrays (rows, seq_len)."""

    tokens: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def seq_len(self) -> int:
        return int(self.tokens.shape[1])

    def rows(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.tokens[index], self.labels[index]


def split_path(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.is_file():
        raise GovReportError(f"{path}: missing: put the reference's scrolls_gov_report_8k files there (its "
                             "README, 'Download Data and Model'), or name no dataset for the embedded one")
    return path


def read_split(path: Path) -> Packed:
    """Every row of one parquet file, each of the same length, ids in [0, 2^31)."""
    import pyarrow.parquet as pq  # imported here: the registry imports this package for commands that never train

    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise GovReportError(f"{path}: not a parquet file ({str(err).splitlines()[0]})") from None
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise GovReportError(f"{path}: no column '{missing[0]}' (it has {', '.join(table.column_names)}): not "
                             "the reference's packed GovReport")
    tokens = _matrix(table, "input_ids", path)
    labels = _matrix(table, "labels", path)
    if labels.shape != tokens.shape:
        raise GovReportError(f"{path}: labels of {labels.shape[1]} tokens beside input_ids of {tokens.shape[1]}")
    if "attention_mask" in table.column_names:
        mask = _matrix(table, "attention_mask", path)
        if mask.shape != tokens.shape:
            raise GovReportError(f"{path}: attention_mask of {mask.shape[1]} tokens beside input_ids of "
                                 f"{tokens.shape[1]}")
        labels = np.where(mask == 0, IGNORE, labels)
    if tokens.min(initial=0) < 0:
        row = int(np.argwhere(tokens < 0)[0][0])
        raise GovReportError(f"{path}: row {row} has a negative token id")
    return Packed(tokens, labels)


def _matrix(table, column: str, path: Path) -> np.ndarray:
    """A list column of equal-length rows as an int64 array (rows, length)."""
    import pyarrow as pa

    chunked = table.column(column).combine_chunks()
    if not (pa.types.is_list(chunked.type) or pa.types.is_large_list(chunked.type)) or not pa.types.is_integer(
            chunked.type.value_type):
        raise GovReportError(f"{path}: column '{column}' is {chunked.type}, not lists of integers")
    lengths = np.asarray(chunked.value_lengths().fill_null(0))
    if len(lengths) == 0:
        raise GovReportError(f"{path}: no rows")
    if (lengths != lengths[0]).any() or lengths[0] == 0:
        row = int(np.argmax(lengths != lengths[0])) if lengths[0] else 0
        raise GovReportError(f"{path}: row {row}'s '{column}' has {lengths[row]} tokens, row 0's {lengths[0]}: "
                             "packed rows are all of one length")
    values = np.asarray(chunked.flatten(), dtype=np.int64)
    return values.reshape(len(lengths), int(lengths[0]))


def write_split(path: Path, tokens: np.ndarray, labels: np.ndarray) -> None:
    """Rows as the reference's parquet holds them: input_ids (int32), attention_mask (int8, all ones: rows are
    packed, never padded) and labels (int64) lists, as Hugging Face datasets stores a tokenizer's output."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def lists(a: np.ndarray, kind) -> pa.Array:
        offsets = np.arange(0, a.size + 1, a.shape[1], dtype=np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(a.ravel(), type=kind))

    table = pa.table({"input_ids": lists(tokens, pa.int32()), "attention_mask": lists(np.ones_like(tokens), pa.int8()),
                      "labels": lists(labels, pa.int64())})
    pq.write_table(table, path)
