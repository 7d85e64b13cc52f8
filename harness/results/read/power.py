"""Energy to train where a round published power: a benchmark folder's `power/result_<i>/node_*.txt` (and
`sw_*.txt`, the interconnect's estimate) beside its result files, MLPerf's power measurement from v4.0 on.

The figure is the result summarizer's, computed by its own functions: each run's energy
(`_compute_total_power`: every node's power readings integrated over its measurement window, scaled to
the run's time to train, times the conversion efficiency, plus the switches' estimate; joules), then the
olympic mean of the runs that count, ordered by their time to train (`_index_olympic_average`), times
the folder's scaling.json factor, as the summarizer scores a folder that has power results.

    python -m harness.report training_results_v4.0 --json r.json      # round.entries[].energy_j
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Optional, Sequence

from harness.results.read.summary import RunSummary


def has_power(folder: Optional[str]) -> bool:
    return folder is not None and (Path(folder) / "power").is_dir()


def folder_energy(folder: str, runs: Sequence[RunSummary], benchmark: str, scaling: float
                  ) -> tuple[Optional[float], Optional[str]]:
    """(the summarizer's energy score in joules, or None; a note where it cannot be computed)."""
    from mlperf_logging.result_summarizer.result_summarizer import _compute_total_power, _index_olympic_average

    kept = [r for r in runs if r.counted and r.run_start_ms is not None and r.run_stop_ms is not None]
    if not kept:
        return None, "no run counts: no energy score"
    rulesets = {r.check_ruleset for r in kept}
    if len(rulesets) != 1 or not _official(next(iter(rulesets))):
        return None, "energy needs the runs' official ruleset, and these logs have none (or several)"
    ruleset = str(next(iter(rulesets)))
    energy = []
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the summarizer prints its warnings
            for r in kept:
                ms = float(r.run_stop_ms) - float(r.run_start_ms)  # type: ignore[arg-type]
                energy.append(float(_compute_total_power(folder, r.path, ms, ruleset)))
    except Exception as err:  # a missing node file or power_measurement_start: the summarizer stops there
        return None, f"the power results cannot be read ({type(err).__name__}: {err})"
    times = [r.time_to_train_min or 0.0 for r in kept]
    index = [i for i, _ in sorted(enumerate(times), key=lambda x: x[1])]
    dropped = len([r for r in runs if r.interrupted is None]) - len(kept)
    max_dropped = 4 if benchmark == "unet3d" else 1
    if dropped > max_dropped:
        return None, f"void: {dropped} runs do not count"
    value = _index_olympic_average(energy, index, dropped, max_dropped)
    return (None, "too few runs for an olympic mean") if value is None else (value * scaling, None)


def _official(ruleset: Optional[str]) -> bool:
    return bool(ruleset) and all(part.isdigit() for part in str(ruleset).split("."))
