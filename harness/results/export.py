"""The report as JSON and CSV (schema in docs/report.md), and a comparison of two platforms the same way."""
from __future__ import annotations

import csv
import io
from dataclasses import asdict
from typing import Any, Sequence

from harness.results import render
from harness.results.summary import tally

SCHEMA = "harness.report/3"
COMPARE_SCHEMA = "harness.compare/1"

CSV_FIELDS = ["path", "benchmark", "platform", "status", "scorable", "time_to_train_s", "time_to_train_min",
              "epochs_to_converge", "throughput", "seed", "world_size", "precision", "global_batch_size",
              "init_time_s", "accelerator", "energy_j", "power_w", "problems", "round", "log_format", "system",
              "framework", "throughput_unit", "throughput_derived", "final_quality", "busy"]


def group_json(report: Any) -> list[dict[str, Any]]:
    out = []
    for g in report.stats:
        score = report.scores[g.key]
        spread = report.spreads.get(g.key)
        out.append({
            "benchmark": g.key.benchmark, "platform": g.key.platform, "world_size": g.key.world,
            "precision": g.key.precision, "global_batch_size": g.key.batch, "accelerator": g.key.accelerator,
            "framework": g.key.framework, "folder": g.key.folder,
            "score": {**asdict(score), "count_ok": score.count_ok},
            **{k: v for k, v in asdict(g).items() if k != "key"},
            "repeated_seeds": {str(k): v for k, v in g.repeated_seeds.items()},
            "seed_spread": None if spread is None else {
                **{k: v for k, v in asdict(spread).items() if k != "key"}, "note": spread.describe()},
        })
    return out


def to_json(report: Any) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "runs": [r.to_dict() | {"final_quality": r.final_quality} for r in report.runs],
        "groups": group_json(report),
        "speedups": [{**asdict(s), "gpu_ratio": s.gpu_ratio} for s in report.speedups],
        "precision_ratios": [asdict(p) for p in report.precisions],
        "throughput": {
            "runs": [asdict(r) for r in report.tput_runs],
            "groups": [asdict(g) for g in report.tput_groups],
            "scaling": [asdict(s) for s in report.scalings],
            "precision_gains": [asdict(p) for p in report.gains],
        },
        "warnings": report.warnings,
        "outcome": asdict(tally(report.runs)),  # runs scored, not converged, not scorable, interrupted, by reason
        "errors": [{"path": p, "message": m} for p, m in report.errors],
    }


def to_csv(report: Any) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for r in report.runs:
        row = r.to_dict()
        row["problems"] = "; ".join(r.problems)
        row["final_quality"] = render.quality(r.final_quality) if r.final_quality is not None else ""
        writer.writerow(row)
    for t in report.tput_runs:  # mode=throughput runs: one row each, their figure in `throughput`
        writer.writerow({"path": t.path, "benchmark": t.workload, "platform": t.platform, "status": t.status,
                         "scorable": t.status == "success", "throughput": t.throughput, "world_size": t.world_size,
                         "precision": t.precision, "global_batch_size": t.global_batch_size,
                         "accelerator": t.accelerator, "throughput_unit": t.unit, "problems": t.reason or ""})
    return buf.getvalue()


def compare_json(c: Any) -> dict[str, Any]:
    return {
        "schema": COMPARE_SCHEMA, "a": c.a_paths, "b": c.b_paths,
        "pairs": [asdict(p) for p in c.pairs], "geomeans": [asdict(m) for m in c.means],
        "throughput_pairs": [asdict(p) for p in c.tput_pairs], "throughput_geomeans": [asdict(m) for m in c.tput_means],
        "unpaired": c.unpaired,
    }


def compare_csv(c: Any) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["kind", "name", "category", "gpus", "precision", "a", "b", "time_to_train", "throughput",
                     "epochs_ratio", "rest"])
    for p in c.pairs:
        writer.writerow(["time_to_train", p.benchmark, p.category, p.world, p.precision, p.a, p.b, p.time_to_train,
                         p.throughput, p.epochs_ratio, p.rest])
    for p in c.tput_pairs:
        writer.writerow(["throughput", p.workload, p.category, p.world, p.precision, p.a, p.b, "", p.ratio, "", ""])
    for kind, means in (("geomean", c.means), ("throughput_geomean", c.tput_means)):
        for m in _by_category(means):
            writer.writerow([kind, m[0], m[0], "", "", "", "", m[1].get("time_to_train"), m[1].get("throughput")
                             if kind == "geomean" else m[1].get("ratio"), m[1].get("epochs_ratio"), ""])
    return buf.getvalue()


def _by_category(means: Sequence[Any]) -> list[tuple[str, dict]]:
    out: dict[str, dict] = {}
    for m in means:
        out.setdefault(m.category, {})[m.what] = m.value
    return list(out.items())
