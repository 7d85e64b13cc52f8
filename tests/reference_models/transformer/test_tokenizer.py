"""The reference's subword tokenizer and vocabulary builder, on cases worked out from its code."""
from __future__ import annotations

import pytest

from reference_models.transformer.subwords import build, count_tokens, sampled_lines
from reference_models.transformer.tokenizer import (
    EOS_ID, RESERVED, Subtokenizer, escape, join_tokens, split_tokens, unescape, write_vocab,
)


def test_text_splits_where_words_meet_other_characters():
    assert split_tokens("Hello, world!") == ["Hello", ", ", "world", "!"]
    assert split_tokens("a b  c") == ["a", "b", "  ", "c"]  # one space between words is implied, two are kept
    assert split_tokens(" x") == [" ", "x"]
    assert split_tokens("Größe 3,5") == ["Größe", "3", ",", "5"]
    for text in ("Hello, world!", "a b  c", " x", "Größe 3,5"):
        assert join_tokens(split_tokens(text)) == text


def test_escaping_marks_the_token_end_and_spells_unknown_characters():
    alphabet = set("abc") | set("\\_u;0123456789")
    assert escape("a_b\\", alphabet) == "a\\ub\\\\_"
    assert escape("aé", alphabet) == "a\\233;_"
    assert unescape("a\\ub\\\\") == "a_b\\" and unescape("\\233;") == "é"


def test_encoding_takes_the_longest_known_subtokens(tmp_path):
    vocab = tmp_path / "vocab"
    write_vocab(vocab, RESERVED + ["hel", "hello_", "lo_", "wor", "ld_", "! _", "!_", *"helowrd_!", *"\\;0123456789u"])
    tok = Subtokenizer.from_file(vocab)
    ids = tok.encode("hello world!", add_eos=True)
    assert [tok.subtokens[i] for i in ids[:-1]] == ["hello_", "wor", "ld_", "!_"] and ids[-1] == EOS_ID
    assert tok.decode(ids[:-1]) == "hello world!" and tok.decode_until_eos(ids + [7]) == "hello world!"
    assert tok.decode(tok.encode("hellow")) == "hellow"  # spelled from pieces and letters
    assert tok.decode(tok.encode("é_\\")) == "é_\\"  # characters outside the vocabulary, escaped
    assert tok.decode([len(tok) + 3]) == ""  # ids beyond the vocabulary decode to nothing


def test_the_vocabulary_keeps_frequent_words_whole_and_every_character():
    counts = count_tokens(["the cat sat on the mat"] * 10 + ["a cathedral"])
    vocab = build(counts, min_count=5)
    assert vocab[:2] == RESERVED
    assert {"the_", "cat_", "sat_", "on_", "mat_"} <= set(vocab)
    assert "cathedral_" not in vocab and set("cathedral") <= set(vocab)
    tok = Subtokenizer(vocab)
    assert tok.decode(tok.encode("a cathedral, the cat")) == "a cathedral, the cat"
    assert build(counts, min_count=5) == vocab  # the same counts, the same list


def test_sampling_spreads_the_byte_budget_over_the_file(tmp_path):
    path = tmp_path / "text"
    path.write_text("".join(f"line {i}\n" for i in range(1000)))  # 8,890 bytes
    assert list(sampled_lines(path, 1e6)) == [f"line {i}" for i in range(1000)]
    taken = list(sampled_lines(path, 1000))  # 4 lines skipped (8,890 / 2,000) after each one taken
    assert taken[:3] == ["line 4", "line 9", "line 14"]
    assert sum(map(len, taken[:-1])) <= 1000 <= sum(map(len, taken))  # taken until the budget is spent


def test_a_vocabulary_that_cannot_spell_a_token_says_so():
    with pytest.raises(ValueError, match="cannot spell"):
        Subtokenizer(RESERVED + ["ab_"]).encode("ba")  # 'b' is in its alphabet but no subtoken of its own
