"""--compare's pairing: equal GPU counts first; what is left of a benchmark pairs when one side has a single
group left (a 1-rank sweep against a 2-rank one compares the GPU counts); the rest is named."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness.results.analysis import comparison
from harness.results.analysis.comparison import Unpaired
from harness.results.analysis.stats import GroupKey, group_stats
from harness.results.read.summary import RunSummary
from harness.results.report.comparison_render import unpaired_line


def _group(world, precision="fp32", runs=3, bench="ncf"):
    key = GroupKey(bench, f"{world}xCPU", world, precision, 2048 * world, "CPU")
    return group_stats(key, [RunSummary(path=f"{world}/{i}", benchmark=bench, status="success", time_to_train_min=1.0,
                                        epochs_to_converge=2, evals=[(2, 0.7)]) for i in range(runs)])


def _worlds(pairs):
    return [(a.key.world, b.key.world) for a, b in pairs]


def test_equal_gpu_counts_pair_first_and_a_single_leftover_pairs_across_counts():
    pairs, unpaired = comparison.match([_group(1), _group(2)], [_group(2), _group(4)])
    assert _worlds(pairs) == [(2, 2), (1, 4)] and unpaired == []
    pairs, unpaired = comparison.match([_group(1)], [_group(2)])
    assert _worlds(pairs) == [(1, 2)] and unpaired == []
    pairs, _ = comparison.match([_group(1)], [_group(2), _group(4)])  # one against each of the other's
    assert _worlds(pairs) == [(1, 2), (1, 4)]
    pairs, _ = comparison.match([_group(1, "fp32")], [_group(1, "amp")])  # or one precision against another
    assert _worlds(pairs) == [(1, 1)]


def test_what_cannot_be_paired_is_named_with_what_the_other_side_has():
    pairs, unpaired = comparison.match([_group(1), _group(2)], [_group(4), _group(8)])
    assert pairs == []
    assert unpaired[0] == Unpaired("ncf", "A", "1 CPU rank", "fp32", others=2)
    assert unpaired_line(unpaired[0]) == ("ncf at 1 CPU rank fp32: only A has it (B has 2 other GPU counts or "
                                          "precisions: compare one folder of each): not compared")
    assert len(unpaired) == 4
    pairs, unpaired = comparison.match([_group(1)], [_group(1, bench="gnmt")])
    assert pairs == [] and [unpaired_line(u) for u in unpaired] == [
        "gnmt at 1 CPU rank fp32: only B has it: not compared", "ncf at 1 CPU rank fp32: only A has it: not compared"]


def test_the_side_with_most_runs_stands_for_its_count():
    few, many = _group(2, runs=3), _group(2, runs=5)
    pairs, _ = comparison.match([few, many], [_group(2)])
    assert pairs[0][0] is many


def test_a_throughput_workload_one_side_lacks_is_named_not_dropped():
    a, b = [SimpleNamespace(workload="resnet"), SimpleNamespace(workload="bert")], [SimpleNamespace(workload="bert")]
    (only,) = comparison.left_unpaired(a, b, [SimpleNamespace(workload="bert")], lambda g: g.workload)
    assert only == Unpaired("resnet", "A")
    assert unpaired_line(only) == "resnet: only A has it (or no GPU count matches): not compared"


def test_a_loaded_machine_on_either_side_heads_the_comparison_text_and_page():
    from harness.results.report.comparison_render import render_compare
    from harness.results.report.comparison_render import compare_page

    def side(busy):
        return SimpleNamespace(runs=[RunSummary(path=f"r{i}", busy=b) for i, b in enumerate(busy)])

    c = comparison.Comparison(["out/sweeps/a"], ["out/sweeps/b"], side([True, True]), side([False, True, False]),
                              [], [], [], [])
    assert c.busy == [("A", 2, 2), ("B", 1, 3)]
    line = ("! taken on a loaded machine (A: 2 of 2 run(s), B: 1 of 3 run(s)): other processes used at least half a "
            "core during those runs (result.json host_load), so their times and throughputs, and the ratios here, "
            "measure the neighbours too")
    assert render_compare(c).splitlines()[2] == f"  {line}"
    assert f"- {line}" in render_compare(c, markdown=True)
    page = compare_page(c, render_compare(c, markdown=True), [])
    first = page.split('<section class="verdicts">', 1)[1].split("</li>", 1)[0]
    assert '<span class="flag">taken on a loaded machine</span> (A: 2 of 2' in first
    quiet = comparison.Comparison(["a"], ["b"], side([False]), side([False]), [], [], [], [])
    assert quiet.busy == [] and "loaded" not in render_compare(quiet) and "loaded" not in compare_page(quiet, "", [])


def test_sides_in_folders_named_by_their_time_say_what_their_runs_are():
    a = SimpleNamespace(runs=[], stats=[_group(1)])
    b = SimpleNamespace(runs=[], stats=[_group(2), _group(2, "bf16")])
    c = comparison.Comparison(["out/sweeps/2026-12-02_10-32-35_ncf_5seeds"], ["out/sweeps/2026-12-02_10-40-01_ncf"],
                              a, b, [], [], [], [])
    assert c.a_name == "2026-12-02_10-32-35_ncf_5seeds (ncf, 1 CPU rank, fp32)"
    assert c.b_name == "2026-12-02_10-40-01_ncf (ncf, 2 CPU ranks, bf16 + fp32)"
    named = comparison.Comparison(["results/dgxa100_ngc20.06_pytorch"], ["results/dgx1"], a, b, [], [], [], [])
    assert (named.a_name, named.b_what) == ("dgxa100_ngc20.06_pytorch", "")  # a folder that says what it is


def test_comparing_a_folder_with_itself_is_one_usage_line(tmp_path, capsys):
    from harness.report import main

    (tmp_path / "runs").mkdir()
    (tmp_path / "same").symlink_to(tmp_path / "runs", target_is_directory=True)
    with pytest.raises(SystemExit) as stop:
        main([str(tmp_path / "runs"), str(tmp_path / "same"), "--compare"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and "are the same folder: give the runs of platform A and those of platform B" in err[-1]


def test_epochs_counted_in_other_units_make_no_ratio_nor_chances():
    # stable diffusion converges in steps under 3.1.0 (1,750-2,000) and in samples from 4.0.0 (2.56-3.07 M):
    # dividing one by the other made "x epochs 1397.84x" and "2.76M -> 1950 expected epochs"
    from harness.results.analysis.chances import chances
    from harness.results.analysis.confidence import judge
    from harness.results.analysis.speedups import epochs_ratio

    def side(unit, epochs, world):
        runs = [RunSummary(path=f"{unit}/{i}", benchmark="stable_diffusion", status="success", epoch_unit=unit,
                           time_to_train_min=40.0 + i, epochs_to_converge=epochs * (1 + i / 20), evals=[(epochs, 90.0)])
                for i in range(10)]
        return runs, group_stats(GroupKey("stable_diffusion", f"{world}xGPU", world, "bf16", 512), runs)

    (steps, g_steps), (samples, g_samples), (more, g_more) = side("steps", 1750, 8), side("samples", 2_560_000, 64), \
        side("samples", 2_764_800, 64)
    assert g_steps.epoch_unit == "steps" and epochs_ratio(g_samples, g_steps) is None
    assert judge("A", samples, None, "B", steps, None, "stable_diffusion").epochs_ratio is None
    assert chances("A", samples, "B", steps, 1.0) is None
    assert epochs_ratio(g_more, g_samples) == pytest.approx(1.08)  # one unit: the ratio stands
    assert judge("A", samples, None, "B", more, None, "stable_diffusion").epochs_ratio == pytest.approx(1.08)
