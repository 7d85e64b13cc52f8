"""What a new user tripped over in the plots and tables (issue 26): time_to_train.png's panels on one
y-axis, whole-epoch ticks on epochs.png, compare.png naming folder A and B and saying what its counts
count, and no `n/ax` in the speedup table."""
from __future__ import annotations

import pytest

from harness.results.report import plots, render
from harness.results.analysis.collect import build, label_for, target_for
from harness.results.analysis.speedups import Speedup
from tests.results.read.test_runfiles import harness_run


@pytest.fixture()
def figures(monkeypatch):
    seen = {}

    def save(fig, path, plt):
        seen[path.name] = fig
        return path

    monkeypatch.setattr(plots, "_save", save)
    yield seen
    import matplotlib.pyplot as plt

    plt.close("all")


def test_time_to_train_panels_share_one_axis_and_epoch_ticks_are_whole(tmp_path, figures):
    for seed in range(3):
        harness_run(tmp_path / "one" / f"s{seed}", seed, epochs=3, seconds=1.0)
        harness_run(tmp_path / "two" / f"s{seed}", seed, epochs=3, seconds=8.0, world=2)
    report = build([str(tmp_path)])
    plots.plot_all(report.groups, report.speedups, tmp_path / "plots", target_for, label_for(report))
    ttt = [ax for ax in figures["time_to_train.png"].axes if ax.get_visible()]
    assert len(ttt) == 2 and ttt[0].get_ylim() == ttt[1].get_ylim()
    assert ttt[0].get_ylim()[1] > 8 * 3 / 60  # both drawn to the slower group's scale
    for ax in (ax for ax in figures["epochs.png"].axes if ax.get_visible()):
        assert [t for t in ax.get_xticks()] == [3.0]  # every run took 3 epochs: one whole tick, not 2.6-3.4
        assert all(float(t).is_integer() for t in ax.get_yticks())


def test_compare_png_names_its_folders_and_says_what_its_counts_count(tmp_path, figures):
    from harness.results.analysis import comparison
    from harness.results.report.comparison_render import plot

    for seed in range(3):
        harness_run(tmp_path / "one_rank" / f"s{seed}", seed, seconds=1.0)
        harness_run(tmp_path / "two_ranks" / f"s{seed}", seed, seconds=0.7, world=2)
    c = comparison.compare([str(tmp_path / "one_rank")], [str(tmp_path / "two_ranks")])
    plot(c, tmp_path / "plots")
    ax = figures["compare.png"].axes[0]
    assert ax.get_title() == "A's speedup over B (A: one_rank; B: two_ranks)"
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "ncf (A 1 CPU rank, B 2 CPU ranks)"


def test_a_missing_figure_reads_n_a_never_n_ax():
    s = Speedup("gnmt", "T4", "amp", 1, 2, None, None, False, None, None, None, None, "")
    header, (row,) = render.speedup_rows([s])
    cells = dict(zip(header, row))
    assert cells["ttt speedup"] == cells["= throughput"] == cells["x epochs"] == cells["x rest"] == "n/a"
    assert "n/ax" not in " ".join(row) and cells["ttt 95% interval"] == "n/a"
