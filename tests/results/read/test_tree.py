"""System descriptions of submission trees: world size, accelerator and framework, read as data only."""
from __future__ import annotations

import json

import pytest

from harness.results.read import tree
from harness.results.read.checking import checked_file
from harness.results.read.tree import literal, read_system, system_for


def _tree(tmp_path, system_text: str, name="sys_a"):
    log = tmp_path / "Org" / "results" / name / "gnmt" / "result_0.txt"
    log.parent.mkdir(parents=True)
    (tmp_path / "Org" / "systems").mkdir()
    (tmp_path / "Org" / "systems" / f"{name}.json").write_text(system_text)
    return log


def test_v07_system_json_counts_strings_and_a_missing_node_count_means_one(tmp_path):
    log = _tree(tmp_path, json.dumps({"system_name": "sys_a", "accelerators_per_node": "8",
                                      "accelerator_model_name": "NVIDIA A100-SXM4-40GB", "framework": "PyTorch 20.06"}))
    system = system_for(log)
    assert (system.world_size, system.accelerator, system.framework) == (8, "NVIDIA A100-SXM4-40GB", "PyTorch 20.06")


def test_v06_key_value_lines_with_python_literal_strings_are_read_without_running_code(tmp_path):
    marker = tmp_path / "ran"
    entry = ("{'framework': 'PyTorch 19.05', 'nodes': \"{'num_nodes': '16', 'num_accelerators': '16', "
             "'accelerator': 'Tesla V100-SXM3-32GB-H'}\"}")
    text = ("org: " + json.dumps({"value": "NVIDIA", "metadata": {}}) + "\n"
            + "entry: " + json.dumps({"value": entry, "metadata": {}}) + "\n")
    system = read_system(str(_tree(tmp_path, text).parents[3] / "systems" / "sys_a.json"))
    assert (system.world_size, system.accelerator, system.framework) == (256, "Tesla V100-SXM3-32GB-H", "PyTorch 19.05")
    # code in place of a literal is not a literal: nothing runs, nothing is read from it
    assert literal(f"__import__('pathlib').Path({str(marker)!r}).touch()") is None
    assert not marker.exists()


def test_v05_entry_json_beside_the_benchmark_folder_and_a_cpu_system(tmp_path):
    system_dir = tmp_path / "results" / "skx"
    (system_dir / "ncf").mkdir(parents=True)
    (system_dir / "entry.json").write_text(json.dumps({"framework": "BigDL 0.7.0", "nodes": [
        {"num_nodes": 1, "accelerator": "NA", "num_accelerators": 0}]}))
    (system_dir / "first_50_success_file").write_text("ncf/result_0.txt\n../../../../etc/passwd\n")
    log = system_dir / "ncf" / "result_0.txt"
    log.write_text(":::MLPv0.5.0 ncf 1.0 (x.scala:1) run_start\n:::MLPv0.5.0 ncf 2.0 (x.scala:2) run_stop: "
                   '{"success": false}\n')
    run = checked_file(log)
    assert (run.world_size, run.accelerator, run.framework, run.system) == (0, "CPU", "BigDL 0.7.0", "skx")
    assert run.submitter_scored is True
    # a name in the list that leads outside the system folder is not taken
    assert system_for(log).scored == frozenset({str(log.resolve())})


@pytest.mark.parametrize("written, read", [("closed", "closed"), ("Closed", "closed"), (" OPEN ", "open"),
                                           ("close", "closed"), ("", None), (None, None)])
def test_a_division_reads_as_the_rules_name_it(written, read):
    # PCL's v1.0 system files write "close": read as written it made a division of its own in the round view
    assert tree.division(written) == read


def test_a_pipe_named_as_a_system_file_is_not_read(tmp_path):
    """Opening a FIFO waits for a writer for ever: a tree holding one by a system file's name must not hang."""
    import os
    import threading

    from harness.results.read.submission import _read
    from harness.results.read.tree import read_system

    pipe = tmp_path / "systems" / "pipe.json"
    pipe.parent.mkdir()
    os.mkfifo(pipe)
    seen: list = []
    reader = threading.Thread(target=lambda: seen.extend([read_system(str(pipe)), _read(pipe)]), daemon=True)
    reader.start()
    reader.join(20)
    assert not reader.is_alive() and seen == [None, None]
