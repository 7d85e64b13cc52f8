"""Cost in words and cells (harness.results.report.decision): what the report's cost table and a comparison's
cost line say, open interval bounds included."""
from __future__ import annotations

from harness.results.analysis.confidence import Interval
from harness.results.analysis.cost import CostRow, compare_cost
from harness.results.analysis.stats import GroupKey
from harness.results.report.decision import cost_notes, cost_table, describe_cost


def test_a_comparison_s_cost_line_reads_the_price_ratio_and_the_speedup_s_interval():
    said = describe_cost(compare_cost(1.5, 0.5, 1.25, Interval(1.0, 1.5, "BCa bootstrap")))
    assert said == ("A costs 3.00x B per hour and is 1.25x as fast (95% interval 1.00x-1.50x): a run costs 2.40x "
                    "as much on A (2.00x-3.00x)")
    open_ended = describe_cost(compare_cost(1.5, 0.5, 1.25, Interval(None, None, "percentile bootstrap")))
    assert open_ended is not None and open_ended.endswith("a run costs 2.40x as much on A (0x-unbounded)")
    assert describe_cost(compare_cost(1.5, 0.5, 1.25, None)) == ("A costs 3.00x B per hour and is 1.25x as fast: a "
                                                                "run costs 2.40x as much on A")
    assert describe_cost(compare_cost(None, 0.5, 1.25, None)) is None  # a side unpriced: no line


def test_the_cost_table_writes_money_per_run_and_says_when_no_price_matched():
    key = GroupKey("ncf", "2xCPU", 2, "fp32", 1024)
    row = CostRow(key, 5, 12.0, Interval(11.0, 13.0, "BCa bootstrap"), 0.1, "CPU x 2", 0.02,
                  Interval(0.018, None, "BCa bootstrap"), 123456.0, "samples/s", None, None, False, rank=1)
    header, (cells,) = cost_table([row], "cost")
    got = dict(zip(header, cells))
    assert got["rank (cost)"] == "1" and got["cost/run"] == "$0.0200" and got["cost 95% interval"] == "$0.0180-unbounded"
    assert got["per $"] == "123,456 samples" and got["energy kJ/run"] == "n/a"
    assert cost_notes([row], {"T4": 0.35}) == [
        "energy is n/a where result.json has no NVML energy (CPU runs, official logs)"]
    unpriced = CostRow(key, 5, 12.0, None, None, "", None, None, None, None, 1.0, None, False)
    assert cost_notes([unpriced], {"T4": 0.35}) == [
        "no --price matched a platform, system or accelerator (given: T4)"]
