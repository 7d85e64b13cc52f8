"""The report as JSON and CSV (schema in docs/report.md), and a comparison of two platforms the same way.

Both carry what the text does: every group's score with its 95% interval, every comparison's interval,
verdict, runs to resolve and chances, cost and energy, and the input-bound flag. JSON is strict: a value
that is not a finite number is written as null.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from typing import Any, Optional, Sequence

from harness.results.analysis import confidence, cost
from harness.results.analysis.chances import Chances
from harness.results.analysis.speedups import Speedup
from harness.results.read.summary import tally
from harness.results.report import render
from harness.results.report.explain import describe_attribution
from harness.results.report.decision import describe_cost
from harness.results.report.explain import family_text
from harness.results.report.sections import notes, shortfall_text
from harness.results.report.verdicts import score_json
from harness.results.report.explain import describe_spread
from harness.results.report.verdicts import describe, describe_chances, describe_group, input_bound_sides

SCHEMA = "harness.report/4"
COMPARE_SCHEMA = "harness.compare/2"

RUN_FIELDS = ["path", "benchmark", "platform", "status", "scorable", "time_to_train_s", "time_to_train_min",
              "epochs_to_converge", "throughput", "seed", "world_size", "precision", "global_batch_size",
              "init_time_s", "accelerator", "energy_j", "power_w", "problems", "round", "log_format", "system",
              "framework", "throughput_unit", "throughput_derived", "final_quality", "busy", "data_wait_s",
              "data_wait_share", "data_wait_warmup_s", "input_bound"]
# a group's score, a comparison's verdict, a cost row: one row each, `kind` says which
JUDGED_FIELDS = ["subject", "reference", "runs_subject", "runs_reference", "estimator", "time_to_train",
                 "time_low", "time_high", "interval_method", "p_value", "verdict", "runs_needed", "throughput_ratio",
                 "throughput_low", "throughput_high", "throughput_p", "throughput_verdict", "epochs_ratio",
                 "epochs_low", "epochs_high", "expected_speedup", "p_observed", "shared_seed", "seed_speedup",
                 "p_seed", "text", "chances"]
GROUP_FIELDS = ["runs", "converged", "score_min", "score_low", "score_high", "throughput_low", "throughput_high",
                "energy_low", "energy_high"]
COST_FIELDS = ["rank", "rank_by", "usd_per_hour", "priced_by", "cost_usd", "cost_low", "cost_high", "per_usd"]
CSV_FIELDS = ["kind"] + RUN_FIELDS + GROUP_FIELDS + JUDGED_FIELDS + COST_FIELDS


def strict(x: Any) -> Any:
    """x with NaN and infinities as None and tuples as lists: what json.loads(parse_constant=...) accepts."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): strict(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [strict(v) for v in x]
    return x


def dumps(data: Any) -> str:
    return json.dumps(strict(data), indent=2, default=str, allow_nan=False) + "\n"


def _bound(run: Any) -> bool:
    return confidence.input_bound(run.data_wait_share)


def plain(x: Any) -> Any:
    """dataclasses.asdict, with the sentences the JSON has always carried written where the words are made:
    a verdict's (a Judgement's "text"), a score's interval (a GroupConfidence's),
    a speedup's chances (a Chances' "text"), a speedup's explanation (its "flag", where its attribution is) and
    its system family (its "family")."""
    if isinstance(x, confidence.Judgement):
        # what the interval needs is in its words ("text"); the schema's fields stay as they were
        said = {k: input_bound_sides(x) if k == "input_bound" else v
                for k, v in _fields(x, skip=("resampled", "interval_needs")).items()}
        return {**said, "text": describe(x)}
    if isinstance(x, confidence.GroupConfidence):
        return {**_fields(x, skip=("resampled", "interval_needs")), "text": describe_group(x)}
    if isinstance(x, Speedup):
        said = {"attribution": describe_attribution(x.attribution),
                "family": None if x.family is None else family_text(x.family)}
        return {("flag" if k == "attribution" else k): said[k] if k in said else v
                for k, v in _fields(x).items()}
    if isinstance(x, Chances):
        return {**_fields(x), "text": describe_chances(x)}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _fields(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a NamedTuple, as asdict keeps it
        return type(x)(*[plain(v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(plain(v) for v in x)
    if isinstance(x, dict):
        return type(x)((plain(k), plain(v)) for k, v in x.items())
    return x


def _fields(x: Any, skip: str | tuple[str, ...] = "") -> dict[str, Any]:
    skipped = (skip,) if isinstance(skip, str) else skip
    return {f.name: plain(getattr(x, f.name)) for f in dataclasses.fields(x) if f.name not in skipped}


def group_json(report: Any) -> list[dict[str, Any]]:
    out = []
    for g in report.stats:
        score = report.scores[g.key]
        spread = report.spreads.get(g.key)
        conf = report.confidence.get(g.key)
        out.append({
            "benchmark": g.key.benchmark, "platform": g.key.platform, "world_size": g.key.world,
            "precision": g.key.precision, "global_batch_size": g.key.batch, "accelerator": g.key.accelerator,
            "framework": g.key.framework, "folder": g.key.folder, "target_group": g.key.target,
            "settings_group": g.key.settings,
            "score": score_json(score),
            **{k: v for k, v in plain(g).items() if k != "key"},
            "repeated_seeds": {str(k): v for k, v in g.repeated_seeds.items()},
            "seed_spread": None if spread is None else {
                **{k: v for k, v in plain(spread).items() if k != "key"}, "note": describe_spread(spread)},
            "confidence": None if conf is None else plain(conf),
            "data_wait_share": None if conf is None else conf.data_wait_share,
            "input_bound": bool(conf and conf.input_bound),
        })
    return out


def _cost_json(rows: Sequence[cost.CostRow]) -> list[dict[str, Any]]:
    return [{"benchmark": r.key.benchmark, "platform": r.key.platform, "world_size": r.key.world,
             "precision": r.key.precision, "global_batch_size": r.key.batch, "accelerator": r.key.accelerator,
             **{k: v for k, v in plain(r).items() if k != "key"}} for r in rows]


def report_cost(report: Any) -> list[cost.CostRow]:
    return cost.cost_rows(report.stats, report.groups, report.confidence, report.prices, report.rank_by, report.scores)


def to_json(report: Any) -> dict[str, Any]:
    from harness.results.report.decision import METHOD

    return {
        "schema": SCHEMA,
        "runs": [r.to_dict() | {"final_quality": r.final_quality, "input_bound": _bound(r),
                                "short_of_target": r.short_of_target and shortfall_text(r.short_of_target)}
                 for r in report.runs],
        "groups": group_json(report),
        "speedups": [{**plain(s), "gpu_ratio": s.gpu_ratio} for s in report.speedups],
        "precision_ratios": [plain(p) for p in report.precisions],
        "throughput": {
            "runs": [plain(r) for r in report.tput_runs],
            "groups": [plain(g) for g in report.tput_groups],
            "scaling": [plain(s) for s in report.scalings],
            "precision_gains": [plain(p) for p in report.gains],
        },
        "cost": {"rank_by": report.rank_by, "prices": report.prices, "rows": _cost_json(report_cost(report))},
        "method": METHOD,
        "warnings": notes(report),
        "outcome": plain(tally(report.runs)),  # runs scored, not converged, not scorable, interrupted, by reason
        "errors": [{"path": p, "message": m} for p, m in report.errors],
    }


def _iv(iv: Optional[confidence.Interval]) -> tuple[Any, Any]:
    return (None, None) if iv is None else (iv.low, iv.high)


def judged_row(j: Optional[confidence.Judgement], odds: Any) -> dict[str, Any]:
    """The CSV cells of a comparison's judgement and chances."""
    if j is None:
        return {}
    row = {"subject": j.subject, "reference": j.reference, "runs_subject": j.runs[0], "runs_reference": j.runs[1],
           "estimator": j.estimator, "time_to_train": j.time_to_train, "p_value": j.p_value, "verdict": j.verdict,
           "runs_needed": j.runs_needed, "throughput_ratio": j.throughput, "throughput_p": j.throughput_p,
           "throughput_verdict": j.throughput_verdict, "epochs_ratio": j.epochs_ratio, "text": describe(j),
           "interval_method": j.time_interval.method if j.time_interval else "",
           "input_bound": bool(j.input_bound)}
    row["time_low"], row["time_high"] = _iv(j.time_interval)
    row["throughput_low"], row["throughput_high"] = _iv(j.throughput_interval)
    row["epochs_low"], row["epochs_high"] = _iv(j.epochs_interval)
    if odds is not None:
        row.update({"expected_speedup": odds.expected, "p_observed": odds.p_observed, "shared_seed": odds.seed,
                    "seed_speedup": odds.seed_speedup, "p_seed": odds.p_seed, "chances": describe_chances(odds)})
    return row


def _cost_row(r: cost.CostRow, rank_by: str) -> dict[str, Any]:
    lo, hi = _iv(r.cost_interval)
    return {"kind": "cost", "benchmark": r.key.benchmark, "platform": r.key.platform, "world_size": r.key.world,
            "precision": r.key.precision, "global_batch_size": r.key.batch, "runs": r.runs,
            "score_min": None if r.void else r.minutes, "time_to_train": r.minutes,
            "rank": r.rank, "rank_by": rank_by, "usd_per_hour": r.usd_per_hour, "priced_by": r.priced_by,
            "cost_usd": r.cost, "cost_low": lo, "cost_high": hi, "per_usd": r.samples_per_usd,
            "energy_j": None if r.energy_kj is None else r.energy_kj * 1000, "input_bound": r.input_bound,
            "subject": r.side}


def to_csv(report: Any) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for r in report.runs:
        row = r.to_dict()
        row["problems"] = "; ".join(r.problems)
        row["final_quality"] = render.quality(r.final_quality) if r.final_quality is not None else ""
        writer.writerow(strict({**row, "kind": "run", "input_bound": _bound(r)}))
    for t in report.tput_runs:  # mode=throughput runs: one row each, their figure in `throughput`
        writer.writerow({"kind": "throughput_run", "path": t.path, "benchmark": t.workload, "platform": t.platform,
                         "status": t.status, "scorable": t.status == "success", "throughput": t.throughput,
                         "world_size": t.world_size, "precision": t.precision, "global_batch_size": t.global_batch_size,
                         "accelerator": t.accelerator, "throughput_unit": t.unit, "problems": t.reason or ""})
    for g in report.stats:
        conf = report.confidence.get(g.key)
        if conf is None:
            continue
        row = {"kind": "group", "benchmark": g.key.benchmark, "platform": g.key.platform, "world_size": g.key.world,
               "precision": g.key.precision, "global_batch_size": g.key.batch, "accelerator": g.key.accelerator,
               "framework": g.key.framework, "runs": g.runs, "converged": g.converged,
               "score_min": report.scores[g.key].minutes, "time_to_train": conf.minutes, "estimator": conf.estimator, "interval_method": conf.interval.method if conf.interval else "",
               "throughput": conf.throughput, "throughput_unit": g.throughput_unit, "energy_j": conf.energy_j,
               "data_wait_share": conf.data_wait_share, "input_bound": conf.input_bound, "text": describe_group(conf)}
        row["time_low"], row["time_high"] = _iv(conf.interval)
        if report.scores[g.key].minutes is not None:  # the interval is the score's where there is one
            row["score_low"], row["score_high"] = row["time_low"], row["time_high"]
        row["throughput_low"], row["throughput_high"] = _iv(conf.throughput_interval)
        row["energy_low"], row["energy_high"] = _iv(conf.energy_interval)
        writer.writerow(strict(row))
    for s in report.speedups:
        writer.writerow(strict({"kind": "speedup", "benchmark": s.benchmark, "platform": s.system,
                                "precision": s.precision, "world_size": s.world,
                                **judged_row(s.confidence, s.chances)}))
    for p in report.precisions:
        writer.writerow(strict({"kind": "precision", "benchmark": p.benchmark, "platform": p.system,
                                "precision": p.precision, "world_size": p.world,
                                **judged_row(p.confidence, p.chances)}))
    for c in report_cost(report):
        writer.writerow(strict(_cost_row(c, report.rank_by)))
    return buf.getvalue()


def compare_json(c: Any) -> dict[str, Any]:
    from harness.results.analysis.comparison import cost_rows
    from harness.results.report.comparison_render import unpaired_line
    from harness.results.report.decision import METHOD

    return {
        "schema": COMPARE_SCHEMA, "a": c.a_paths, "b": c.b_paths,
        "pairs": [{**plain(p), "a_world": m.a_world, "b_world": m.b_world, "gpus": m.gpus,
                   "confidence": None if m.confidence is None else plain(m.confidence),
                   "chances": None if m.chances is None else plain(m.chances),
                   "a_usd_per_hour": m.a_usd_per_hour, "b_usd_per_hour": m.b_usd_per_hour,
                   "cost": describe_cost(m.cost),
                   "input_bound": bool(m.confidence and m.confidence.input_bound)}
                  for p, m in zip(c.pairs, c.matched)],
        "geomeans": [plain(m) for m in c.means],
        "throughput_pairs": [plain(p) for p in c.tput_pairs], "throughput_geomeans": [plain(m) for m in c.tput_means],
        "cost": {"rank_by": c.rank_by, "prices": c.prices, "rows": _cost_json(cost_rows(c)) if c.pairs else []},
        "method": METHOD,
        "unpaired": [unpaired_line(u) for u in c.unpaired],
    }


COMPARE_FIELDS = ["kind", "name", "category", "gpus", "a_gpus", "b_gpus", "precision", "a", "b", "time_to_train",
                  "throughput", "epochs_ratio", "rest"] + JUDGED_FIELDS[4:] + ["input_bound", "cost"]


def compare_csv(c: Any) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COMPARE_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for p, m in zip(c.pairs, c.matched):
        judged = judged_row(m.confidence, m.chances)
        judged.pop("time_to_train", None)
        judged.pop("epochs_ratio", None)
        writer.writerow(strict({**judged, "kind": "time_to_train", "name": p.benchmark, "category": p.category,
                                "gpus": m.gpus, "a_gpus": m.a_world, "b_gpus": m.b_world, "precision": p.precision,
                                "a": p.a, "b": p.b, "time_to_train": p.time_to_train, "throughput": p.throughput,
                                "epochs_ratio": p.epochs_ratio, "rest": p.rest,
                                "cost": describe_cost(m.cost) or ""}))
    for t in c.tput_pairs:
        writer.writerow({"kind": "throughput", "name": t.workload, "category": t.category, "gpus": t.world,
                         "a_gpus": t.world, "b_gpus": t.world, "precision": t.precision, "a": t.a, "b": t.b,
                         "throughput": t.ratio})
    for kind, means in (("geomean", c.means), ("throughput_geomean", c.tput_means)):
        for name, values in _by_category(means):
            writer.writerow(strict({"kind": kind, "name": name, "category": name,
                                    "time_to_train": values.get("time_to_train"),
                                    "throughput": values.get("throughput") if kind == "geomean" else values.get("ratio"),
                                    "epochs_ratio": values.get("epochs_ratio")}))
    return buf.getvalue()


def _by_category(means: Sequence[Any]) -> list[tuple[str, dict]]:
    out: dict[str, dict] = {}
    for m in means:
        out.setdefault(m.category, {})[m.what] = m.value
    return list(out.items())
