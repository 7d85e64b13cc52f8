"""C4 JSON lines and Llama 3's tokenizer format: what the generator writes reads back as C4 records,
gzipped or plain; a broken record or tokenizer line is one error naming the file and the line; the
tokenizer's merges follow tiktoken's rule and decode back to the text; packing overlaps samples by one."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from harness.interface import DataError
from reference_models.llama31_8b import c4
from reference_models.llama31_8b.bpe import learn
from reference_models.llama31_8b.generate import CorpusSpec, write
from reference_models.llama31_8b.tokenizer import SPECIAL_TOKENS, load, read_ranks, write_ranks

SMALL = CorpusSpec(train_documents=60, validation_documents=10, merges=40)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write(SMALL, tmp_path_factory.mktemp("c4"))


def test_generated_files_are_c4_records_and_a_plain_json_file_reads_the_same(corpus, tmp_path):
    (first, *_), = [c4.split_files(corpus, c4.TRAIN_GLOB)]
    with gzip.open(first, "rt", encoding="utf-8") as f:
        record = json.loads(f.readline())
    assert set(record) == {"text", "timestamp", "url"} and record["url"].startswith("https://")
    plain = tmp_path / "c4-train.00000-of-00001.json"
    plain.write_text(gzip.decompress(first.read_bytes()).decode("utf-8"), encoding="utf-8")
    assert list(c4.documents(plain)) == list(c4.documents(first))


def test_a_record_without_text_is_named_by_file_and_line(tmp_path):
    bad = tmp_path / "c4-train.00000-of-00001.json"
    bad.write_text('{"text": "a", "timestamp": "t", "url": "u"}\n{"timestamp": "t", "url": "u"}\n')
    with pytest.raises(DataError, match=rf"^{bad}:2: the record has no string 'text': not a C4 \(en\) record$"):
        list(c4.documents(bad))
    bad.write_text('{"text": "a", "timestamp": "t", "url": "u"}\n{"text": \n')
    with pytest.raises(DataError, match=rf"^{bad}:2: not JSON "):
        list(c4.documents(bad))


def test_a_folder_without_c4_files_says_what_to_put_there(tmp_path):
    with pytest.raises(DataError, match="no c4-train.*.json.gz file"):
        c4.split_files(tmp_path, c4.TRAIN_GLOB)


def test_the_tokenizer_merges_by_rank_and_decodes_back(tmp_path):
    tokens = learn(["low lower lowest", "low low"], 4)
    assert tokens[256:258] == [b"lo", b"low"]  # the most frequent pair first, then the pair it makes
    write_ranks(tmp_path / "t.model", tokens)
    tok = load(tmp_path / "t.model")
    assert tok.vocab_size == len(tokens) + SPECIAL_TOKENS and tok.bos == len(tokens)
    ids = tok.encode("low lowest")
    assert ids[0] == tokens.index(b"low") and tok.decode(ids) == "low lowest"


def test_a_tokenizer_line_that_is_not_tiktoken_is_named(tmp_path):
    bad = tmp_path / "tokenizer.model"
    write_ranks(bad, [bytes([b]) for b in range(256)])
    bad.write_bytes(bad.read_bytes() + b"not-base64!! 256\n")
    with pytest.raises(DataError, match=rf"^{bad}:257: not a tiktoken line"):
        read_ranks(bad)


def test_packed_samples_overlap_by_one_token():
    packed = c4.Packed(np.arange(10, dtype=np.int32), 3)
    assert len(packed) == 3
    assert packed.rows(np.array([2, 0])).tolist() == [[6, 7, 8, 9], [0, 1, 2, 3]]


def test_every_document_starts_with_begin_of_text(corpus):
    tok = load(corpus / c4.TOKENIZER_FILE)
    stream = c4.token_stream(c4.split_files(corpus, c4.VALIDATION_GLOB), tok, "key")
    assert (stream == tok.bos).sum() == SMALL.validation_documents and stream[0] == tok.bos
