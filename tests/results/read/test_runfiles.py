"""A badly typed result.json is named (file and field) and skipped, and the rest is reported (issue 24
item 5); the data wait it carries flags an input-bound run (issue 25)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness.results.read import runfiles
from harness.results.read.summary import LogError
from tests.helpers import run_cli
from tests.results.read.test_parse import _line

T0 = 1_600_000_000_000


def harness_run(run_dir: Path, seed: int, epochs: int = 2, result: dict | None = None, world: int = 1,
                seconds: float = 1.0) -> Path:
    """A harness run directory: an mlperf.log that converges after `epochs` and its result.json."""
    lines = [_line("submission_benchmark", "ncf", T0), _line("submission_platform", f"{world}xCPU", T0),
             _line("number_of_nodes", 1, T0), _line("accelerators_per_node", world, T0), _line("seed", seed, T0),
             _line("global_batch_size", 2048 * world, T0), _line("init_start", t=T0, event="INTERVAL_START"),
             _line("init_stop", t=T0 + 100, event="INTERVAL_END"), _line("run_start", t=T0 + 100, event="INTERVAL_START")]
    step = int(seconds * 1000)
    for e in range(1, epochs + 1):
        lines.append(_line("tracked_stats", {"samples": 100_000, "seconds": seconds}, T0 + 100 + step * e, epoch_num=e))
        lines.append(_line("eval_accuracy", 0.6 + 0.02 * e, T0 + 100 + step * e, epoch_num=e))
    lines.append(_line("run_stop", t=T0 + 200 + step * epochs, event="INTERVAL_END", status="success"))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "mlperf.log").write_text("".join(lines))
    data = {"status": "success", "mode": "train", "benchmark": "ncf", "seed": seed, "world_size": world,
            "accelerator": "CPU", "quality_metric": "HR@10", "quality_direction": "higher", "target": 0.635,
            "epoch_unit": "epochs", "throughput_unit": "samples/s", "data_wait_s": 0.01, "data_wait_share": 0.01,
            **(result or {})}
    (run_dir / "result.json").write_text(json.dumps(data))
    return run_dir


# the cases, and the other fields the report reads
ORPHANS = {  # result.json with no mlperf.log (a run that failed before its log began, or a throughput result)
    "world_one": ({"world_size": "one"}, 'world_size is "one", not a non-negative integer'),
    "seed_list": ({"seed": [1]}, "seed is [1], not an integer"),
    "batch_list": ({"global_batch_size": [1]}, "global_batch_size is [1], not a positive integer"),
    "seed_dict": ({"seed": {"value": 1}}, 'seed is {"value": 1}, not an integer'),
    "tput_fast": ({"mode": "throughput", "status": "success", "throughput": "fast"},
                  'throughput is "fast", not a non-negative number below 1e+15'),
    "tput_world": ({"mode": "throughput", "status": "success", "throughput": 10.0, "world_size": "two"},
                   'world_size is "two", not a non-negative integer'),
    "not_json": (None, "not valid JSON"),
}
BESIDE_LOG = {  # beside a good mlperf.log: the run is read from its log alone
    "energy": ({"telemetry": {"energy_j": "lots"}}, 'telemetry.energy_j is "lots", not a non-negative number below 1e+15'),
    "wait": ({"data_wait_share": "high"}, 'data_wait_share is "high", not a number from 0 to 1'),
    "busy": ({"host_load": {"busy": "yes"}, "epochs": [{"throughput": "x"}]},
             'host_load.busy is "yes", not true or false; epochs[0].throughput is "x", not a non-negative number below 1e+15'),
}


def _orphan(path: Path, fields: dict | None) -> None:
    path.mkdir(parents=True)
    base = {"status": "failed", "mode": "train", "benchmark": "ncf", "reason": "missing data", "world_size": 1}
    (path / "result.json").write_text("{oops" if fields is None else json.dumps({**base, **fields}))


def test_problems_name_each_badly_typed_field():
    assert runfiles.problems({"world_size": "one", "seed": [1], "global_batch_size": [1]}) == [
        'seed is [1], not an integer', 'world_size is "one", not a non-negative integer',
        'global_batch_size is [1], not a positive integer']
    assert runfiles.problems({"world_size": True}) == ["world_size is true, not a non-negative integer"]
    assert runfiles.problems({"target": {"BBOX": 0.377, "SEGM": "x"}}) == [
        'target is {"BBOX": 0.377, "SEGM": "x"}, not a number or named numbers']
    assert runfiles.problems({"evals": [{"epoch": 1, "quality": "good"}]}) == [
        'evals[0].quality is "good", not a number or named numbers']
    assert runfiles.problems([1]) == ["holds list, not a JSON object"]
    assert runfiles.problems({"seed": None, "world_size": 2, "data_wait_share": 0.3, "target": {"A": 1}}) == []
    assert runfiles.describe([f"f{i}" for i in range(5)]) == "f0; f1; f2; and 2 more"


def test_from_result_json_refuses_a_badly_typed_file_with_its_fields(tmp_path):
    _orphan(tmp_path / "x", {"seed": [1]})
    with pytest.raises(LogError, match=r"seed is \[1\], not an integer"):
        runfiles.from_result_json(tmp_path / "x" / "result.json")


def test_a_thousand_results_with_ten_malformed_name_the_ten_and_report_the_rest(tmp_path):
    root = tmp_path / "runs"
    good = 0
    for i in range(990):
        harness_run(root / f"good_{i:04d}", seed=i, epochs=2 + i % 2)
        good += 1
    for name, (fields, _) in ORPHANS.items():
        _orphan(root / f"bad_{name}", fields)
    for name, (fields, _) in BESIDE_LOG.items():
        harness_run(root / f"bad_{name}", seed=5000 + len(name), result=fields)
    out = run_cli("harness.report", str(root), "--json", str(tmp_path / "r.json"))
    assert out.returncode == 1  # bad input is an error, but not a crash
    assert "Traceback" not in out.stderr
    errors = [l for l in out.stderr.splitlines() if "/result.json: " in l]
    assert len(errors) == 10
    for name, (_, field) in {**ORPHANS, **BESIDE_LOG}.items():
        (line,) = [l for l in errors if f"/bad_{name}/result.json: " in l]
        assert field in line, line
        assert line.endswith("skipped: the run is read from its mlperf.log alone" if name in BESIDE_LOG else
                             ": skipped")
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["errors"]) == 10
    # the rest is reported: 990 runs plus the three whose logs stand without their result.json
    assert len(data["runs"]) == good + len(BESIDE_LOG)
    # the three read from their logs alone name no accelerator: a group of their own
    groups = {g["accelerator"]: g for g in data["groups"]}
    assert groups[None]["runs"] == len(BESIDE_LOG)
    group = groups["CPU"]
    assert group["runs"] == good and group["score"]["minutes"] is not None
    assert group["confidence"]["interval"]["low"] <= group["score"]["minutes"] <= group["confidence"]["interval"]["high"]
    skipped = {r["path"].split("/")[-2]: r for r in data["runs"] if "bad_" in r["path"]}
    assert skipped["bad_energy"]["energy_j"] is None and skipped["bad_energy"]["accelerator"] is None
    assert "Groups" in out.stdout and data["throughput"]["runs"] == []


def test_an_input_bound_run_is_flagged_in_the_tables_notes_and_json(tmp_path, capsys):
    from harness.report import main

    for seed in range(3):
        harness_run(tmp_path / "slow" / f"s{seed}", seed, result={"data_wait_s": 0.5, "data_wait_share": 0.12 + seed / 100})
        harness_run(tmp_path / "fast" / f"s{seed}", seed, world=2, result={"data_wait_share": 0.02})
    assert main([str(tmp_path), "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv")]) == 0
    text = capsys.readouterr().out
    row = next(l for l in text.splitlines() if "slow/s1/mlperf.log" in l)
    assert "13% input-bound" in row
    assert "ncf 1xCPU 1 n/a 2048: input-bound: the numbers measure the loader (data wait 13% of training time, mean " \
           "of 3 run(s))" in text
    assert "input-bound: data wait over 5% of training time" in text
    data = json.loads((tmp_path / "r.json").read_text())
    flagged = {g["world_size"]: g["input_bound"] for g in data["groups"]}
    assert flagged == {1: True, 2: False}
    assert all(r["input_bound"] == ("slow" in r["path"]) for r in data["runs"])
    (s2,) = data["speedups"]
    assert s2["confidence"]["input_bound"] == ["1 CPU rank: data wait 13% of training time"]
    assert s2["confidence"]["text"].endswith("input-bound: the numbers measure the loader (1 CPU rank: data wait 13% "
                                             "of training time)")
    assert ",True," in next(l for l in (tmp_path / "r.csv").read_text().splitlines() if l.startswith("group,") and
                            ",1,n/a," not in l and "1xCPU" in l)


def test_a_comparison_side_that_waits_for_data_is_flagged(tmp_path):
    for seed in range(4):
        harness_run(tmp_path / "a" / f"s{seed}", seed, result={"data_wait_share": 0.30})
        harness_run(tmp_path / "b" / f"s{seed}", seed, seconds=1.5)
    out = run_cli("harness.report", str(tmp_path / "a"), str(tmp_path / "b"), "--compare", "--json", "-")
    assert out.returncode == 0, out.stderr
    (pair,) = json.loads(out.stdout)["pairs"]
    assert pair["input_bound"] and pair["confidence"]["input_bound"] == ["A: data wait 30% of training time"]
    assert "input-bound: the numbers measure the loader (A: data wait 30% of training time)" in pair["confidence"]["text"]


def test_json_nested_too_deep_or_figures_too_large_to_sum_are_named_and_the_run_read_from_its_log(tmp_path, capsys):
    from harness.report import main as report
    from tests.test_report import _harness_run

    for name, broken in (("deep", "[" * 100_000 + "]" * 100_000), ("huge", None)):
        for seed in (1, 2, 3):
            _harness_run(tmp_path / name / str(seed), seed, [0.5, 0.95], 0.9)
            result = tmp_path / name / str(seed) / "result.json"
            data = json.loads(result.read_text()) | {"telemetry": {"energy_j": 1.5e308}}
            result.write_text(broken or json.dumps(data))
        assert report([str(tmp_path / name), "--json", "-"]) == 1
        out = capsys.readouterr()
        assert len(json.loads(out.out)["runs"]) == 3 and len(out.err.splitlines()) == 3
        why = "nested too deep to read" if broken else "telemetry.energy_j is 1.5e+308, not a non-negative number"
        assert all(why in line and "read from its mlperf.log alone" in line for line in out.err.splitlines())


def test_a_run_s_settings_are_its_config_s_options_beyond_the_group_key(tmp_path):
    from harness.results.read.runfiles import CONFIG_BYTES, settings_of

    config = tmp_path / "config.yaml"
    config.write_text("model:\n  name: ncf\n  target: 0.635\n  learning_rate: 0.003\n  layers: [64, 32]\n"
                      "  synthetic: {n_users: 10}\ndataset:\n  name: ncf_embedded\n  path: out/datasets/x\n"
                      "  generator: {users: 400}\nseed: 3\nmax_epochs: 6\nprogress: false\noutput_root: out\n")
    assert dict(settings_of(config)) == {
        "model.learning_rate": "0.003", "model.layers": "[64, 32]", "model.synthetic.n_users": "10",
        "dataset.name": '"ncf_embedded"', "dataset.generator.users": "400", "max_epochs": "6"}
    config.write_text("model: !!python/object/apply:os.system ['echo no']\n")  # data only: never run
    assert settings_of(config) == ()
    config.write_text("a" * (CONFIG_BYTES + 1))
    assert settings_of(config) == () and settings_of(tmp_path / "none.yaml") == ()


# aliases nested six deep: 9**6 strings from 300 bytes (ten deep, 9**10, held the report for ever; not run here,
# as it fills the memory of the machine that runs the test where the loader expands aliases)
BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcde", "bcdef")) + "model: {x: *f}\n"
BAD_RUN_FILES = {  # (file, how it is made, what its one line says)
    "deep_config": ("config.yaml", lambda p: p.write_text("model: " + "[" * 3000 + "]" * 3000 + "\n"),
                    "nested over 64 levels"),
    "alias_bomb": ("config.yaml", lambda p: p.write_text(BOMB), "an anchor or alias at line 1"),
    "fifo_config": ("config.yaml", os.mkfifo, "cannot be read: not a regular file"),
    "fifo_result": ("result.json", os.mkfifo, "cannot be read: not a regular file"),
}


@pytest.mark.timeout(60)  # a pipe or an alias bomb held the report for ever
def test_a_run_file_that_is_deep_an_alias_bomb_or_a_pipe_is_one_line_and_every_run_is_reported(tmp_path, capsys):
    from harness.report import main as report

    for seed in (1, 2, 3):
        harness_run(tmp_path / f"good{seed}", seed)
    for name, (file, make, _) in BAD_RUN_FILES.items():
        (harness_run(tmp_path / name, 4) / file).unlink(missing_ok=True)
        make(tmp_path / name / file)
    assert report([str(tmp_path), "--json", "-"]) == 1
    out = capsys.readouterr()
    assert len(json.loads(out.out)["runs"]) == 3 + len(BAD_RUN_FILES) and "Traceback" not in out.err
    for name, (file, _, why) in BAD_RUN_FILES.items():
        said = [l for l in out.err.splitlines() if f"/{name}/" in l]
        assert len(said) == 1 and said[0].startswith(f"{tmp_path / name / file}: ") and why in said[0], said
    assert not [l for l in out.err.splitlines() if "/good" in l]


def test_a_config_the_harness_writes_is_read_with_its_settings(tmp_path):
    """OmegaConf.to_yaml, as harness.run.job writes config.yaml: no anchors, however the options interpolate."""
    from omegaconf import OmegaConf

    config = tmp_path / "config.yaml"
    cfg = OmegaConf.create({"model": {"layers": [64, 32], "head": "${model.layers}"}, "dataset": {"d": "${model}"}})
    config.write_text(OmegaConf.to_yaml(cfg, resolve=True))
    assert runfiles.read_settings(config) == ((("dataset.d.head", "[64, 32]"), ("dataset.d.layers", "[64, 32]"),
                                               ("model.head", "[64, 32]"), ("model.layers", "[64, 32]")), None)
