"""`python -m harness.report` on real submission trees of v0.5, v0.6 and v0.7: the fixtures README's reading
of each folder, world sizes from the systems' descriptions, derived throughput, scores by round, the
speedup decomposition and the platform comparison."""
from __future__ import annotations

import json
import statistics

import pytest

from tests.helpers import run_cli

# the fixtures README: runs, converged, (min, median, max) minutes, epochs: runs, world size
README = {
    "v0.5/v0.5.0/google": (10, 10, (26.0552, 26.3066, 26.4421), {"2": 10}, 8),
    "v0.5/v0.5.0/intel": (100, 55, (19.0841, 29.5281, 46.9069),
                          {"5": 1, "6": 7, "7": 14, "8": 14, "9": 9, "10": 8, "12": 1, "13": 1}, 0),
    "v0.6/NVIDIA/results/dgx1_": (10, 10, (20.2997, 20.5440, 25.8310), {"4": 9, "5": 1}, 8),
    "v0.6/NVIDIA/results/dgx2h_n16_": (10, 10, (2.0731, 2.0768, 2.4228), {"6": 8, "7": 2}, 256),
    "v0.7/NVIDIA/results/dgx1_": (10, 10, None, {"4": 9, "5": 1}, 8),
    "v0.7/NVIDIA/results/dgxa100_ngc": (10, 10, None, {"4": 9, "5": 1}, 8),
    "v0.7/NVIDIA/results/dgxa100_n2_": (10, 10, None, {"4": 7, "5": 2, "7": 1}, 16),
}
OFFICIAL_V07 = {8: {"V100": 18.5019, "A100": 7.8094}, 16: {"A100": 4.9423}}
DERIVED_V07 = {"dgx1_": 14_411, "dgxa100_ngc": 34_459, "dgxa100_n2_": 57_955}  # sentences/s, README


@pytest.fixture(scope="module")
def trees_report(trees_dir):
    out = run_cli("harness.report", str(trees_dir), "--json", "-")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


def _runs(report, folder):
    return [r for r in report["runs"] if folder in r["path"]]


def test_every_log_of_every_round_reads_to_the_readme_numbers(trees_report, trees_dir):
    report, stderr = trees_report
    assert len(report["runs"]) == len(list(trees_dir.rglob("result_*.txt"))) and report["errors"] == []
    assert "Traceback" not in stderr
    for folder, (n, conv, minutes, epochs, world) in README.items():
        runs = _runs(report, folder)
        converged = [r for r in runs if r["status"] == "success" and r["scorable"]]
        assert (len(runs), len(converged)) == (n, conv), folder
        assert {r["world_size"] for r in runs} == {world}, folder
        counts: dict = {}
        for r in converged:
            counts[f"{r['epochs_to_converge']:g}"] = counts.get(f"{r['epochs_to_converge']:g}", 0) + 1
        assert counts == epochs, folder
        if minutes:
            t = sorted(r["time_to_train_min"] for r in converged)
            assert (round(t[0], 4), round(statistics.median(t), 4), round(t[-1], 4)) == minutes, folder
    rounds = {r["round"] for r in report["runs"]}
    assert {"v0.5", "v0.6", "v0.7"} <= rounds
    assert rounds == {p.name for p in trees_dir.iterdir() if p.is_dir()}  # each newer folder reads as its round
    assert {r["accelerator"] for r in _runs(report, "intel")} == {"CPU"}


def test_v07_scores_are_the_official_ones_and_derived_throughput_is_marked(trees_report):
    report, _ = trees_report
    for g in (g for g in report["groups"] if "v0.7" in g["rounds"]):
        chip = "A100" if "A100" in g["accelerator"] else "V100"
        assert round(g["score"]["minutes"], 4) == OFFICIAL_V07[g["world_size"]][chip]
        assert g["throughput_derived"] and g["throughput_unit"] == "samples/s"
    for folder, figure in DERIVED_V07.items():
        runs = _runs(report, folder)
        runs = [r for r in runs if "v0.7" in r["path"]]
        mean = statistics.fmean(r["throughput"] for r in runs)
        assert mean == pytest.approx(figure, rel=0.02) and all(r["throughput_derived"] for r in runs)


def test_v05_ncf_is_scored_by_its_round_rule_and_says_so(trees_report):
    report, _ = trees_report
    (ncf,) = [g for g in report["groups"] if g["benchmark"] == "ncf"]
    score = ncf["score"]
    assert score["required"] == 100 and score["count_ok"] and score["converged"] == 55
    assert "first 50" in score["rule"] and score["minutes"] is not None
    # the submitter's list names runs that did not converge in the published logs: not used, and said
    assert "first_50_success_file" in score["note"] and "not used" in score["note"]
    spread = ncf["seed_spread"]
    assert spread["epochs"] == {"5": 1, "6": 7, "7": 14, "8": 14, "9": 9, "10": 8, "12": 1, "13": 1}
    assert spread["explained"] > 0.9  # epochs explain nearly all of the spread of time to train


def test_speedups_decompose_into_throughput_epochs_and_rest_with_the_epochs_cost_named(trees_report):
    report, _ = trees_report
    by_pair = {(s["system"], s["world"], s["baseline_world"]): s for s in report["speedups"]}
    # DGX-1 against DGX-2H: one submitter, but another system line and V100 model: paired, and marked so
    v06 = by_pair[("NVIDIA V100", 256, 8)]
    assert v06["family"].startswith("not one system family: system line dgx1_ngc19.05_pytorch vs dgx2h_ngc19.05")
    assert v06["time_to_train"] == pytest.approx(20.5534 / 2.1186, rel=1e-3)
    assert v06["epochs_ratio"] == pytest.approx(4 / 6.125)
    assert v06["time_to_train"] == pytest.approx(v06["throughput"] * v06["epochs_ratio"] * v06["rest"])
    assert "more epochs cost 1.53x (4 -> 6.12)" in v06["flag"]
    a100 = by_pair[("NVIDIA/dgxa100_ngc20.06_pytorch (A100)", 16, 8)]
    assert a100["family"] == "one system family"
    assert a100["time_to_train"] == pytest.approx(1.58, abs=0.005)
    assert a100["throughput"] == pytest.approx(1.68, abs=0.005)
    assert "more epochs cost" in a100["flag"] and "4:7 5:2 7:1" in a100["flag"]
    (n2,) = [g for g in report["groups"] if g["world_size"] == 16]
    assert n2["seed_spread"]["slowest_epochs"] == 7


def test_a100_against_v100_is_one_command(trees_dir, tmp_path):
    base = trees_dir / "v0.7" / "NVIDIA" / "results"
    out = run_cli("harness.report", str(base / "dgxa100_ngc20.06_pytorch"), str(base / "dgx1_ngc20.06_pytorch"),
                  "--compare", "--json", str(tmp_path / "c.json"), "--csv", str(tmp_path / "c.csv"),
                  "--md", str(tmp_path / "c.md"), "--plots", str(tmp_path / "plots"))
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "c.json").read_text())
    (pair,) = data["pairs"]
    assert (pair["benchmark"], pair["world"], pair["category"]) == ("gnmt", 8, "language")
    assert round(pair["throughput"], 2) == 2.39 and round(pair["time_to_train"], 2) == 2.37
    overall = {m["what"]: m["value"] for m in data["geomeans"] if m["category"] == "overall"}
    assert overall["time_to_train"] == pytest.approx(pair["time_to_train"])
    assert "| gnmt | language | 8 |" in (tmp_path / "c.md").read_text()
    assert (tmp_path / "c.csv").read_text().startswith("kind,name,category")
    assert (tmp_path / "plots" / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "2.37x" in out.stdout and "2.39x" in out.stdout
