"""Where a speedup comes from, as chances: MLPerf GNMT on T4s, where seed 2 trained 10.4x faster on 4 GPUs
than on one because it needed 12, 7, 5 and 4 epochs at 1, 2, 3 and 4 GPUs while throughput scaled 3.47x.
With the other seeds' epochs beside it, the report must read "expected about 3x; a 10.4x result happens
with probability p", not as a hardware result."""
from __future__ import annotations

import json

import pytest

from harness.report import build, main
from harness.results.analysis.chances import chances
from harness.results.read.summary import RunSummary
from tests.results.analysis.test_speedups import THROUGHPUT, write_run

# epochs to converge per seed at each GPU count; seed 2 is the published 12/7/5/4 case
T4_EPOCHS = {1: {1: 4, 2: 12, 3: 4, 4: 5, 5: 4},
             2: {1: 5, 2: 7, 3: 5, 4: 6, 5: 5},
             3: {1: 6, 2: 5, 3: 6, 4: 7, 5: 6},
             4: {1: 7, 2: 4, 3: 7, 4: 8, 5: 7}}


@pytest.fixture()
def t4_seeds(tmp_path):
    for gpus, seeds in T4_EPOCHS.items():
        for seed, epochs in seeds.items():
            write_run(tmp_path / f"g{gpus}" / f"s{seed}" / "mlperf.log", gpus, seed, epochs, THROUGHPUT[gpus])
    return tmp_path


def test_the_t4_case_reads_as_expected_3x_and_a_10x_result_with_its_probability(t4_seeds, capsys):
    report = build([str(t4_seeds)])
    (s4,) = [s for s in report.speedups if s.world == 4]
    c = s4.chances
    assert c is not None and (c.subject, c.reference) == ("4 GPUs", "1 GPU")
    # time per epoch is 3.47x (the throughput); expected epochs 5.8 on one GPU and 6.6 on four
    assert c.per_epoch == pytest.approx(3.47, rel=1e-3)
    assert c.expected_epochs == pytest.approx((6.6, 5.8))
    assert c.expected == pytest.approx(3.47 * 5.8 / 6.6, rel=1e-3)
    # seed 2 is the shared seed farthest from expected: 12 epochs against 4, 10.4x; only that pair of
    # epoch counts (one run in five on each side) reaches it: 1/5 x 1/5
    assert c.seed == 2 and c.seed_epochs == (12, 4)
    assert c.seed_speedup == pytest.approx(10.41, rel=1e-3)
    assert c.p_seed == pytest.approx(0.04)
    # in words (harness.results.report.verdicts), the same in every output
    main([str(t4_seeds), "--json", str(t4_seeds / "r.json")])
    out = capsys.readouterr().out
    assert "4 vs 1: chances: expected about 3.0x" in out and "probability 4.0%" in out
    data = json.loads((t4_seeds / "r.json").read_text())
    (j4,) = [s for s in data["speedups"] if s["world"] == 4]
    assert j4["chances"]["p_seed"] == pytest.approx(0.04) and j4["chances"]["seed"] == 2
    assert "a 10.4x result (seed 2: 12 -> 4 epochs) happens with probability 4.0% under the observed epoch " \
           "spreads" in j4["chances"]["text"]


def test_one_run_against_one_sums_the_pairs_of_epoch_counts_that_reach_the_speedup():
    def run(seed, epochs, minutes):
        return RunSummary(path=f"r{seed}", benchmark="x", status="success", seed=seed, epochs_to_converge=epochs,
                          time_to_train_min=minutes, evals=[(epochs, 1.0)])

    ref = [run(1, 2, 20.0), run(2, 4, 40.0), run(3, 2, 20.0), run(4, 2, 20.0)]  # 2 epochs: 3/4, 4 epochs: 1/4
    sub = [run(1, 2, 10.0), run(2, 2, 10.0), run(3, 3, 15.0)]  # 2 epochs: 2/3, 3 epochs: 1/3
    failed = RunSummary(path="f", benchmark="x", status="aborted", seed=9)
    c = chances("B", sub + [failed], "A", ref, observed=2.0)
    assert c is not None and c.left_out == 1
    assert c.expected == pytest.approx(25.0 / (35.0 / 3))
    # speedups: 20/10 = 2 (3/4 x 2/3), 20/15 = 1.33 (3/4 x 1/3), 40/10 = 4 (1/4 x 2/3), 40/15 = 2.67 (1/12)
    assert c.seed == 2 and c.seed_speedup == pytest.approx(4.0)
    assert c.p_seed == pytest.approx(2 / 12)
    assert c.p_observed == pytest.approx(3 / 4)  # at most 2.0x, below the expected 2.14x: 1/2 + 1/4
    assert not c.as_expected  # 2.0x against 2.14x: 7% off, beyond the 5% that cannot be told apart
    assert chances("B", [failed], "A", ref, 2.0) is None
