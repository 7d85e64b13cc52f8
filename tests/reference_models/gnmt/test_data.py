"""The WMT16 layout: the generator writes it as the real pipeline would, the loader reads it as MLPerf does."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from sacremoses import MosesTokenizer
from torch.utils.data import DataLoader

from harness.config import compose
from reference_models.gnmt import data as wmt
from reference_models.gnmt.generate import DEV, TEST_REF, TEST_SRC, TRAIN, write
from reference_models.text.language import LanguageSpec, Lexicon, _capitalise_first, raw, sentence_pair, tokenized
from reference_models.gnmt.metric import bleu
from reference_models.gnmt.tokenizer import EOS, EOS_ID, UNK_ID, VOCAB_FILE, Detokenizer, Vocab, join_bpe
from tests.reference_models.wmt_corpus import corpus_fixture

SMALL = LanguageSpec(train_pairs=1500, dev_pairs=50, test_pairs=100, seed=4)

corpus = corpus_fixture(write, SMALL)


def test_generator_writes_the_mlperf_layout(corpus):
    names = {p.name for p in corpus.iterdir()}
    assert {VOCAB_FILE, *TRAIN, *DEV, TEST_SRC, TEST_REF} <= names
    units = (corpus / VOCAB_FILE).read_text().split("\n")[:-1]
    assert len(units) == len(set(units))
    for name in (*TRAIN, TEST_SRC):
        for line in (corpus / name).read_text().splitlines():
            assert set(line.split()) <= set(units) | {"<unk>"}
    assert "@@ " in (corpus / TRAIN[1]).read_text()  # BPE joints, as subword-nmt writes them
    assert "@@" not in (corpus / TEST_REF).read_text()  # the references are plain text


def test_embedded_spec_is_the_generators_default():
    assert LanguageSpec(**compose(["model=gnmt"]).dataset.generator) == LanguageSpec()


def test_tokenized_text_is_what_moses_makes_of_the_raw_text():
    rng = np.random.default_rng(1)
    lex = Lexicon(LanguageSpec(), rng)
    det, tok_de, tok_en = Detokenizer(), MosesTokenizer(lang="de"), MosesTokenizer(lang="en")
    for _ in range(300):
        src, tgt = (_capitalise_first(x) for x in sentence_pair(rng, lex))
        assert tok_en.tokenize(raw(src), return_str=True, escape=False) == join_bpe(tokenized(src).split())
        assert tok_de.tokenize(raw(tgt), return_str=True, escape=False) == join_bpe(tokenized(tgt).split())
        assert det(join_bpe(tokenized(tgt).split())) == raw(tgt)


def test_bleu_target_needs_reordering():
    """A word-by-word gloss scores far below BLEU 0.24; the references score 1."""
    spec = LanguageSpec()
    rng = np.random.default_rng(spec.seed)
    lex = Lexicon(spec, rng)
    gloss = {w.text(): t[0].text() for w, t in zip(lex.src_nouns, lex.tgt_nouns)}
    gloss.update({w.text() + "s": t[0].text() for w, t in zip(lex.src_nouns, lex.tgt_nouns)})
    gloss.update({w.text(): t.text("e") for w, t in zip(lex.src_adjs, lex.tgt_adjs)})
    gloss.update({w.text(): t.text() for w, t in zip(lex.src_preps, lex.tgt_preps)})
    gloss.update({v[0].text(): t.text("t") for v, t in zip(lex.src_verbs, lex.tgt_verbs)})
    gloss.update({"the": "die", "a": "ein", "some": "einige", "because": "weil", ",": ",", ".": "."})
    hyps, refs = [], []
    for _ in range(500):
        src, tgt = sentence_pair(rng, lex)
        words = [gloss.get("".join(u.removesuffix("@@") for u in w)) for w in src]
        hyps.append(raw([[w] for w in words if w]))
        refs.append(raw(tgt))
    assert bleu(hyps, refs) < 0.1
    assert bleu(refs, refs) == 1.0


def test_vocab_pads_to_a_multiple_of_8_with_the_references_tokens(corpus):
    vocab = Vocab.from_file(corpus / VOCAB_FILE)
    assert len(vocab) % 8 == 0 and vocab.tokens[:4] == ["<pad>", "<unk>", "<s>", "<\\s>"] and EOS == "<\\s>"
    assert Vocab(["a"]).tokens[-3:] == ["madeupword0000", "madeupword0001", "madeupword0002"]
    ids = vocab.encode("Die nichtda .")
    assert ids[0] == 2 and ids[-1] == EOS_ID and ids[2] == UNK_ID
    assert vocab.units(ids[1:] + [5, 6]) == ["Die", "<unk>", "."]


def test_length_filter_discards_long_pairs(corpus):
    everything = wmt.load(corpus, 0, 1000)
    limited = wmt.load(corpus, 0, 12)
    keep = (everything.train_src.lengths <= 12) & (everything.train_tgt.lengths <= 12)
    assert len(limited.train_src) == keep.sum() and limited.discarded == (~keep).sum() > 0
    assert limited.train_src.lengths.max() <= 12 and limited.train_tgt.lengths.max() <= 12


def test_bucketed_epochs_shard_every_global_batch_across_ranks(corpus):
    d = wmt.load(corpus, 0, 75)
    buckets = wmt.bucket_of(d.train_src.lengths, d.train_tgt.lengths, 75)
    order = wmt.epoch_order(buckets, 16, seed=7)
    assert np.array_equal(order, wmt.epoch_order(buckets, 16, seed=7))
    assert not np.array_equal(order, wmt.epoch_order(buckets, 16, seed=8))
    assert len(order) == wmt.steps_per_epoch(buckets, 16)
    assert len(np.unique(order)) == order.size  # no pair twice in an epoch
    for batch in order:
        assert len(set(buckets[batch])) == 1  # one bucket per global batch
        shards = [batch[r::4] for r in range(4)]
        assert sorted(np.concatenate(shards)) == sorted(batch)


def test_collate_sorts_by_source_length_and_shifts_the_target(corpus):
    d = wmt.load(corpus, 0, 75)
    b = wmt.collate(d.train_src, d.train_tgt, np.arange(10))
    assert list(b.src_len) == sorted(b.src_len.tolist(), reverse=True)
    assert (b.tgt_in[1:] == b.tgt_out[:-1]).all() and (b.tgt_in[0] == 2).all()
    order = wmt.sort_by_source(d.train_src, np.arange(10))
    assert b.tokens == int(d.train_src.lengths[order].sum() + (d.train_tgt.lengths[order] - 1).sum())


def test_missing_files_name_the_file_and_the_fix(tmp_path):
    with pytest.raises(wmt.DatasetError, match="no vocab.bpe.32000 in .*scripts/download_wmt16.sh"):
        wmt.load(tmp_path, 0, 75)


def _listed_collate(src, tgt, idx):
    """The collation as it was written first: a Python loop over the batch's sentences."""
    idx = wmt.sort_by_source(src, idx)
    src_t, tgt_t = wmt._pad([src[int(i)] for i in idx]), wmt._pad([tgt[int(i)] for i in idx])
    return src_t, torch.from_numpy(src.lengths[idx].copy()), tgt_t[:-1], tgt_t[1:]


def test_gathered_padding_is_the_looped_padding(corpus):
    d = wmt.load(corpus, 0, 75)
    rng = np.random.default_rng(3)
    for size in (1, 7, 64):
        idx = rng.choice(len(d.train_src), size, replace=False)
        ours = wmt.collate(d.train_src, d.train_tgt, idx)
        for mine, theirs in zip((ours.src, ours.src_len, ours.tgt_in, ours.tgt_out),
                                _listed_collate(d.train_src, d.train_tgt, idx)):
            assert mine.dtype == theirs.dtype and torch.equal(mine, theirs)


@pytest.mark.parametrize("rank, world", [(0, 1), (1, 2)])
def test_batches_made_in_loader_workers_are_the_training_threads(corpus, rank, world):
    """A GPU run collates in DataLoader workers: the same batches, in the same order, as the
    training thread's (what a CPU run and the golden losses use)."""
    d = wmt.load(corpus, 0, 75)
    buckets = wmt.bucket_of(d.train_src.lengths, d.train_tgt.lengths, 75)
    order = wmt.epoch_order(buckets, 16, seed=5)
    epoch = wmt.EpochBatches(d.train_src, d.train_tgt, order, rank, world)
    here = [epoch[k] for k in range(len(epoch))]
    there = list(DataLoader(epoch, batch_size=None, shuffle=False, num_workers=2))
    assert len(here) == len(there) == len(order) > 2
    for a, b in zip(here, there):
        assert a.tokens == b.tokens
        assert all(torch.equal(x, y) for x, y in ((a.src, b.src), (a.src_len, b.src_len), (a.tgt_in, b.tgt_in),
                                                  (a.tgt_out, b.tgt_out)))
