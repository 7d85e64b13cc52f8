"""The Transformer's WMT layout: the generator writes it as the reference's pipeline would, from the GNMT
generator's sentences, and the loader reads and batches it as the reference does."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from harness.config import compose
from reference_models.gnmt import generate as gnmt_generate
from reference_models.text.language import LanguageSpec
from reference_models.transformer import data as wmt
from reference_models.transformer.generate import CorpusSpec, write
from reference_models.transformer.tokenizer import EOS_ID, Subtokenizer
from tests.reference_models.wmt_corpus import corpus_fixture

SMALL = CorpusSpec(LanguageSpec(train_pairs=1500, dev_pairs=50, test_pairs=100, seed=4), train_shards=3)

corpus = corpus_fixture(write, SMALL)


def test_generator_writes_the_reference_layout(corpus):
    names = {str(p.relative_to(corpus)) for p in corpus.rglob("*") if p.is_file()}
    shards = {f"utf8/{wmt.shard_name('train', n, 3)}.{ext}" for n in (1, 2, 3) for ext in ("src", "dst")}
    dev = {f"utf8/wmt32k-encoded-dev-00001-of-00001.{ext}" for ext in ("src", "dst")}
    assert names == {"vocab.ende.32768", "newstest2014.en", "newstest2014.de"} | shards | dev
    assert "utf8/wmt32k-encoded-train-00002-of-00003.src" in names  # the reference's shard names
    lines = (corpus / "vocab.ende.32768").read_text().splitlines()
    assert lines[:2] == ["'<pad>_'", "'<EOS>_'"] and all(line[0] == line[-1] == "'" for line in lines)
    for line in (corpus / "utf8" / "wmt32k-encoded-train-00001-of-00003.dst").read_text().splitlines():
        assert line.split()[-1] == str(EOS_ID)


def test_the_sentences_are_the_gnmt_generators(corpus):
    """The same language parameters give GNMT's sentences: its raw test references are ours."""
    gnmt_refs = gnmt_generate.generate(SMALL.language)[gnmt_generate.TEST_REF]
    assert (corpus / "newstest2014.de").read_text().splitlines() == gnmt_refs
    embedded = compose(["model=transformer"]).dataset.generator
    assert CorpusSpec.from_flat(dict(embedded)).language == LanguageSpec(**compose(["model=gnmt"]).dataset.generator)


def test_every_line_encodes_and_decodes_back_to_itself(corpus):
    tok = Subtokenizer.from_file(corpus / "vocab.ende.32768")
    data = wmt.load(corpus, 256)
    sources = [tok.decode(data.train_src[i][:-1].tolist()) for i in range(len(data.train_src))]
    assert all(tok.decode(tok.encode(s)) == s for s in sources)
    tests = (corpus / "newstest2014.en").read_text().splitlines()
    assert [tok.decode_until_eos(data.test_src[i].tolist()) for i in range(len(tests))] == tests
    letters = {c for line in tests for c in line if c.isalpha()}
    assert len(tok) < 1000 and letters <= set(tok.subtokens)  # any new word can be spelled


def test_length_filter_discards_long_pairs(corpus):
    everything = wmt.load(corpus, 1000)
    limited = wmt.load(corpus, 10)
    keep = (everything.train_src.lengths <= 10) & (everything.train_tgt.lengths <= 10)
    assert len(limited.train_src) == keep.sum() and limited.discarded == (~keep).sum() > 0
    assert np.array_equal(limited.train_tgt[3], everything.train_tgt[int(np.flatnonzero(keep)[3])])


def test_batches_hold_at_most_batch_size_padded_tokens_and_every_pair_once(corpus):
    d = wmt.load(corpus, 256)
    buckets = wmt.bucket_of(d.train_src.lengths, d.train_tgt.lengths, 256)
    assert list(wmt.bucket_bounds(20)) == [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21]
    batches = wmt.epoch_batches(buckets, 256, 300, seed=7)
    assert len(batches) == wmt.batch_count(buckets, 256, 300)
    assert sorted(np.concatenate(batches)) == list(range(len(d.train_src)))
    for idx in batches:
        b = wmt.collate(d.train_src, d.train_tgt, idx)
        assert max(b.src.numel(), b.tgt.numel()) <= 300
        assert b.tokens == int(d.train_src.lengths[idx].sum() + d.train_tgt.lengths[idx].sum())
        assert (b.src_pad is None) == bool((b.src != 0).all())
    again = wmt.epoch_batches(buckets, 256, 300, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(batches, again))
    assert not all(np.array_equal(a, b) for a, b in zip(batches, wmt.epoch_batches(buckets, 256, 300, seed=8)))


def test_missing_and_malformed_files_say_what_to_do(corpus, tmp_path):
    with pytest.raises(wmt.DatasetError, match="no vocab.ende.32768 in .*scripts/prepare_wmt17.py"):
        wmt.load(tmp_path, 256)
    (tmp_path / "vocab.ende.32768").write_text((corpus / "vocab.ende.32768").read_text())
    (tmp_path / "utf8").mkdir()
    (tmp_path / "utf8" / "wmt32k-encoded-train-00001-of-00001.src").write_text("5 6 1\n")
    (tmp_path / "utf8" / "wmt32k-encoded-train-00001-of-00001.dst").write_text("5 x 1\n")
    with pytest.raises(wmt.DatasetError, match="something other than token ids"):
        wmt.load(tmp_path, 256)
    (tmp_path / "utf8" / "wmt32k-encoded-train-00001-of-00001.dst").write_text("5 99999 1\n")
    with pytest.raises(wmt.DatasetError, match="encoded with another vocabulary"):
        wmt.load(tmp_path, 256)


def test_a_pad_multiple_rounds_each_side_up_and_keeps_every_token_and_the_count(corpus):
    d = wmt.load(corpus, 256)
    idx = np.arange(7)
    plain, padded = wmt.collate(d.train_src, d.train_tgt, idx), wmt.collate(d.train_src, d.train_tgt, idx, 8)
    for a, b in ((plain.src, padded.src), (plain.tgt, padded.tgt)):
        assert b.shape[1] % 8 == 0 and b.shape[1] - a.shape[1] < 8
        assert torch.equal(b[:, :a.shape[1]], a) and not b[:, a.shape[1]:].any()
    assert padded.tokens == plain.tokens and padded.src_pad is not None
