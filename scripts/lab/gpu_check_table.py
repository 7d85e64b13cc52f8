"""The GPU check's table: each row of a check (scripts/lab/gpu_check.py's check.json) beside the recorded
baseline (scripts/lab/gpu_check_baseline.json), marked when it is more than 5% slower, failed or did
not run. The baseline changes only on purpose, from a check's own file, with its machine and date. The file
holds one baseline per GPU model (`by_gpu`, keyed by torch's device name): a check is held to its own GPU's,
and on a GPU with none recorded its rows are new, not compared against another card's figures:

    python3 scripts/lab/gpu_check_table.py OUT/check.json                  # OUT/check.md, and the table printed
    python3 scripts/lab/gpu_check_table.py A/check.json B/check.json       # a check made in two calls, as one
    python3 scripts/lab/gpu_check_table.py OUT/check.json --record         # this check becomes the baseline

A row is {"key", "group", "label", "status": "ok" | "failed" | "not run" | "too large", "value", "unit", "compare",
"note", "tolerance"?}: `compare` says how its value is held to the baseline: "higher" (a rate: more than
5% under the baseline is slower), "lower" (seconds), "host" (a rate the host's CPUs set, as a data pipeline
whose loader alone is slower than the step: shown beside the baseline, marked host-bound, not held to it:
the lent host changes from call to call), or "none" (a figure shown for reading only, such as a time to
train measured beside the tests on a shared GPU). `tolerance`: the fraction a row is held to instead of
5%, for a figure measured to move more than that between processes on one machine (gpu_check_rows.SPREAD).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # the checkout: harness/usage.py, the usage under python -OO

from harness.usage import module_doc  # noqa: E402

BASELINE = HERE / "gpu_check_baseline.json"
TOLERANCE = 0.05  # a figure more than this much worse than its baseline is marked slower

OK, SLOWER, FAILED, NOT_RUN, NEW, FASTER, HOST = "ok", "SLOWER", "FAILED", "NOT RUN", "new", "faster", "host-bound"
TOO_LARGE = "too large for this GPU"  # a cell that needs more GPU memory than the card has: no loss, nothing to hold


def verdict(row: dict[str, Any], base: Optional[dict[str, Any]]) -> tuple[str, Optional[float]]:
    """(the row's mark, its value over the baseline's) for one row and its baseline row (None: none recorded)."""
    if row.get("status") == "failed":
        return FAILED, None
    if row.get("status") == "too large":
        return TOO_LARGE, None
    if row.get("status") != "ok":
        return NOT_RUN, None
    value, compare = row.get("value"), row.get("compare", "none")
    if base is None or base.get("value") in (None, 0) or value is None:
        return (NEW if base is None else OK), None
    ratio = float(value) / float(base["value"])
    tolerance = float(row.get("tolerance", TOLERANCE))
    if compare == "higher":
        return (SLOWER if ratio < 1 - tolerance else FASTER if ratio > 1 + tolerance else OK), ratio
    if compare == "lower":
        return (SLOWER if ratio > 1 + tolerance else FASTER if ratio < 1 - tolerance else OK), ratio
    return (HOST if compare == "host" else OK), ratio


def baselines(data: Optional[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The file's baseline of each GPU model, by its device name (a file of one machine's rows, as written
    before `by_gpu`, is that machine's)."""
    if not data:
        return {}
    if "by_gpu" in data:
        return dict(data["by_gpu"])
    return {str(data.get("machine", {}).get("gpu", "?")): data}


def _figure(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and abs(value) < 10:
        text = f"{value:.3f}"
    else:
        text = f"{value:,.0f}"
    return f"{text} {unit}".strip()


def table(check: dict[str, Any], recorded_file: Optional[dict[str, Any]],
          partial: bool = False) -> tuple[str, dict[str, int]]:
    """The Markdown page and the count of rows by mark, against the baseline of the check's GPU in
    `recorded_file` (the baseline file's content). `partial`: a part of a check (its phases alone), whose
    missing baseline rows belong to the other part."""
    meta = check.get("machine", {})
    every = baselines(recorded_file)
    baseline = every.get(str(meta.get("gpu", "?")))
    if baseline is None:
        others = ", ".join(f"{gpu} ({b.get('date', '-')})" for gpu, b in every.items()) or "none"
        about = (f"Baseline: none recorded for {meta.get('gpu', '?')} (recorded: {others}): every row is new, held "
                 "to nothing; another card's figures are no baseline (`gpu_check.py --before` measures the tree "
                 "before a change in the same call, and `--record` makes this check this GPU's baseline).")
    else:
        about = (f"Baseline: {baseline.get('machine', {}).get('gpu')} on {baseline.get('date', '-')} (tree "
                 f"{baseline.get('commit', '-')}). A figure more than {TOLERANCE:.0%} worse than its baseline (or than "
                 "the row's own tolerance) is SLOWER; times to train of the embedded presets ran beside the GPU tests "
                 "and are shown, not compared.")
    rows_base = {r["key"]: r for r in (baseline or {}).get("rows", [])}
    seen = {r["key"] for r in check["rows"]}
    lines = [f"# GPU check {check.get('date', '?')}", "",
             f"Machine: {meta.get('gpu', '?')}, driver {meta.get('driver', '?')}, torch {meta.get('torch', '?')}, "
             f"CUDA {meta.get('cuda', '?')}, {meta.get('cpus', '?')} CPUs; tree {check.get('commit', '?')}; "
             f"{check.get('wall_s', 0):.0f} s.", about, "",
             "| group | row | figure | baseline | / baseline | mark | note |", "|---|---|---|---|---|---|---|"]
    counts: dict[str, int] = {}
    for row in check["rows"]:
        base = rows_base.get(row["key"])
        mark, ratio = verdict(row, base)
        counts[mark] = counts.get(mark, 0) + 1
        shown = f"**{mark}**" if mark in (SLOWER, FAILED, NOT_RUN) else mark
        older = f" (baseline recorded {base['recorded']})" if base and base.get("recorded") else ""
        older += f" (held to {row['tolerance']:.0%}: its spread)" if row.get("tolerance") else ""
        lines.append(f"| {row['group']} | {row['label']} | {_figure(row.get('value'), row.get('unit', ''))} | "
                     f"{_figure(base.get('value'), base.get('unit', '')) if base else '-'} | "
                     f"{'-' if ratio is None else f'{ratio:.3f}'} | {shown} | {row.get('note', '')}{older} |")
    for key, base in rows_base.items():  # a row the baseline has and this check lost is a row not run
        # a path before a fix (compare "none") is measured on demand (gpu_check.py --before): not a loss
        if key not in seen and not partial and base.get("compare", "none") != "none":
            counts[NOT_RUN] = counts.get(NOT_RUN, 0) + 1
            lines.append(f"| {base['group']} | {base['label']} | - | {_figure(base.get('value'), base.get('unit', ''))} "
                         f"| - | **{NOT_RUN}** | in the baseline, absent from this check |")
    lines += ["", "Rows: " + ", ".join(f"{n} {mark}" for mark, n in sorted(counts.items())) + "."]
    return "\n".join(lines) + "\n", counts


def merged(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One check from the checks of its parts: the first part's machine, the first and last parts' dates,
    every part's command, every part's rows (a later part's row replaces an earlier one of the same key),
    their wall times added."""
    rows: dict[str, dict[str, Any]] = {}
    for part in parts:
        rows.update({r["key"]: r for r in part["rows"]})
    only = [phase for part in parts for phase in part.get("only") or []]
    dates = [str(p.get("date")) for p in parts]
    return {**parts[0], "rows": list(rows.values()), "wall_s": sum(p.get("wall_s", 0) for p in parts),
            "only": only if all(p.get("only") for p in parts) else None,
            "date": dates[0] if len(set(dates)) == 1 else f"{dates[0]} to {dates[-1]}",
            "command": "; ".join(dict.fromkeys(str(p.get("command")) for p in parts))}


def record(check: dict[str, Any], path: Path = BASELINE) -> None:
    """Make `check` its GPU's baseline: its rows that ran, with its machine, date and tree; other GPUs'
    baselines stay as they are. A row of the old baseline that this check did not run (a part of the check
    made on another day) stays, stamped with the date and tree it was recorded at, so recording one part
    never drops the others' rows."""
    every = baselines(json.loads(path.read_text()) if path.is_file() else None)
    gpu = str(check.get("machine", {}).get("gpu", "?"))
    kept = [r for r in check["rows"] if r.get("status") == "ok"]
    ran = {r["key"] for r in check["rows"]}
    old = every.get(gpu, {})
    stamp = f"{old.get('date', '?')}, tree {old.get('commit', '?')}"
    kept += [{**r, "recorded": r.get("recorded", stamp)} for r in old.get("rows", []) if r["key"] not in ran]
    every[gpu] = {"date": check.get("date"), "commit": check.get("commit"), "command": check.get("command"),
                  "machine": check.get("machine", {}), "rows": kept}
    path.write_text(json.dumps({"by_gpu": every}, indent=1) + "\n")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("check", type=Path, nargs="+", help="a check's check.json (several: one check made in parts)")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--record", action="store_true", help="write this check as the baseline")
    args = parser.parse_args(argv)
    try:
        parts = [json.loads(path.read_text()) for path in args.check]
        baseline = json.loads(args.baseline.read_text()) if args.baseline.is_file() else None
    except (OSError, ValueError) as err:
        print(f"error: {err}: give a check.json written by scripts/lab/gpu_check.py", file=sys.stderr)
        return 2
    check = merged(parts)
    page, counts = table(check, baseline, partial=len(parts) == 1 and bool(parts[0].get("only")))
    (args.check[0].parent / "check.md").write_text(page)
    print(page)
    if args.record:
        record(check, args.baseline)
        print(f"recorded {args.baseline}")
    return 1 if counts.get(FAILED) or counts.get(SLOWER) or counts.get(NOT_RUN) else 0


if __name__ == "__main__":
    sys.exit(main())
