"""Speedups that explain themselves: the GNMT-on-T4 case, where 4 GPUs were 10.4x faster than one
because they needed 4 epochs instead of 12, while throughput scaled about linearly."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.report import build, main
from harness.results.analysis.speedups import SHORTFALL, SUPERLINEAR, precision_ratios

EPOCHS = {1: 12, 2: 7, 3: 5, 4: 4}
THROUGHPUT = {1: 100_000.0, 2: 195_000.0, 3: 285_000.0, 4: 347_000.0}  # 3.47x at 4 GPUs
EPOCH_SAMPLES = 3_000_000


def _line(key, value=None, t=0, event="POINT_IN_TIME", **meta):
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": t, "event_type": event, "key": key,
                                     "value": value, "metadata": {"file": "x.py", "lineno": 1, **meta}}) + "\n"


def write_run(path: Path, gpus: int, seed: int, epochs: int, throughput: float, precision: str = "amp",
              platform: str = "T4", tracked: bool = True) -> None:
    t = 1_600_000_000_000
    lines = [_line("submission_benchmark", "gnmt", t), _line("submission_platform", f"{gpus}x{platform}", t),
             _line("number_of_nodes", 1, t), _line("accelerators_per_node", gpus, t),
             _line("precision", precision, t), _line("global_batch_size", 256 * gpus, t), _line("seed", seed, t),
             _line("init_start", None, t, "INTERVAL_START"), _line("init_stop", None, t + 30_000, "INTERVAL_END"),
             _line("run_start", None, t + 30_000, "INTERVAL_START")]
    now = t + 30_000
    seconds = EPOCH_SAMPLES / throughput
    for e in range(1, epochs + 1):
        now += int(seconds * 1000)
        if tracked:
            lines.append(_line("tracked_stats", {"samples": EPOCH_SAMPLES, "seconds": seconds}, now, epoch_num=e))
        lines.append(_line("eval_accuracy", 0.24 * e / epochs, now, epoch_num=e))
    lines.append(_line("run_stop", None, now, "INTERVAL_END", status="success"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines))


@pytest.fixture()
def t4_runs(tmp_path):
    for gpus, epochs in EPOCHS.items():
        for seed in range(5):
            # one seed a touch slower or faster, as real runs are; epochs as the T4 runs needed them
            write_run(tmp_path / f"g{gpus}" / f"s{seed}" / "mlperf.log", gpus, seed, epochs,
                      THROUGHPUT[gpus] * (1 + 0.01 * (seed - 2)))
    return tmp_path


def test_gnmt_on_t4_speedup_is_throughput_times_epochs_and_flagged(t4_runs):
    report = build([str(t4_runs)])
    (s4,) = [s for s in report.speedups if s.world == 4]
    assert s4.baseline_world == 1
    assert s4.time_to_train == pytest.approx(10.41, rel=0.01)
    assert s4.throughput == pytest.approx(3.47, rel=0.01) and not s4.throughput_implied
    assert s4.epochs_ratio == pytest.approx(3.0)
    assert s4.time_to_train == pytest.approx(s4.throughput * s4.epochs_ratio * s4.rest)
    assert s4.efficiency == pytest.approx(3.47 / 4, rel=0.01)
    a = s4.attribution
    assert a is not None and a.kind == SUPERLINEAR and a.gap == pytest.approx(10.41 / 4, rel=0.01)
    assert a.cause == "convergence" and a.epochs == (12, 4)
    assert [(f.what, f.gain) for f in a.factors] == [("throughput", False), ("epochs", True)]
    assert s4.rcp is not None and not s4.rcp.passed  # 4 epochs is significantly fewer than 12
    s2 = next(s for s in report.speedups if s.world == 2)
    assert s2.epochs_ratio == pytest.approx(12 / 7)


def test_report_cli_writes_every_output_and_plot(t4_runs, tmp_path, capsys):
    out = tmp_path / "report"
    code = main([str(t4_runs), "--md", str(out / "r.md"), "--json", str(out / "r.json"), "--csv", str(out / "r.csv"),
                 "--plots", str(out / "plots")])
    assert code == 0
    text = capsys.readouterr().out
    assert "superlinear: 10.4x faster on 4x the GPUs" in text
    assert "4 vs 1" in text
    md = (out / "r.md").read_text()
    assert md.startswith("## Runs") and "| gnmt | 4xT4 | 4 | amp | 1024 |" in md
    data = json.loads((out / "r.json").read_text())
    assert data["schema"] == "harness.report/4" and len(data["groups"]) == 4
    assert {round(s["time_to_train"], 1) for s in data["speedups"]} >= {10.4}
    pngs = sorted(p.name for p in (out / "plots").iterdir())
    assert pngs == ["epochs.png", "quality.png", "speedup.png", "time_to_train.png"]
    assert all((out / "plots" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_precision_pairs_compare_throughput_with_time_to_train(tmp_path):
    for seed in range(3):
        write_run(tmp_path / "fp32" / f"{seed}" / "mlperf.log", 1, seed, 12, 100_000.0, "fp32")
        write_run(tmp_path / "amp" / f"{seed}" / "mlperf.log", 1, seed, 13, 250_000.0, "amp")
    report = build([str(tmp_path)])
    (ratio,) = report.precisions
    assert ratio.precision == "amp" and ratio.baseline_precision == "fp32"
    assert ratio.throughput == pytest.approx(2.5)
    assert ratio.time_to_train == pytest.approx(2.5 * 12 / 13, rel=1e-3)  # amp needed an epoch more
    assert precision_ratios(report.stats, {}, baseline="bf16") == []


def test_logs_without_throughput_imply_it_from_time_and_epochs(tmp_path):
    for gpus in (1, 2):
        for seed in range(3):
            write_run(tmp_path / f"{gpus}" / f"{seed}" / "mlperf.log", gpus, seed, EPOCHS[gpus], THROUGHPUT[gpus],
                      tracked=False)
    (s2,) = build([str(tmp_path)]).speedups
    assert s2.throughput_implied and s2.rest is None
    assert s2.throughput == pytest.approx(s2.time_to_train / s2.epochs_ratio)
    assert s2.throughput == pytest.approx(1.95, rel=0.01)


def test_official_logs_without_a_world_size_are_not_paired(fixtures_dir):
    assert build([str(fixtures_dir / "nvidia_dgx1")]).speedups == []


def test_a_time_to_train_far_below_throughput_names_each_cost(tmp_path):
    # 2 GPUs double throughput but need 6 epochs instead of 4: time to train gains only 1.33x
    for seed in range(5):
        write_run(tmp_path / "g1" / f"s{seed}" / "mlperf.log", 1, seed, 4, 1000.0)
        write_run(tmp_path / "g2" / f"s{seed}" / "mlperf.log", 2, seed, 6, 2000.0)
    (s2,) = build([str(tmp_path)]).speedups
    assert s2.throughput == pytest.approx(2.0) and s2.epochs_ratio == pytest.approx(4 / 6)
    a = s2.attribution
    assert a is not None and a.kind == SHORTFALL and a.epochs == (4, 6) and a.epoch_counts == {"6": 5}
    ((what, ratio, share, gain),) = [(f.what, f.ratio, f.share, f.gain) for f in a.factors]
    assert (what, gain) == ("epochs", False) and ratio == pytest.approx(4 / 6) and share == pytest.approx(1.0)


def test_superlinear_from_throughput_names_hardware_not_convergence(tmp_path):
    """Issue 14 item 2: 2 ranks needed MORE epochs (2 -> 3) but had 7.1x the throughput; the old flag
    credited 'needing fewer epochs gave 0.67x ... convergence, not hardware'."""
    for seed in range(5):
        write_run(tmp_path / "g1" / f"s{seed}" / "mlperf.log", 1, seed, 2, 1000.0)
        write_run(tmp_path / "g2" / f"s{seed}" / "mlperf.log", 2, seed, 3, 7100.0)
    (s2,) = build([str(tmp_path)]).speedups
    assert s2.time_to_train == pytest.approx(7.1 * 2 / 3, rel=1e-3)
    a = s2.attribution
    assert a is not None and a.kind == SUPERLINEAR and a.cause == "hardware"
    assert [(f.what, f.gain) for f in a.factors] == [("throughput", True), ("epochs", False)]
    assert a.factors[0].ratio == pytest.approx(3.55, rel=1e-3) and a.factors[1].ratio == pytest.approx(2 / 3)


def test_superlinear_from_both_gives_each_its_share(tmp_path):
    for seed in range(5):
        write_run(tmp_path / "g1" / f"s{seed}" / "mlperf.log", 1, seed, 4, 1000.0)
        write_run(tmp_path / "g2" / f"s{seed}" / "mlperf.log", 2, seed, 2, 3000.0)
    (s2,) = build([str(tmp_path)]).speedups
    # 6x on 2x: 3x beyond linear = 1.5x throughput beyond the GPU ratio x 2x fewer epochs
    a = s2.attribution
    assert a is not None and a.cause == "both" and a.gap == pytest.approx(3.0, rel=1e-3)
    shares = {f.what: f.share for f in a.factors}
    assert shares == {"throughput": pytest.approx(0.369, abs=1e-3), "epochs": pytest.approx(0.631, abs=1e-3)}
