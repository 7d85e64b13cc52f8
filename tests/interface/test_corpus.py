"""Text files around a corpus: a byte that is not UTF-8 is named by file, line and offset; lines split as
open() splits them; a repeated vocabulary entry is found."""
from __future__ import annotations

import pytest

from harness.interface import DataError
from harness.interface.corpus import read_text, repeated, text_lines


def test_a_byte_that_is_not_utf8_is_named_with_its_line_and_offset(tmp_path):
    path = tmp_path / "newstest2014.en"
    path.write_bytes("First line.\nSecond line.\nCaf".encode() + b"\xe9 au lait.\n")  # Latin-1's é
    with pytest.raises(DataError) as caught:
        read_text(path)
    assert str(caught.value).startswith(f"{path} line 3 (byte offset 28): byte 0xe9 is not UTF-8")
    assert "re-encode it" in str(caught.value) and "\n" not in str(caught.value)
    path.write_text("Café au lait.\n", encoding="utf-8")
    assert read_text(path) == "Café au lait.\n"


def test_lines_split_as_iterating_the_file_splits_them():
    text = "a\u2028b\x0cc\r\nd\re\n"
    assert text_lines(text) == ["a\u2028b\x0cc", "d", "e"]  # not str.splitlines()'s six pieces
    assert text_lines("a\r\nb", universal=False) == ["a\r", "b"]  # newline="\n", as the Transformer reference reads
    assert text_lines("") == [] and text_lines("x\n\n") == ["x", ""]


def test_repeated_finds_the_first_token_listed_twice():
    assert repeated(["<pad>", "the", "of", "the", "of"]) == (1, 3, "the")
    assert repeated(["a", "b"]) is None
