"""The round view (harness.rounds.view) on real submission trees, side by side with mlperf-logging's own
result summarizer run on the same folders in the test: per benchmark the systems ranked by the official
score, with the summarizer's system, accelerator, count, framework and status, and its energy score where
power was published; no speedup pairs two submitters' systems; a pair of one submitter that is not one
system family is marked. The trees are the fixtures' v0.6, v0.7 and v4.0 NVIDIA folders, copied into a
temporary round with a second organisation (one of NVIDIA's systems under another submitter's name) and
power results beside the v4.0 llama2_70b_lora runs. End-to-end: one report and one summarizer pass over
about 60 logs (a few seconds)."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli

ROUNDS = {"v0.6": "0.6.0", "v0.7": "0.7.0", "v4.0": "4.0.0"}


def _power(folder: Path, watts: float) -> None:
    """power/result_<i>/node_0.txt beside each result file: a constant draw over each run's window."""
    for result in sorted(folder.glob("result_*.txt")):
        stamps = [json.loads(line.split(":::MLLOG ", 1)[1])["time_ms"] for line in result.read_text().splitlines()
                  if ":::MLLOG " in line and ('"run_start"' in line or '"run_stop"' in line)]
        start, stop = min(stamps), max(stamps)
        lines = [("power_measurement_start", None, start)]
        lines += [("power_reading", watts + (t % 7), start + t * (stop - start) // 20) for t in range(1, 21)]
        lines += [("conversion_eff", 0.95, stop), ("power_measurement_stop", None, stop)]
        node = folder / "power" / result.stem / "node_0.txt"
        node.parent.mkdir(parents=True, exist_ok=True)
        node.write_text("".join(":::MLLOG " + json.dumps({"namespace": "", "time_ms": t, "event_type": "POINT_IN_TIME",
                                                           "key": k, "value": v, "metadata": {"file": "p.py"}}) + "\n"
                                for k, v, t in lines))


@pytest.fixture(scope="module")
def round_dir(trees_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("rounds")
    for round_ in ROUNDS:
        shutil.copytree(trees_dir / round_ / "NVIDIA", root / f"training_results_{round_}" / "NVIDIA")
    v07 = root / "training_results_v0.7"
    other = v07 / "Other" / "results"
    other.mkdir(parents=True)
    (v07 / "Other" / "systems").mkdir()
    shutil.move(str(v07 / "NVIDIA" / "results" / "dgxa100_ngc20.06_pytorch"), other)  # 8 A100s, another submitter
    system = json.loads((v07 / "NVIDIA" / "systems" / "dgxa100_ngc20.06_pytorch.json").read_text())
    (v07 / "NVIDIA" / "systems" / "dgxa100_ngc20.06_pytorch.json").unlink()
    (v07 / "Other" / "systems" / "dgxa100_ngc20.06_pytorch.json").write_text(json.dumps({**system, "submitter": "Other"}))
    _power(root / "training_results_v4.0" / "NVIDIA" / "results" / "eos_n8_ngc24.04_nemo" / "llama2_70b_lora", 5600.0)
    return root


@pytest.fixture(scope="module")
def report(round_dir, tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("out")
    out = run_cli("harness.report", str(round_dir), "--json", str(out_dir / "r.json"), "--md", str(out_dir / "r.md"))
    assert out.returncode == 0, out.stderr
    return json.loads((out_dir / "r.json").read_text()), (out_dir / "r.md").read_text()


def _summarizer(org: Path, ruleset: str):
    """mlperf-logging's result summarizer on one organisation's folder (a copy: its RCP pass may write)."""
    from mlperf_logging.result_summarizer import result_summarizer as rs

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        strong, _, detailed, _ = rs.summarize_results(str(org), "training", ruleset)
    return strong, detailed


@pytest.fixture(scope="module")
def official(round_dir, tmp_path_factory):
    copy = tmp_path_factory.mktemp("official")
    out = {}
    for round_, ruleset in ROUNDS.items():
        if round_ == "v0.6":  # mlperf-logging 4.1.68's summarizer cannot read v0.6's system files
            continue
        for org in sorted((round_dir / f"training_results_{round_}").iterdir()):
            target = copy / round_ / org.name
            shutil.copytree(org, target)
            out[(round_, org.name)] = _summarizer(target, ruleset)
    return out


def test_each_benchmark_ranks_its_systems_by_the_summarizer_s_own_scores(report, official):
    data, _ = report
    entries = data["round"]["entries"]
    for (round_, org), (strong, _) in official.items():
        for benchmark in [c for c in strong.columns if c in {e["benchmark"] for e in entries}]:
            theirs = strong[strong[benchmark].notna()].sort_values(benchmark)
            mine = [e for e in entries if e["benchmark"] == benchmark and e["round"] == round_ and e["org"] == org]
            assert [e["minutes"] for e in mine] == list(theirs[benchmark]), (round_, org, benchmark)
            for e, (_, row) in zip(mine, theirs.iterrows()):
                assert (e["system_name"] or e["system"]) == row["system"]
                assert e["accelerator"] == row["accelerator_model_name"]
                assert e["accelerators"] == row["accelerators_count"]
                assert e["framework"] == row["framework"] and e["status"] == row["availability"]
                assert e["division"] == row["division"]
    ranked = [e for e in entries if e["benchmark"] == "gnmt" and e["round"] == "v0.7"]
    # one ranking per benchmark, round, division and category, whoever submitted: NVIDIA's 16 A100s first
    assert [(e["rank"], e["org"], e["accelerators"]) for e in ranked] == [(1, "NVIDIA", 16), (2, "Other", 8),
                                                                          (3, "NVIDIA", 8)]
    assert ranked[0]["accelerator_minutes"] == pytest.approx(16 * ranked[0]["minutes"])


def test_energy_is_the_summarizer_s_energy_score_where_power_was_published(report, official):
    data, markdown = report
    (_, detailed) = official[("v4.0", "NVIDIA")]
    (lora,) = [e for e in data["round"]["entries"] if e["benchmark"] == "llama2_70b_lora"]
    assert lora["energy_j"] == pytest.approx(float(detailed["llama2_70b_lora:Energy"].iloc[0]), rel=1e-12)
    assert "energy (kWh)" in markdown
    (sd,) = [e for e in data["round"]["entries"] if e["benchmark"] == "stable_diffusion"]
    assert sd["energy_j"] is None and sd["energy_note"] is None  # no power folder: no figure, no excuse


def test_no_speedup_pairs_two_submitters_and_other_pairs_are_marked(report):
    data, markdown = report
    tree = [s for s in data["speedups"] if s["platforms"]]
    assert tree and {(s["world"], s["baseline_world"]) for s in tree} == {(256, 8)}  # Other's 8 A100s: unpaired
    for s in tree:
        base, this = (p.split("/")[1] for p in s["platforms"])
        assert base == this
    (v06,) = tree
    assert v06["family"].startswith("not one system family: system line dgx1") and v06["system"] == "NVIDIA V100"
    assert data["round"]["scaling"][0]["one_family"] is False
    assert "| gnmt | NVIDIA V100 | 256 vs 8 | 9.70x |" in markdown and "| NO (see notes) |" in markdown
    (across,) = data["round"]["across_submitters"]
    assert across.startswith("gnmt, v0.7, closed, A100: 2 systems of 2 submitters at 8-16 accelerators")


def test_chips_compare_on_their_best_closed_results_at_equal_counts(report):
    data, markdown = report
    (pair,) = data["round"]["accelerators"]["pairs"]
    assert (pair["a"], pair["b"], pair["benchmark"], pair["accelerators"]) == ("A100", "V100", "gnmt", 8)
    assert pair["a_system"].startswith("Other/dgxa100_ngc20.06_pytorch") and round(pair["time_to_train"], 2) == 2.37
    assert pair["interval"]["low"] < pair["time_to_train"] < pair["interval"]["high"] and pair["verdict"] == "faster"
    overall = [m for m in data["round"]["accelerators"]["geomeans"] if m["category"] == "overall"]
    assert [m["value"] for m in overall] == [pytest.approx(pair["time_to_train"])]
    assert markdown.index("## Round: systems ranked per benchmark") < markdown.index("## Runs")


def test_equal_scores_share_a_rank_and_the_summary_names_every_system_tied(tmp_path):
    # three systems of one score were ranked 1, 2 and 3 by their names, and the summary named one of them
    from tests.results.roundlogs import retinanet_log, write_folder

    for name, epoch_ms in (("sys_a", 120_000), ("sys_b", 120_000), ("sys_c", 90_000), ("sys_d", 150_000)):
        write_folder(tmp_path, "v3.1", name, "ssd", [retinanet_log([0.2, 0.3, 0.345], seed=s, epoch_ms=epoch_ms,
                                                                  t0=1_700_000_000_000 + s * 10**7) for s in range(5)])
    out = run_cli("harness.report", str(tmp_path), "--json", "-")
    entries = json.loads(out.stdout)["round"]["entries"]
    assert sorted((e["system"], e["rank"]) for e in entries) == [("sys_a", 2), ("sys_b", 2), ("sys_c", 1), ("sys_d", 4)]
    results = tmp_path / "training_results_v3.1" / "Org" / "results"
    tied = run_cli("harness.report", str(results / "sys_a"), str(results / "sys_b"), "--html", str(tmp_path / "p.html"))
    (row,) = [line for line in tied.stdout.splitlines() if line.startswith("ssd ")]  # the summary the terminal gets
    assert row.count("(tied)") == 2 and "Org/sys_a (8 x H100, available on-premise), Org/sys_b (8 x H100" in row, tied.stdout
