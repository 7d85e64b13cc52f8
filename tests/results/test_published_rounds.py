"""Whole published rounds read per accelerator: every throughput per accelerator the round view shows is within
5x of its chip's median on that benchmark (but for SLOW), divisions are read whatever their case, and every
chip-against-chip row either pairs like systems or names how they differ.

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
# (benchmark, system folder): systems that far below their chip's median, each figure checked on 2026-12-05 against
# the log's own timing and, where it states one, its own throughput (tracked_stats or `throughput`): a slower form
# or code on the chip, or a tiny batch per chip, not a misreading
SLOW = {
    ("dlrm", "DSS8440x8A100-PCIE-40GB"),  # v1.0: 8 A100 PCIe cards, 100 min a run: 3.98e9 samples / 5,991 s / 8
    ("dlrm", "as-4142gs-tnr"),  # v1.0: the same on Supermicro's PCIe cards, 153 min: 3.77e9 / 9,207 s / 8
    ("rnnt", "dgxa100_n192_ngc22.04_pytorch"),  # v2.0: 1,536 A100s at a global batch of 6,144, 4 samples each
    ("rnnt", "ND96amsr_A100_v4_n16_pytorch"),  # v2.0: the log's own throughput, 15,400 samples/s on 128 A100s
    ("dlrm_dcnv2", "D54U-3U"),  # v3.1, v4.0: 4 H100 PCIe cards; the log's own 1.13e6 samples/s
    ("retinanet", "hpg.dgxb200x8.n4"),  # v5.1: University of Florida's code: the log's own 7,500-8,900 images/s
    ("retinanet", "hpg.dgxb200x8.n8"),  # on 128 B200s
    ("retinanet", "hpg.dgxb200x8.n16"),
    ("dlrm_dcnv2", "dgxh100_n16_ngc23.04_merlin_hugectr"),  # v3.0: the log's own tracked_stats, 40.1e6 samples/s
    # on 128 H100s (313k each; 1.6e6 each on one node): strong scaling at a global batch of 135,168
    # v0.5: the system's entry.json (one for every benchmark of the folder) gives 36 DGX-2H and 128 DGX-1 nodes;
    # the SSD logs' own launch lines say --nnodes=8: the tree's count, as the summarizer takes it, not the run's
    ("ssd", "dgx2h_multi_ngc18.11_pytorch"),
    ("ssd", "dgx1_multi_ngc18.11_pytorch"),
}


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
                for e in view.entries if e.throughput_per_accelerator and (e.benchmark, e.system) not in SLOW
                for key in [(e.benchmark, e.throughput_unit, e.chip)]
                if not 1 / OUTLIER <= e.throughput_per_accelerator / statistics.median(by_chip[key]) <= OUTLIER]
    assert not outliers, "\n".join(outliers)
    assert {e.division for e in view.entries} <= {"closed", "open", "n/a"}
    for pair in view.accelerators:
        a = next(e for e in view.entries if f"{e.submitter}/{e.system}" in pair.a_system and e.benchmark == pair.benchmark)
        b = next(e for e in view.entries if f"{e.submitter}/{e.system}" in pair.b_system and e.benchmark == pair.benchmark)
        like = (a.form == b.form or None in (a.form, b.form)) and (a.nodes == b.nodes or None in (a.nodes, b.nodes))
        assert like or pair.unlike, f"{pair.a} vs {pair.b} on {pair.benchmark}: {a.shape} against {b.shape} unlabelled"
