"""Whole published rounds read per accelerator: every throughput per accelerator the round view shows is within
5x of its chip's median on that benchmark, divisions are read whatever their case, and every chip-against-chip
row either pairs like systems or names how they differ.

The rounds are MLCommons' training_results_vX.Y repositories (results/ and systems/ folders suffice, several
hundred MB each): too large for the fixtures, so this runs where HARNESS_ROUNDS names a folder holding them
(training_results_v0.7, training_results_v3.1, ...) and is skipped elsewhere; about 15 s a round on 2 cores."""
from __future__ import annotations

import os
import statistics
from pathlib import Path

import pytest

from harness.rounds import view as round_view
from harness.results.analysis.collect import build

ROUNDS = Path(os.environ.get("HARNESS_ROUNDS", "/nonexistent"))
OUTLIER = 5.0


def _rounds() -> list[Path]:
    return sorted(p for p in ROUNDS.glob("training_results_v*") if p.is_dir()) if ROUNDS.is_dir() else []


@pytest.mark.skipif(not _rounds(), reason="set HARNESS_ROUNDS to a folder of training_results_vX.Y trees")
@pytest.mark.parametrize("tree", _rounds(), ids=lambda p: p.name)
def test_a_published_round_reads_per_accelerator_within_a_plausible_band(tree):
    view = round_view.view(build([str(tree)], None, "fp32", 2), judge=False)
    assert view is not None
    by_chip: dict[tuple, list[float]] = {}
    for e in view.entries:
        if e.throughput_per_accelerator:
            by_chip.setdefault((e.benchmark, e.throughput_unit, e.chip), []).append(e.throughput_per_accelerator)
    outliers = [f"{e.benchmark} {e.submitter}/{e.system} ({e.chip}): {e.throughput_per_accelerator:,.1f} against "
                f"a median of {statistics.median(by_chip[key]):,.1f}"
                for e in view.entries if e.throughput_per_accelerator
                for key in [(e.benchmark, e.throughput_unit, e.chip)]
                if not 1 / OUTLIER <= e.throughput_per_accelerator / statistics.median(by_chip[key]) <= OUTLIER]
    assert not outliers, "\n".join(outliers)
    assert {e.division for e in view.entries} <= {"closed", "open", "n/a"}
    for pair in view.accelerators:
        a = next(e for e in view.entries if f"{e.submitter}/{e.system}" in pair.a_system and e.benchmark == pair.benchmark)
        b = next(e for e in view.entries if f"{e.submitter}/{e.system}" in pair.b_system and e.benchmark == pair.benchmark)
        like = (a.form == b.form or None in (a.form, b.form)) and (a.nodes == b.nodes or None in (a.nodes, b.nodes))
        assert like or pair.unlike, f"{pair.a} vs {pair.b} on {pair.benchmark}: {a.shape} against {b.shape} unlabelled"
