"""GovReport's packed parquet format and the embedded generator: what the generator writes reads back as
the reference's rows (training labels the ids, validation labels the summaries alone), a padded position
takes no loss, a file that is not the format is one error naming it, the loss of a row is the mean over
its labelled next tokens, and the embedded preset repeats the generator's defaults."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import pyarrow as pa
import pyarrow.parquet as pq
import torch
import torch.nn.functional as F

from harness.config import compose
from harness.interface import DataError
from reference_models.llama2_70b_lora import govreport
from reference_models.llama2_70b_lora.benchmark import sequence_losses
from reference_models.llama2_70b_lora.generate import SUMMARY, CorpusSpec, Lexicon, document, encoded, pack

SMALL = CorpusSpec(train_documents=30, validation_documents=12, seq_len=64)


def _lexicon() -> Lexicon:
    return Lexicon(SMALL, np.random.default_rng(0))


def test_packed_rows_read_back_with_validation_labels_on_the_summaries_alone(tmp_path):
    lex, rng = _lexicon(), np.random.default_rng(1)
    docs = [encoded(lex, *document(rng, lex, SMALL), validation=True) for _ in range(SMALL.validation_documents)]
    tokens, labels = pack([d for d, _ in docs], [m for _, m in docs], SMALL.seq_len)
    govreport.write_split(tmp_path / govreport.VALIDATION_FILE, tokens, labels)
    table = pq.read_table(tmp_path / govreport.VALIDATION_FILE)
    assert table.column_names == ["input_ids", "attention_mask", "labels"]
    assert table.schema.field("input_ids").type == pa.list_(pa.int32())
    packed = govreport.read_split(tmp_path / govreport.VALIDATION_FILE)
    assert packed.seq_len == SMALL.seq_len and len(packed) == len(tokens)
    stream, kept = packed.tokens.ravel(), packed.labels.ravel()
    assert stream[0] == lex.ids["<s>"] and (kept[kept != govreport.IGNORE] == stream[kept != govreport.IGNORE]).all()
    # each labelled run starts right after "### Summary:" and stops before </s>
    starts = np.flatnonzero((kept[1:] != govreport.IGNORE) & (kept[:-1] == govreport.IGNORE)) + 1
    assert len(starts) and all((stream[s - 2:s] == lex.encode(SUMMARY)).all() for s in starts)
    assert not (kept == lex.ids["</s>"]).any()
    train = [encoded(lex, *document(rng, lex, SMALL), validation=False) for _ in range(3)]
    t_tokens, t_labels = pack([d for d, _ in train], [m for _, m in train], 16)
    assert (t_tokens == t_labels).all()


def test_padding_takes_no_loss_and_a_file_that_is_not_the_format_is_named(tmp_path):
    path = tmp_path / govreport.TRAIN_FILE
    ids = pa.array([[5, 6, 7, 0], [8, 9, 10, 11]], type=pa.list_(pa.int32()))
    pq.write_table(pa.table({"input_ids": ids, "attention_mask": pa.array([[1, 1, 1, 0], [1, 1, 1, 1]]),
                             "labels": ids}), path)
    assert govreport.read_split(path).labels.tolist() == [[5, 6, 7, -100], [8, 9, 10, 11]]
    pq.write_table(pa.table({"input_ids": ids}), path)
    with pytest.raises(DataError, match=rf"^{path}: no column 'labels' \(it has input_ids\)"):
        govreport.read_split(path)
    ragged = pa.array([[1, 2, 3], [1, 2]], type=pa.list_(pa.int32()))
    pq.write_table(pa.table({"input_ids": ragged, "labels": ragged}), path)
    with pytest.raises(DataError, match=r"row 1's 'input_ids' has 2 tokens, row 0's 3"):
        govreport.read_split(path)
    path.write_text("not parquet")
    with pytest.raises(DataError, match=rf"^{path}: not a parquet file"):
        govreport.read_split(path)
    with pytest.raises(DataError, match="missing: put the reference's scrolls_gov_report_8k files there"):
        govreport.split_path(tmp_path, govreport.VALIDATION_FILE)


def test_a_row_s_loss_is_the_mean_over_its_labelled_next_tokens():
    logits = torch.randn(2, 5, 7)
    labels = torch.tensor([[1, 2, -100, 4, 5], [-100, -100, -100, -100, -100]])
    losses, counted = sequence_losses(logits, labels)
    expect = F.cross_entropy(logits[0, [0, 2, 3]], torch.tensor([2, 4, 5]))
    assert torch.allclose(losses[0], expect) and counted.tolist() == [True, False] and losses[1] == 0


def test_the_embedded_preset_repeats_the_generator_s_defaults():
    cfg = compose(["model=llama2_70b_lora"])
    assert dict(cfg.dataset.generator) == dataclasses.asdict(CorpusSpec())
    assert cfg.mlperf.division == "open" and cfg.model.target == 0.925 and cfg.model.batch_size == 8
