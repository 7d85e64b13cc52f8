"""result.json is one typed record (harness/record.py, written by harness/run/record_file.py): strict
JSON however the run ended, read back as the same record, a field of another schema named rather than
dropped, and an interrupted run rebuilt from its log."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness import record as rec
from harness.run import record_file
from harness.run.mlperf_log import MLPerfLog


def test_a_value_that_is_not_a_number_is_written_as_null_and_the_file_reads_back_as_the_record(tmp_path):
    r = rec.RunRecord(status=rec.FAILED, model="ncf", reason="the loss is nan at step 3 (epoch 1) on rank 0",
                      epochs=(rec.Epoch(1, train_loss=float("nan"), train_seconds=1.0, throughput=float("inf"),
                                        loss_terms={"box": float("nan"), "class": 0.5}),),
                      hyperparameters={"opt_base_learning_rate": float("nan")},
                      error=rec.Failure("NonFiniteLoss", "the loss is nan", 0), command=("model=ncf",))
    path = tmp_path / "result.json"
    record_file.write(r, path)
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"bare {c} in result.json"))
    assert data["epochs"][0]["train_loss"] is None and data["epochs"][0]["loss_terms"] == {"box": None, "class": 0.5}
    assert data["schema"] == rec.SCHEMA and data["error"]["type"] == "NonFiniteLoss"
    back = rec.load(path)
    assert back.error == r.error and back.epochs[0].loss_terms == {"box": None, "class": 0.5}
    assert back.command == ("model=ncf",) and [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_a_field_this_version_does_not_know_is_named_not_dropped(tmp_path):
    path = tmp_path / "result.json"
    record_file.write(rec.RunRecord(), path)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "colour": "blue"}))
    with pytest.raises(ValueError, match="fields colour are not in harness.result/"):
        rec.load(path)


def test_an_interrupted_run_is_rebuilt_from_its_log_with_its_data_wait(tmp_path):
    log = MLPerfLog(tmp_path / "mlperf.log")
    log.start("run_start")
    for epoch in (1, 2):
        log.event("tracked_stats", metadata={"epoch_num": epoch}, value={
            "throughput": 100.0, "samples": 200.0, "seconds": 2.0, "train_loss": 0.5, "data_wait_s": 0.25,
            "loss_terms": {"box": 0.2, "class": 0.3}})
    log.event("eval_accuracy", value=0.4, metadata={"epoch_num": 2})
    log.end("run_stop", metadata={"status": "aborted", "reason": "SIGTERM"})
    log.close()
    start = rec.RunRecord(model="ssd", run_dir=str(tmp_path))
    r = record_file.assemble(start, None, rec.RunEnd(rec.ABORTED, "interrupted (SIGTERM)"), tmp_path / "mlperf.log",
                     finished_at="now")
    assert (r.status, r.reason, r.finished_at, r.epochs_run) == ("aborted", "interrupted (SIGTERM)", "now", 2)
    assert r.data_wait_s == 0.5 and r.data_wait_share == pytest.approx(0.125)
    assert r.epochs[1].loss_terms == {"box": 0.2, "class": 0.3} and r.final_quality == 0.4
    assert r.overhead_s is None  # not a finished run's account


@pytest.mark.parametrize("text", ['{"platform": 3, "seed": 1}', "{not json", '["1xCPU"]'])
def test_a_damaged_note_of_rank_0_s_initialisation_is_left_out_and_removed(tmp_path, text):
    """.initialised.json is the run's own file, but a disk or a user may have damaged it: a badly typed or
    unreadable one adds nothing to result.json and is gone after, as a good one is."""
    good = rec.RunRecord(run_dir=str(tmp_path), platform="1xCPU", accelerator="CPU", seed=7,
                         hyperparameters={"global_batch_size": 64})
    record_file.note_initialised(tmp_path, good)
    start = rec.RunRecord(model="ncf", run_dir=str(tmp_path))
    end = rec.RunEnd(rec.ABORTED, "interrupted (SIGTERM)")
    kept = record_file.assemble(start, None, end, None)
    assert (kept.platform, kept.seed, kept.global_batch_size) == ("1xCPU", 7, 64)
    (tmp_path / record_file.INITIALISED).write_text(text)
    lost = record_file.assemble(start, None, end, None)
    assert (lost.platform, lost.seed, lost.global_batch_size) == ("", None, None)
    assert not (tmp_path / record_file.INITIALISED).exists()


def test_a_finished_runs_totals_are_derived_once():
    r = rec.derive(rec.RunRecord(status=rec.SUCCESS, time_to_train_s=10.0, hyperparameters={"global_batch_size": 64},
                                 epochs=(rec.Epoch(1, train_seconds=6.0, eval_seconds=3.0),),
                                 evals=(rec.Evaluation(1, 0.7),), data_wait_s=0.3, data_wait_share=0.05))
    assert (r.time_to_train_min, r.global_batch_size, r.final_quality, r.overhead_s) == (10 / 60, 64, 0.7, 1.0)
    assert replace(r, data_wait_s=0.3).data_wait_share == 0.05  # the rank's own figure is kept


def test_every_field_the_reader_narrows_is_a_field_of_the_record():
    from dataclasses import fields

    names = {f.name for f in fields(rec.RunRecord)}
    assert set(rec.READS) <= names and set(rec.NESTED) <= names
    assert set(rec.PER_EPOCH) <= {f.name for f in fields(rec.Epoch)}
    assert set(rec.PER_EVAL) <= {f.name for f in fields(rec.Evaluation)}


def test_a_written_record_reads_back_whole_and_a_stranger_field_is_let_be():
    """The report reads result.json through the record that wrote it (harness.record.from_dict): every
    field's type comes from the record's own declaration, and a field of a newer writer is left out."""
    import json

    r = rec.derive(rec.RunRecord(status=rec.SUCCESS, model="ncf", time_to_train_s=10.0, seed=3,
                                 epochs=(rec.Epoch(1, train_seconds=6.0, throughput=5.0),),
                                 evals=(rec.Evaluation(1, {"A": 0.7}),), error=rec.Failure("E", "m"),
                                 command=("python", "-m", "harness.train")))
    data = json.loads(rec.to_json(r))
    assert rec.problems(data) == [] and rec.from_dict(data) == r
    assert rec.from_dict({**data, "from_a_newer_writer": 1}) == r
    assert rec.problems({**data, "device": 3, "command": [1], "epochs": [{"epoch": 1, "steps": "x"}]}) == [
        "device is 3, not a string", "command is [1], not a list of strings", 'epochs[0].steps is "x", not an integer']
