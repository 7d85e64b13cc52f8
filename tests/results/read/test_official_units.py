"""Convergence in the unit the RCP checker reads it, for every benchmark of every ruleset the installed
mlperf-logging ships RCPs for (the list is read from the package): the harness's reading of a log equals
rcp_checker.read_submission_file's on the same file, the unit is named for the benchmark (never a
default), and it fits the package's own reference points (a count of samples or tokens is at least one
batch; an epoch or step count is a few thousand at most). gpt3's convergence, past 1e9 tokens, is read."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlperf_logging.rcp_checker import rcp_checker

from harness.results.read import official
from harness.results.read.checking import checked_file
from tests.results.roundlogs import T0, mllog

RCP_DIR = Path(rcp_checker.__file__).parent
SHIPPED = sorted((d.name.removeprefix("training_"), f.stem.removeprefix("rcps_"))
                 for d in RCP_DIR.glob("training_*") for f in d.glob("rcps_*.json"))


def _reference(ruleset: str, benchmark: str) -> tuple[int, float]:
    """(batch size, convergence) of the package's first reference point for the benchmark."""
    record = next(iter(json.loads((RCP_DIR / f"training_{ruleset}" / f"rcps_{benchmark}.json").read_text()).values()))
    return record["BS"], (record.get("samples to converge") or record["Epochs to converge"])[0]


def _log(benchmark: str, ruleset: str, batch: int, value: float) -> str:
    lines = [mllog("submission_benchmark", benchmark), mllog("global_batch_size", batch),
             mllog("run_start", None, T0 + 1, "INTERVAL_START")]
    for i, x in enumerate((value / 2, value), start=1):
        t = T0 + 1000 * i
        if benchmark == "stable_diffusion":
            unit = "step_num" if ruleset == "3.1.0" else "samples_count"
            fid, clip = (120.0, 0.1) if i == 1 else (80.0, 0.2)
            lines += [mllog("eval_accuracy", fid, t, metric="FID", **{unit: x}),
                      mllog("eval_accuracy", clip, t, metric="CLIP", **{unit: x})]
        elif benchmark in official.SAMPLES_BENCHMARKS:
            lines.append(mllog("eval_accuracy", 0.5, t, epoch_num=i, samples_count=x))
        else:
            lines.append(mllog("eval_accuracy", 0.5, t, epoch_num=x))
    lines.append(mllog("run_stop", None, T0 + 5000, "INTERVAL_END", status="success"))
    return "".join(lines)


def test_the_list_is_the_package_s():
    assert len(SHIPPED) > 50 and ("4.1.0", "gpt3") in SHIPPED and ("3.1.0", "gpt3") in SHIPPED


@pytest.mark.parametrize("ruleset, benchmark", SHIPPED)
def test_convergence_is_read_in_the_rcp_checker_s_unit(tmp_path, ruleset, benchmark):
    named = official.EPOCH_NUM_COUNTS.keys() | official.SAMPLES_BENCHMARKS | {"stable_diffusion"}
    assert benchmark in named, f"{benchmark} ({ruleset}): name what its convergence figure counts"
    batch, value = _reference(ruleset, benchmark)
    unit = official.convergence_unit(benchmark, ruleset)
    if unit in ("samples", "tokens"):
        assert value >= batch, (unit, value, batch)  # whole batches of samples (of tokens) consumed
    else:
        assert unit in ("epochs", "steps") and value < 10_000, (unit, value)
    major, minor, _ = ruleset.split(".")
    path = tmp_path / f"training_results_v{major}.{minor}" / "result_0.txt"
    path.parent.mkdir()
    path.write_text(_log(benchmark, ruleset, batch, value))
    with official.quiet_root():
        not_converged, want, _, _ = rcp_checker.read_submission_file(str(path), ruleset, False)
    assert not not_converged and want == value
    run = checked_file(path)
    assert run.epochs_to_converge == value and run.epoch_unit == unit, (run.epochs_to_converge, run.epoch_unit)
