"""Faults in GNMT's WMT16 layout, put into the generator's files: a BPE unit listed twice in the vocabulary
(or a special token listed) and a byte that is not UTF-8 are one line naming the file and the line."""
from __future__ import annotations

import pytest

from harness.interface import DataError
from reference_models.gnmt import data as wmt
from reference_models.gnmt.generate import LanguageSpec, write
from reference_models.gnmt.tokenizer import VOCAB_FILE, Vocab
from tests.reference_models.wmt_corpus import broken_copy_fixture, corpus_fixture

SMALL = LanguageSpec(train_pairs=300, dev_pairs=10, test_pairs=20, seed=4)

corpus = corpus_fixture(write, SMALL)
bad = broken_copy_fixture()


def test_a_unit_listed_twice_is_an_error_naming_the_file_line_and_unit(bad):
    vocab = bad / VOCAB_FILE
    units = vocab.read_text(encoding="utf-8").splitlines()
    vocab.write_text("\n".join(units + [units[9]]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        wmt.load(bad, 0, 75)
    assert str(caught.value) == (f"{vocab} line {len(units) + 1}: {units[9]!r} repeats line 10: each unit must appear "
                                 "once (ids follow the lines); remove that line")


def test_a_special_token_in_the_file_is_named(bad):
    vocab = bad / VOCAB_FILE
    vocab.write_text("<unk>\n" + vocab.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(DataError, match=r"line 1: '<unk>' is the special token 1 \(<pad>, <unk>, <s>, <\\s> come"):
        Vocab.from_file(vocab)


def test_a_byte_that_is_not_utf8_in_a_training_file_names_the_file_line_and_offset(bad):
    path = bad / wmt.TRAIN[1]
    data = path.read_bytes()
    at = data.index(b"\n", data.index(b"\n") + 1) + 5  # inside line 3
    path.write_bytes(data[:at] + b"\xe4" + data[at:])
    with pytest.raises(DataError) as caught:
        wmt.load(bad, 0, 75)
    assert str(caught.value).startswith(f"{path} line 3 (byte offset {at}): byte 0xe4 is not UTF-8")
