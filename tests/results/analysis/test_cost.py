"""Cost and energy per run: --price NAME=USD_PER_HOUR (or a YAML file of them) beside the NVML energy in
result.json, ranked by time, cost or energy; and "the workstation card costs 3x and is 0.92-1.34x as
fast" as one command."""
from __future__ import annotations

import json

import pytest

from harness.results.analysis import cost
from harness.results.analysis.stats import GroupKey
from tests.helpers import run_cli
from tests.results.read.test_runfiles import harness_run


def test_prices_from_the_command_line_and_from_yaml(tmp_path):
    (tmp_path / "p.yaml").write_text("prices:\n  NVIDIA H200: 3.5\n  T4: 0.35\n")
    assert cost.parse_prices(["8xA100=32.8", str(tmp_path / "p.yaml"), "t4=0.35"]) == {
        "8xA100": 32.8, "NVIDIA H200": 3.5, "t4": 0.35}  # the same price again, in other words
    with pytest.raises(cost.PriceError, match=r"--price t4: priced twice \(T4=0.35 and t4=0.4\)"):
        cost.parse_prices([str(tmp_path / "p.yaml"), "t4=0.4"])  # no price silently wins over another
    for bad, said in (("H200=cheap", "not a price in USD per hour"), ("H200=-1", "0 or more"),
                      ("=3", "name a platform"), ("H200", "give PLATFORM=USD_PER_HOUR"),
                      (str(tmp_path / "none.yaml"), "cannot be read")):
        with pytest.raises(cost.PriceError, match=said):
            cost.parse_prices([bad])
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(cost.PriceError, match="a mapping of platform"):
        cost.parse_prices([str(tmp_path / "list.yaml")])
    (tmp_path / "code.yaml").write_text("!!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(cost.PriceError, match="not YAML"):  # safe_load: a tag that would run code is refused
        cost.parse_prices([str(tmp_path / "code.yaml")])


def test_a_platform_price_is_per_system_and_an_accelerator_price_per_gpu():
    key = GroupKey("gnmt", "8xNVIDIA H200", 8, "amp", 1024, "NVIDIA H200")
    assert cost.price_for(key, [], {"8xnvidia H200": 30.0, "h200": 3.0}) == (30.0, "8xnvidia H200")
    assert cost.price_for(key, [], {"nvidia h200": 3.5}) == (28.0, "nvidia h200 x 8")
    assert cost.price_for(key, [], {"H200": 3.0}) == (24.0, "H200 x 8")
    assert cost.price_for(key, [], {"T4": 1.0}) == (None, "")
    card = GroupKey("resnet", "1xNVIDIA RTX A6000", 1, "fp32", 256, "NVIDIA RTX A6000")
    assert cost.price_for(card, [], {"A6000": 1.5, "RTX A6000": 1.4, "A600": 9.0}) == (1.4, "RTX A6000 x 1")


def test_a_system_is_priced_by_its_name_in_other_words():
    from harness.results.read.summary import RunSummary

    tree = GroupKey("gnmt", "closed/NVIDIA/dgxa100_ngc20.06_pytorch", 8, None, 2048, "NVIDIA A100-SXM4-40GB (400W)")
    runs = [RunSummary(path="r", system="dgxa100_ngc20.06_pytorch")]
    priced = cost.price_for(tree, runs, cost.parse_prices(["DGX A100=3"]))
    assert priced == (3.0, "DGX A100 (system dgxa100_ngc20.06_pytorch)")  # per hour of the whole system
    v100 = GroupKey("gnmt", "closed/NVIDIA/dgx1_ngc20.06_pytorch", 8, None, 2048, "Tesla V100-SXM2-16GB")
    assert cost.price_for(v100, [], {"dgx-1": 2.0}) == (2.0, "dgx-1 (system dgx1_ngc20.06_pytorch)")
    # the accelerator's own name stays a price per accelerator; a part of a word matches nothing
    assert cost.price_for(tree, runs, {"A100": 1.0, "DGX A100": 3.0}) == (8.0, "A100 x 8")
    assert cost.price_for(tree, runs, {"DGX A10": 3.0, "a100_ngc": 1.0}) == (None, "")
    harness = GroupKey("gnmt", "2xNVIDIA H200", 2, "amp", 128, "NVIDIA H200")
    assert cost.price_for(harness, [], {"H200": 3.0}) == (6.0, "H200 x 2")


def _runs(root, energy, seconds, n=5, world=1):
    for seed in range(n):
        harness_run(root / f"s{seed}", seed, world=world, seconds=seconds * (1 + 0.02 * (seed - 2)),
                    result={"telemetry": {"energy_j": energy * (1 + 0.01 * seed), "power_mean_w": 300.0}})


def test_cost_and_energy_per_run_ranked_by_the_chosen_figure(tmp_path):
    _runs(tmp_path / "one", energy=60_000.0, seconds=30.0)
    _runs(tmp_path / "two", energy=70_000.0, seconds=12.0, world=2)
    out = run_cli("harness.report", str(tmp_path), "--price", "CPU=1.2", "--rank", "energy", "--json", "-")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    rows = {r["world_size"]: r for r in data["cost"]["rows"]}
    assert data["cost"]["rank_by"] == "energy" and data["cost"]["prices"] == {"CPU": 1.2}
    assert rows[1]["usd_per_hour"] == 1.2 and rows[2]["usd_per_hour"] == 2.4 and rows[2]["priced_by"] == "CPU x 2"
    minutes = {g["world_size"]: g["confidence"]["minutes"] for g in data["groups"]}
    assert rows[2]["cost"] == pytest.approx(2.4 * minutes[2] / 60)
    assert rows[1]["cost_interval"]["low"] <= rows[1]["cost"] <= rows[1]["cost_interval"]["high"]
    assert rows[1]["samples_per_usd"] == pytest.approx(data["groups"][0]["confidence"]["throughput"] * 3600 / 1.2)
    assert rows[1]["energy_kj"] == pytest.approx(60 * 1.02, rel=1e-6)  # converged runs' mean
    assert (rows[1]["rank"], rows[2]["rank"]) == (1, 2)  # by energy: one rank uses less
    text = run_cli("harness.report", str(tmp_path), "--price", "CPU=1.2", "--rank", "cost").stdout
    table = text.split("Cost and energy per run, ranked by cost within each benchmark")[1]
    assert table.splitlines()[2].startswith("rank (cost)")
    first = table.splitlines()[3]
    assert first.split()[:3] == ["1", "ncf", "2xCPU"]  # twice the price, 40% of the time: cheaper per run
    bad = run_cli("harness.report", str(tmp_path), "--price", "CPU")
    assert bad.returncode == 2 and "--price 'CPU': give PLATFORM=USD_PER_HOUR" in bad.stderr


def test_the_workstation_card_costs_3x_and_is_this_much_faster_in_one_command(tmp_path):
    _runs(tmp_path / "a6000", energy=60_000.0, seconds=10.0)
    _runs(tmp_path / "rtx3090", energy=80_000.0, seconds=11.0)
    for side in ("a6000", "rtx3090"):
        for rj in (tmp_path / side).rglob("result.json"):
            data = json.loads(rj.read_text())
            rj.write_text(json.dumps({**data, "accelerator": "NVIDIA RTX A6000" if side == "a6000"
                                      else "NVIDIA GeForce RTX 3090"}))
    out = run_cli("harness.report", str(tmp_path / "a6000"), str(tmp_path / "rtx3090"), "--compare",
                  "--price", "A6000=1.5", "--price", "RTX 3090=0.5", "--json", str(tmp_path / "c.json"))
    assert out.returncode == 0, out.stderr
    (pair,) = json.loads((tmp_path / "c.json").read_text())["pairs"]
    conf = pair["confidence"]
    low, high = conf["time_interval"]["low"], conf["time_interval"]["high"]
    assert pair["a_usd_per_hour"] == 1.5 and pair["b_usd_per_hour"] == 0.5
    assert pair["cost"].startswith(f"A costs 3.00x B per hour and is {pair['time_to_train']:.2f}x as fast "
                                   f"(95% interval {low:.2f}x-{high:.2f}x): a run costs ")
    assert f"({3 / high:.2f}x-{3 / low:.2f}x)" in pair["cost"]
    assert "Cost and energy per run" in out.stdout and "A6000 x 1" in out.stdout


def test_a_void_group_keeps_its_runs_figures_but_no_score_and_no_rank(fixtures_dir, tmp_path):
    # two of ten logs cut before run_stop void the score: the CSV gave it score_min (its converged runs' mean)
    # and the cost ranking placed it among the scored systems
    folder = tmp_path / "gnmt"
    folder.mkdir()
    for i, log in enumerate(sorted((fixtures_dir / "nvidia_dgx1" / "gnmt").glob("result_*.txt"))):
        text = log.read_text(errors="replace")
        if i < 2:
            text = "".join(line for line in text.splitlines(keepends=True) if '"key": "run_stop"' not in line)
        (folder / log.name).write_text(text)
    out = run_cli("harness.report", str(folder), "--csv", str(tmp_path / "r.csv"), "--json", str(tmp_path / "r.json"))
    data = json.loads((tmp_path / "r.json").read_text())
    (group,) = data["groups"]
    assert group["score"]["minutes"] is None and group["confidence"]["minutes"] is not None, out.stderr
    import csv

    (row,) = [r for r in csv.DictReader((tmp_path / "r.csv").read_text().splitlines()) if r["kind"] == "group"]
    assert row["score_min"] == "" and row["score_low"] == "" and float(row["time_to_train"]) == pytest.approx(
        group["confidence"]["minutes"])
    void = cost.CostRow(GroupKey("gnmt", "a", 8, None, None), 10, 5.0, None, None, "", None, None, None, None, None,
                        None, False, void=True)
    scored = cost.CostRow(GroupKey("gnmt", "b", 8, None, None), 10, 9.0, None, None, "", None, None, None, None, None,
                          None, False)
    assert [(r.key.platform, r.rank) for r in cost.rank([void, scored], "time")] == [("b", 1), ("a", None)]
