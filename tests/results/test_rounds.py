"""Newer rounds' formats, generated in their shape (tests/results/roundlogs.py), read side by side with
mlperf-logging's own tools: the ruleset from the round's folder, stable diffusion's convergence in steps
(v3.1) or samples (v4.0 on), 5.0.0's checker crashing on a v3.1 log said in one line, RetinaNet under its
two names, a "success" below the target dropped as the summarizer drops it, scaling.json, and one group
per submission folder whatever platform strings its logs state."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, run_cli
from tests.results.roundlogs import T0, mllog, retinanet_log, stable_diffusion_log, system_json, write_folder

_spec = importlib.util.spec_from_file_location("official_compare", REPO / "scripts" / "tools" / "official_compare.py")
compare = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = compare
_spec.loader.exec_module(compare)


def _official(folder: Path, ruleset: str = None):
    round_ = compare.round_in_path(folder / "result_0.txt")
    f = compare.Folder(str(folder), round_, ruleset or compare.ruleset_of_round(round_), folder.name,
                       sorted(str(p) for p in folder.glob("result_*.txt")))
    compare.official_side(f)
    return f


def _report(*paths):
    out = run_cli("harness.report", *map(str, paths), "--json", "-")
    return json.loads(out.stdout), out


def _sd_scores(seed: int) -> list[tuple[float, float]]:
    """(FID, CLIP) per checkpoint, converging at the 7th, 8th or 9th depending on the seed."""
    reach = 6 + seed % 3
    return [(300.0 - 25 * i if i < reach else 88.0 - i, 0.05 + 0.015 * i if i < reach else 0.16) for i in range(10)]


@pytest.mark.parametrize("round_,unit_key,unit", [("v3.1", "step_num", "steps"), ("v4.1", "samples_count", "samples")])
def test_stable_diffusion_converges_where_the_rcp_checker_says_in_its_unit(tmp_path, round_, unit_key, unit):
    logs = [stable_diffusion_log(_sd_scores(s), unit=unit_key, seed=s, t0=1_700_000_000_000 + s * 10**7)
            for s in range(10)]
    folder = write_folder(tmp_path, round_, "sys_a", "stable_diffusion", logs, scaling=1.0204)
    official = _official(folder)
    report, _ = _report(tmp_path)
    runs = {str(Path(r["path"]).resolve()): r for r in report["runs"]}
    for log in official.logs:
        run = runs[str(Path(log).resolve())]
        assert run["epochs_to_converge"] == official.official[log]["convergence"] is not None
        assert run["epoch_unit"] == unit
        assert compare.units_of(log, official.official[log]["convergence"], "stable_diffusion", official.ruleset) == [unit]
        assert run["check"] == official.official[log]["check"] == "pass"
        # the offline evaluations come after a run_stop stamped earlier: a warning, and the run still counts
        assert run["counted"] and any("timestamps go backwards" in w for w in run["warnings"])
    (group,) = report["groups"]
    assert group["score"]["minutes"] == official.score and group["score"]["scaling"] == official.scaling == 1.0204
    assert "x 1.0204 (scaling.json)" in group["score"]["note"]


def test_a_v31_log_under_5_0_0_crashes_the_official_checker_and_check_says_so_in_one_line(tmp_path):
    folder = write_folder(tmp_path, "v3.1", "sys_a", "stable_diffusion", [stable_diffusion_log(_sd_scores(1))])
    assert "KeyError" in _official(folder, "5.0.0").official[str(folder / "result_0.txt")]["check"]
    out = run_cli("harness.check", str(folder), "--ruleset", "5.0.0")
    lines = out.stdout.splitlines()
    assert out.returncode == 1, out.stdout  # the checker's failure, not the log's: nothing vouches for the log
    assert out.stderr.splitlines() == ["harness.check: error: 1 log(s) not judged by the official checker (CRASH or "
                                       "SKIP above); pass --allow-skipped to accept them"]
    assert run_cli("harness.check", str(folder), "--ruleset", "5.0.0", "--allow-skipped").returncode == 0
    assert lines[0].startswith("CRASH ") and "the official checker crashed: KeyError: 'samples_count'" in lines[0]
    assert "1 log(s): 0 passed, 0 failed, 1 not judged (the official checker crashed on them)" in lines
    assert run_cli("harness.check", str(folder)).stdout.startswith("PASS")  # with its round's 3.1.0


def test_retinanet_is_checked_by_the_rules_of_its_round_under_either_name(tmp_path):
    ssd = write_folder(tmp_path, "v3.1", "sys_a", "ssd", [retinanet_log([0.2, 0.3, 0.345])])
    retinanet = write_folder(tmp_path, "v5.0", "sys_a", "retinanet", [retinanet_log([0.2, 0.3, 0.345],
                                                                                    benchmark="retinanet")])
    old = write_folder(tmp_path, "v0.7", "sys_a", "ssd", [retinanet_log([0.2, 0.3, 0.345])])
    out = run_cli("harness.check", str(tmp_path))
    by_round = {Path(l.split()[1]).parts[-6]: l for l in out.stdout.splitlines() if l[:4] in ("PASS", "FAIL")}
    for folder, ruleset in ((ssd, "3.1.0"), (retinanet, "5.0.0"), (old, "0.7.0")):
        official = _official(folder).official[str(folder / "result_0.txt")]["check"]
        line = by_round[f"training_results_v{ruleset[:3]}"]
        assert line.startswith({"pass": "PASS", "fail": "FAIL"}[official]) and f", {ruleset})" in line
    # v0.7's ssd is SSD-ResNet34: its rules want keys RetinaNet does not log, and the official checker says so
    assert by_round["training_results_v0.7"].startswith("FAIL") and "model_bn_span" in by_round["training_results_v0.7"]
    assert "  ruleset 3.1.0: 1 log(s), v3.1 in the path" in out.stdout.splitlines()


def test_a_success_below_the_target_is_dropped_as_the_official_summarizer_drops_it(tmp_path):
    logs = [retinanet_log([0.2, 0.3, 0.341 + s / 1000], seed=s, epoch_ms=120_000 + 1000 * s) for s in range(4)]
    logs.append(retinanet_log([0.2, 0.3, 0.335], seed=9))  # says success; its best mAP is below 0.34
    folder = write_folder(tmp_path, "v3.1", "sys_a", "ssd", logs)
    official = _official(folder)
    below = str(folder / "result_4.txt")
    assert official.official[below]["check"] == "fail" and "minutes" not in official.official[below]
    report, out = _report(tmp_path)
    (group,) = report["groups"]
    assert group["score"]["minutes"] == official.score
    assert "1 rejected by the official checker (see problems): counted as the slowest" in group["score"]["note"]
    run = next(r for r in report["runs"] if r["path"].endswith("result_4.txt"))
    assert run["status"] == "success" and not run["counted"]
    assert run["problems"][0].startswith("the official checker (3.1.0) rejects it: Failed checks for eval_accuracy")
    assert out.returncode == 1 and "result_4.txt: the official checker (3.1.0) rejects it" in out.stderr


def test_a_score_belongs_to_its_submission_folder_whatever_the_logs_state(tmp_path):
    """Issue 23: placeholder platform strings merged systems; one folder with two strings split in two."""
    placeholder = "1xSUBMISSION_PLATFORM_PLACEHOLDER"
    two_strings = [retinanet_log([0.3, 0.345], seed=s, platform="8xA" if s % 2 else "8xB", t0=1_600_000_000_000 + s * 10**7,
                                 epoch_ms=100_000 + 500 * s) for s in range(5)]
    same_string = [retinanet_log([0.3, 0.345], seed=s, platform=placeholder, t0=1_600_000_000_000 + s * 10**7,
                                 epoch_ms=60_000 + 700 * s) for s in range(5)]
    write_folder(tmp_path, "v3.1", "sys_a", "ssd", two_strings)
    write_folder(tmp_path, "v3.1", "sys_b", "ssd", same_string, nodes=2)
    write_folder(tmp_path, "v3.1", "sys_c", "ssd", same_string, division="open")
    report, out = _report(tmp_path)
    assert out.returncode == 0, out.stderr
    groups = {g["platform"]: g for g in report["groups"]}
    assert set(groups) == {"closed/Org/sys_a", "closed/Org/sys_b", "open/Org/sys_c"}
    assert {g["world_size"] for g in groups.values()} == {8, 16}
    for name, group in groups.items():
        folder = Path(group["folder"])
        assert group["runs"] == 5 and group["score"]["minutes"] == _official(folder).score, name
    # the same logs outside a tree group by their own fields: by platform string
    loose = tmp_path / "loose"
    loose.mkdir()
    for i, text in enumerate(two_strings):
        (loose / f"result_{i}.txt").write_text(text)
    alone, _ = _report(loose)
    assert sorted(g["platform"] for g in alone["groups"]) == ["8xA", "8xB"]


def test_a_log_outside_any_round_is_checked_with_the_newest_ruleset_and_says_why(tmp_path):
    log = tmp_path / "result_0.txt"
    log.write_text(retinanet_log([0.3, 0.345], benchmark="retinanet").replace('"gradient_accumulation_steps"', '"x"'))
    out = run_cli("harness.check", str(log))  # no ruleset's rules pass it, and its dates' round has no retinanet
    assert out.stdout.startswith("FAIL") and "(retinanet, 5.1.0)" in out.stdout
    assert "no round in the path: the newest ruleset with retinanet (give --ruleset" in out.stdout
    forced = run_cli("harness.check", str(log), "--ruleset", "5.0.0")
    assert "(retinanet, 5.0.0)" in forced.stdout and "ruleset 5.0.0: 1 log(s), --ruleset" in forced.stdout


def test_a_log_the_checker_finds_much_wrong_with_still_gets_one_short_line(tmp_path):
    """Issue 26: one FAIL line of about 1,300 characters."""
    text = "".join(l for l in retinanet_log([0.2, 0.3]).splitlines(keepends=True)
                   if '"opt_' not in l and "gradient_accumulation" not in l)  # every optimizer key gone
    folder = write_folder(tmp_path, "v3.1", "a_system_with_a_rather_long_name_" + "x" * 40, "ssd", [text])
    out = run_cli("harness.check", str(folder), "--verbose")
    (line,) = [l for l in out.stdout.splitlines() if l.startswith("FAIL")]
    head, reason = line.split(" (ssd, 3.1.0): ")
    assert len(line) <= max(240, len(head) + 130), line  # the path as given, then at most ~110 characters of why
    assert reason.startswith("Required EXACTLY_ONE occurrence of '") and reason.endswith(("more)", "...")), reason
    assert "opt_learning_rate_warmup_factor" in out.stdout  # --verbose still prints every message in full


def _official_reading(path: Path, ruleset: str):
    from mlperf_logging.rcp_checker import rcp_checker

    from harness.results.read.official import quiet_root

    try:
        with quiet_root():
            not_converged, value, _, _ = rcp_checker.read_submission_file(str(path), ruleset, False)
    except Exception as err:  # noqa: BLE001 - the official reader's own failure is what is compared
        return type(err)
    return None if not_converged else float(value)


@pytest.mark.parametrize("case", ["sd_v31", "sd_v41", "sd_no_clip", "sd_never", "dlrm_fraction", "llama_samples",
                                  "no_eval", "aborted", "eval_error_key"])
def test_the_convergence_reading_is_the_rcp_checker_s_own_on_every_kind_of_log(tmp_path, case):
    """harness.results.read.official.rcp_convergence redoes read_submission_file's reading on lines already read
    (its docstring says why): here both read the same generated logs, including those it fails on."""
    from harness.results.read.official import rcp_convergence

    ruleset, text = {
        "sd_v31": ("3.1.0", stable_diffusion_log(_sd_scores(2))),
        "sd_v41": ("4.1.0", stable_diffusion_log(_sd_scores(2), unit="samples_count")),
        "sd_no_clip": ("3.1.0", "".join(l for l in stable_diffusion_log(_sd_scores(2)).splitlines(True)
                                        if '"CLIP"' not in l)),
        "sd_never": ("3.1.0", stable_diffusion_log([(100.0, 0.1)] * 4)),
        "dlrm_fraction": ("3.0.0", retinanet_log([0.79, 0.8026], benchmark="dlrm_dcnv2").replace(
            '"epoch_num": 2', '"epoch_num": 0.7500000001')),
        "llama_samples": ("4.0.0", retinanet_log([0.95, 0.92], benchmark="llama2_70b_lora").replace(
            '"epoch_num": 2}', '"epoch_num": 2, "samples_count": 3072}').replace(
            '"epoch_num": 1}', '"epoch_num": 1, "samples_count": 1536}')),
        "no_eval": ("3.1.0", "".join(l for l in retinanet_log([0.35]).splitlines(True) if "eval_accuracy" not in l)),
        "aborted": ("3.1.0", retinanet_log([0.2, 0.3], status="aborted")),
        "eval_error_key": ("3.1.0", retinanet_log([0.2, 0.35]).replace('"key": "eval_accuracy"', '"key": "eval_error"')),
    }[case]
    path = tmp_path / "result_0.txt"
    path.write_text(text, encoding="latin-1")
    want = _official_reading(path, ruleset)
    value, note = rcp_convergence(text.splitlines(keepends=True), ruleset)
    if isinstance(want, type):
        assert value is None and note and want.__name__ in note
    else:
        assert (value, note) == (want, None)


def test_bert_logs_that_count_no_samples_converge_at_their_train_samples_as_the_rcp_checker_s_option_reads_them(
        tmp_path):
    """v1.1's NVIDIA BERT code (230 logs of 23 folders, its users' too) writes epoch_num 1 at every evaluation and
    the samples trained in one train_samples line at the end: read as the RCP checker reads epoch_num, every run
    converged at "1 samples". The checker's --bert_train_samples reading is taken, and said."""
    from harness.results.read.checking import checked_file

    text = retinanet_log([0.70, 0.72], benchmark="bert").replace('"epoch_num": 2}', '"epoch_num": 1}')
    stop = text.rindex(":::MLLOG")
    text = text[:stop] + mllog("train_samples", 3_000_320, T0 + 310_001) + text[stop:]
    path = tmp_path / "training_results_v1.1" / "Org" / "results" / "sys" / "bert" / "result_0.txt"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    from mlperf_logging.rcp_checker import rcp_checker

    from harness.results.read.official import quiet_root

    with quiet_root():
        assert rcp_checker.read_submission_file(str(path), "1.1.0", False)[1] == 1
        official = rcp_checker.read_submission_file(str(path), "1.1.0", True)[1]
    run = checked_file(path)
    assert (run.epochs_to_converge, run.epoch_unit) == (official, "samples") == (3_000_320, "samples")
    assert any("as the official RCP checker reads it with --bert_train_samples" in w for w in run.warnings)


def test_a_comparison_across_epoch_units_divides_no_epochs_and_says_why(tmp_path):
    # stable diffusion converges in steps under 3.1.0 and in samples from 4.0.0: "x epochs 1397.84x" before
    for round_, key in (("v3.1", "step_num"), ("v4.1", "samples_count")):
        logs = [stable_diffusion_log(_sd_scores(s), unit=key, seed=s, t0=1_700_000_000_000 + s * 10**7)
                for s in range(10)]
        write_folder(tmp_path / round_, round_, "sys_a", "stable_diffusion", logs)
    out = run_cli("harness.report", str(tmp_path / "v3.1"), str(tmp_path / "v4.1"), "--compare")
    assert out.returncode == 0, out.stderr
    assert ("no epochs ratio nor chances: A's runs converge in steps, B's in samples (their rounds' rules count it "
            "so), and one does not divide the other") in out.stdout
    assert ": chances:" not in out.stdout and "expected epochs" not in out.stdout


def test_one_system_line_at_three_counts_beside_another_server_still_pairs_as_scaling(tmp_path):
    # Dell's v1.0 ResNet: DSS8440 at 8, 16 and 24 A100-PCIe beside an XE8545 (A100-SXM) at 8; two groups at 8
    # split the family down to one folder a part, and the 16-vs-8 and 24-vs-8 rows vanished
    # (nodes, accelerators a node, epoch time, global batch: 408, 204 and 256 a rank, as Dell's were)
    systems = {"DSS8440x8A100-PCIE-40GB": (1, 8, 120_000, 3264), "2xDSS8440x8A100-PCIE-40GB": (2, 8, 60_000, 3264),
               "3xDSS8440x8A100-PCIE-40GB": (3, 8, 40_000, 6144), "XE8545x4A100-SXM-80GB": (2, 4, 100_000, 3264)}
    for name, (nodes, per_node, epoch_ms, batch) in systems.items():
        logs = [retinanet_log([0.2, 0.3, 0.345], seed=s, epoch_ms=epoch_ms, batch=batch,
                              t0=1_700_000_000_000 + s * 10**7) for s in range(5)]
        folder = write_folder(tmp_path, "v3.1", name, "ssd", logs, nodes=nodes)
        system = json.loads(system_json(name, nodes=nodes, per_node=per_node))
        system["accelerator_model_name"] = "NVIDIA A100-PCIE-40GB" if "PCIE" in name else "NVIDIA A100-SXM4-80GB"
        (folder.parents[2] / "systems" / f"{name}.json").write_text(json.dumps(system))
    report, out = _report(tmp_path)
    pairs = sorted((s["baseline_world"], s["world"], s["family"]) for s in report["speedups"])
    assert pairs == [(8, 16, "one system family"), (8, 24, "one system family")], out.stdout


@pytest.mark.parametrize("benchmark,ruleset,unit", [("bert", "5.0.0", "samples"), ("gpt3", "4.0.0", "tokens"),
                                                    ("unet3d", "3.1.0", "samples"), ("resnet", "5.0.0", "epochs")])
def test_the_comparison_reads_epoch_num_in_what_the_benchmark_counts_there(tmp_path, benchmark, ruleset, unit):
    # BERT's logs count samples in epoch_num: the comparison had called the RCP figure of every v5.0 BERT log
    # epochs and the report's (samples) a disagreement, 337 of them
    log = tmp_path / "result_0.txt"
    log.write_text(mllog("submission_benchmark", benchmark) + mllog("eval_accuracy", 0.72, epoch_num=2549341))
    assert compare.units_of(str(log), 2549341.0, benchmark, ruleset) == [unit]
    assert compare.units_of(str(log), 2549341.0) == ["epochs"]  # without a benchmark, the key's own name


@pytest.mark.parametrize("benchmark,unit", [("bert", "samples"), ("gpt3", "tokens"), ("ssd", "epochs")])
def test_the_comparison_reads_an_epoch_num_in_the_unit_the_benchmark_counts_in_it(tmp_path, benchmark, unit):
    """BERT's logs write samples in epoch_num and GPT-3's tokens (every v2.1 and v3.0 BERT and GPT-3 log): the
    official figure is that number, which the comparison must not call epochs against the report's unit."""
    text = retinanet_log([0.2, 0.3], benchmark=benchmark)
    for epoch in (1, 2):
        text = text.replace(f'"epoch_num": {epoch}}}', f'"epoch_num": {epoch * 1_500_000}}}')
    write_folder(tmp_path, "v3.0", "sys_a", benchmark, [text])
    result = compare.compare(tmp_path / "training_results_v3.0", None, 1)
    assert result["rounds"]["v3.0"][f"convergence unit: {unit}"] == 1
    assert not [d for d in result["disagreements"] if "convergence" in d], result["disagreements"]
    log = str(tmp_path / "training_results_v3.0" / "Org" / "results" / "sys_a" / benchmark / "result_0.txt")
    assert compare.units_of(log, 3_000_000.0, benchmark, "3.0.0") == [unit]
