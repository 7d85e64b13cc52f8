"""Faults in the Transformer's WMT17 layout, put into the generator's files: a subtoken listed twice in the
vocabulary and a byte that is not UTF-8 in the test set are one line naming the file and the line."""
from __future__ import annotations

import json

import pytest

from harness.interface import DataError
from reference_models.text.language import LanguageSpec
from reference_models.transformer import data as wmt
from reference_models.transformer.generate import CorpusSpec, write
from reference_models.transformer.tokenizer import Subtokenizer
from tests.helpers import run_cli, said
from tests.reference_models.wmt_corpus import broken_copy_fixture, corpus_fixture

SMALL = CorpusSpec(LanguageSpec(train_pairs=300, dev_pairs=10, test_pairs=20, seed=4), train_shards=2)

corpus = corpus_fixture(write, SMALL)
bad = broken_copy_fixture()


def _repeat_the(root) -> tuple[int, int]:
    """Append a second 'the_' to the vocabulary, as an edited or merged file might; its two line numbers."""
    vocab = root / wmt.VOCAB_FILE
    lines = vocab.read_text(encoding="utf-8").splitlines()
    first = lines.index("'the_'") + 1
    vocab.write_text("\n".join(lines + ["'the_'"]) + "\n", encoding="utf-8")
    return first, len(lines) + 1


def test_a_subtoken_listed_twice_is_an_error_naming_the_file_line_and_subtoken(bad):
    first, again = _repeat_the(bad)
    with pytest.raises(DataError) as caught:
        wmt.load(bad, 256)
    assert str(caught.value).startswith(f"{bad / wmt.VOCAB_FILE} line {again}: subtoken 'the_' repeats line {first}: "
                                        "each subtoken must appear once")


def test_a_vocabulary_line_that_is_not_a_quoted_subtoken_is_named(bad):
    vocab = bad / wmt.VOCAB_FILE
    lines = vocab.read_text(encoding="utf-8").splitlines()
    lines[7] = "the_"
    vocab.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 8 is 'the_', not a subtoken in single quotes"):
        Subtokenizer.from_file(vocab)


def test_a_byte_that_is_not_utf8_in_the_test_set_names_the_file_line_and_offset(bad):
    path = bad / wmt.TEST_SRC
    lines = path.read_bytes().split(b"\n")
    lines[4] = lines[4][:3] + b"\xff" + lines[4][3:]
    path.write_bytes(b"\n".join(lines))
    offset = sum(len(line) + 1 for line in lines[:4]) + 3
    with pytest.raises(DataError) as caught:
        wmt.load(bad, 256)
    assert str(caught.value).startswith(f"{path} line 5 (byte offset {offset}): byte 0xff is not UTF-8")


def test_a_shard_line_that_is_not_ids_is_named(bad):
    shard = sorted((bad / wmt.SHARD_DIR).glob("*train*.src"))[0]
    lines = shard.read_text().splitlines()
    lines[2] = "12 x 1"
    shard.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=rf"{shard.name} line 3 holds something other than token ids"):
        wmt.load(bad, 256)


@pytest.mark.e2e
def test_a_run_on_a_vocabulary_with_a_repeated_subtoken_stops_with_one_line(bad, tmp_path):
    first, again = _repeat_the(bad)
    out = run_cli("harness.train", "model=transformer", "+debug=transformer", f"dataset.path={bad}",
                  "dataset.generator=null", "seed=1", "output_root=out", "device=cpu", "progress=false",
                  "tensorboard=false", "telemetry=false", cwd=tmp_path, timeout=300)
    assert out.returncode == 1
    errors = [line for line in said(out.stderr) if line.startswith("error:")]
    assert errors == [f"error: {bad / wmt.VOCAB_FILE} line {again}: subtoken 'the_' repeats line {first}: each subtoken "
                      "must appear once (ids are line numbers); remove the repeated line, and re-encode the training "
                      "shards if they were made with this file"], out.stderr
    (run_dir,) = (tmp_path / "out" / "runs").iterdir()
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed" and result["reason"] == errors[0][len("error: "):]
