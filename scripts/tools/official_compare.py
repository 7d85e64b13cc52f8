"""mlperf-logging's own result_summarizer, rcp_checker and compliance checker side by side with the
harness, over a whole published training round.

    python scripts/tools/official_compare.py training_results_v4.1/            # the round from the folder's name
    python scripts/tools/official_compare.py ROUND/ --ruleset 4.1.0 --json compare.json --show 30

ROUND is any folder that holds `<org>/results/<system>/<benchmark>/result_*.txt` (a checkout of
mlcommons/training_results_vX.Y, or a part of one); the ruleset is the round of the nearest vX.Y
folder on the way to each benchmark folder, or --ruleset. Per benchmark folder the official side is:

- the compliance checker's verdict on each log (mlp_compliance.main with training_<ruleset>/common.yaml,
  as the result summarizer runs it): pass, fail, or crash (the checker itself raised);
- the summarizer's per-run minutes and score (result_summarizer._compute_strong_score_standalone:
  the runs it keeps, the olympic mean, times the folder's scaling.json);
- the RCP checker's convergence reading of each log (rcp_checker.read_submission_file).

The harness's side is `harness.report`'s (harness.results.analysis.collect.build on the whole folder: runs,
groups by submission folder, scores) and `harness.check`'s verdict per log (harness.check.check_log).
Printed: per round, how many logs, runs and folders agree on each figure, then every disagreement.
The official summarizer of mlperf-logging 4.1.68 divides the 0.6.0 parser's timestamps (seconds) by
60,000 as if they were milliseconds; its v0.6 minutes are therefore multiplied by 1000 here and
compared to 1e-7 minutes (6 microseconds, far below the logs' millisecond resolution: seconds and
milliseconds since 1970 round differently in a double, by about 1e-8 minutes). v0.5 has no official tools (mlperf_logging reads no v0.5 log):
its folders are listed as not compared.

Log content is data: before any official code sees a folder, each of its logs is screened as
harness.check screens it (harness.results.read.screen: no line over 1 MiB, no logged value that would make
the checker enqueue and exec a rules file its rules do not list); a folder with a refused log is not
given to the official tools and is listed. Nothing is written into ROUND: the summarizer reads
scaling.json, and the RCP check that could rewrite it is not run.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harness import registry  # noqa: E402
from harness.check import check_log  # noqa: E402
from harness.results.read import official, screen  # noqa: E402
from harness.results.analysis.collect import build  # noqa: E402
from harness.results.read.parse import round_in_path  # noqa: E402
from harness.results.read.rules import ruleset_of_round  # noqa: E402
from harness.usage import module_doc  # noqa: E402

V06_SCALE = 1000.0  # the pinned summarizer's v0.6 minutes are seconds / 60,000 (see the docstring)
V06_TOLERANCE = 1e-7  # minutes: how far the two unit conversions of v0.6's seconds may differ


@dataclass
class Folder:
    path: str
    round: Optional[str]
    ruleset: Optional[str]
    benchmark: str
    logs: list[str] = field(default_factory=list)
    official: dict[str, Any] = field(default_factory=dict)  # path -> {"check", "minutes", "convergence"}
    score: Any = None  # the summarizer's score, or "crash: ..." / "refused: ..." / "no ruleset"
    scaling: Optional[float] = None


def benchmark_folders(root: Path) -> list[Path]:
    found = {p.parent for p in root.rglob("result_*.txt") if p.parent.parent.parent.name == "results"}
    return sorted(found)


def _screened(logs: list[str], ruleset: str) -> Optional[str]:
    for log in logs:
        with open(log, encoding="latin-1") as f:
            lines = f.readlines()
        problem = screen.long_line(lines)
        if problem is None:
            loglines, _ = official.loglines_of(lines, ruleset)
            problem = screen.refused_value(loglines, f"training_{ruleset}/common.yaml")
        if problem:
            return f"{log}: {problem}"
    return None


def official_side(folder: Folder) -> None:
    """The official tools on one benchmark folder (screened first)."""
    from mlperf_logging.compliance_checker import mlp_compliance
    from mlperf_logging.rcp_checker import rcp_checker
    from mlperf_logging.result_summarizer import result_summarizer

    if folder.ruleset is None:
        folder.score = "no ruleset: mlperf_logging has no checker for this round"
        return
    refused = _screened(folder.logs, folder.ruleset)
    if refused:
        folder.score = f"refused: {refused}"
        return
    config = f"training_{folder.ruleset}/common.yaml"
    with official.quiet_root(), contextlib.redirect_stdout(io.StringIO()):
        for log in folder.logs:
            entry: dict[str, Any] = {}
            # quiet=False keeps the checker's warnings (the verdict is the same either way)
            checker = mlp_compliance.make_checker("training", folder.ruleset, quiet=False, werror=False)
            mlp_compliance.enqueued_configs.clear()
            try:
                passed = mlp_compliance.main(log, config, checker)[0]
                # a pass with the checker's own warnings (put_warning: a key logged more often than its rule
                # says) is what harness.check calls warned
                entry["check"] = ("warned" if checker.warnings else "pass") if passed else "fail"
            except Exception as err:  # noqa: BLE001 - the official checker's own failure is the finding
                entry["check"] = f"crash: {type(err).__name__}: {err}"
            try:
                not_converged, value, _, _ = rcp_checker.read_submission_file(log, folder.ruleset, False)
                entry["convergence"] = None if not_converged else float(value)
                if folder.benchmark == "bert":  # its --bert_train_samples reading, which the report takes where
                    # the evaluations count no samples (v1.1's NVIDIA BERT logs)
                    not_converged, value, _, _ = rcp_checker.read_submission_file(log, folder.ruleset, True)
                    entry["train_samples"] = None if not_converged else float(value)
            except Exception as err:  # noqa: BLE001
                entry["convergence"] = f"crash: {type(err).__name__}: {err}"
            folder.official[log] = entry
        mlp_compliance.enqueued_configs.clear()
        try:
            kept, _, score, _, scaling = result_summarizer._compute_strong_score_standalone(
                folder.benchmark, Path(folder.path).parent.name, False, folder.path, "training", folder.ruleset,
                desc={"submitter": Path(folder.path).parents[2].name}, return_full_scores=True)
        except Exception as err:  # noqa: BLE001
            folder.score = f"crash: {type(err).__name__}: {err}"
            return
        finally:
            mlp_compliance.enqueued_configs.clear()
    scale = V06_SCALE if folder.ruleset == "0.6.0" else 1.0
    for log, minutes in kept.items():
        folder.official[log]["minutes"] = minutes * scale
    folder.score = None if score is None else score * scale
    folder.scaling = scaling


def units_of(log: str, value: float, benchmark: Optional[str] = None, ruleset: Optional[str] = None) -> list[str]:
    """Which metadata keys of the log's evaluations hold the official convergence figure: the units the
    RCP checker may have counted in, read from the log itself (Llama 3.1 8B's logs give epoch_num and
    samples_count the same number). An epoch_num counts what official.convergence_unit says it counts for
    the benchmark and ruleset: BERT's logs write samples in it, GPT-3's tokens (v2.1 and v3.0: 937 logs)."""
    epoch_num = official.convergence_unit(benchmark, ruleset) if benchmark else "epochs"
    with open(log, encoding="latin-1") as f:
        lines = f.readlines()
    for line in lines:
        if '"eval_accuracy"' not in line or ":::MLLOG " not in line:
            continue
        try:
            meta = json.loads(line[line.rfind(":::MLLOG ") + 9:]).get("metadata", {})
        except ValueError:
            continue
        found = [unit for key, unit in (("epoch_num", epoch_num), ("samples_count", "samples"), ("step_num", "steps"))
                 if isinstance(meta.get(key), (int, float)) and round(meta[key], 3) == value]
        if found:
            return found
    return []


def same(a: Optional[float], b: Optional[float], ruleset: Optional[str]) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= V06_TOLERANCE if ruleset == "0.6.0" else a == b


def compare(root: Path, ruleset: Optional[str], jobs: Optional[int]) -> dict[str, Any]:
    folders = []
    for path in benchmark_folders(root):
        round_ = round_in_path(path / "result_0.txt")
        name = "maskrcnn" if path.name == "mask" else path.name
        folder = Folder(str(path), round_, ruleset or ruleset_of_round(round_), name,
                        sorted(str(p) for p in path.glob("result_*.txt")))
        official_side(folder)
        folders.append(folder)
    report = build([str(root)], jobs=jobs)
    runs = {str(Path(r.path).resolve()): r for r in report.runs}
    scores = {k.folder: s for k, s in report.scores.items() if k.folder}
    tally: dict[str, Counter] = defaultdict(Counter)
    differ: list[str] = []
    for folder in folders:
        t = tally[folder.round or "?"]
        t["folders"] += 1
        t["logs"] += len(folder.logs)
        if folder.ruleset is None:
            t["folders not compared (no official tools for the round)"] += 1
            continue
        if not isinstance(folder.score, (float, type(None))):
            differ.append(f"{folder.path}: official tools not run or failed: {folder.score}")
            t["folders the official tools did not score"] += 1
        score = scores.get(str(Path(folder.path).resolve()))
        if isinstance(folder.score, (float, type(None))) and folder.official:
            ok = score is not None and same(score.minutes, folder.score, folder.ruleset)
            t["scores agree"] += ok
            if not ok:
                differ.append(f"{folder.path}: score {getattr(score, 'minutes', None)} vs official {folder.score}")
        for log in folder.logs:
            run = runs.get(str(Path(log).resolve()))
            off = folder.official.get(log)
            harness_check = check_log(log, ruleset).status
            if off is None:
                continue
            want = off["check"] if not off["check"].startswith("crash") else "crash"
            t["checks agree"] += harness_check == want
            if harness_check != want:
                differ.append(f"{log}: check {harness_check} vs official {off['check'][:120]}")
            if run is None:
                differ.append(f"{log}: not read as a run by the report")
                continue
            counted = "minutes" in off
            ok = run.counted == counted and (not counted or same(run.time_to_train_min, off["minutes"], folder.ruleset))
            t["runs whose minutes and scoring agree"] += ok
            if not ok:
                differ.append(f"{log}: counted {run.counted} minutes {run.time_to_train_min} vs official "
                              f"{off.get('minutes')}")
            conv = off["convergence"]
            by_train_samples = any("--bert_train_samples" in w for w in run.warnings)
            if by_train_samples:
                conv = off.get("train_samples", conv)
            if isinstance(conv, str):
                t["convergence: the official reading crashed"] += 1
                continue
            if folder.ruleset == "0.6.0":
                continue  # the RCP checker reads :::MLLOG files only
            units = ["samples"] if by_train_samples else \
                units_of(log, conv, folder.benchmark, folder.ruleset) if conv is not None else [run.epoch_unit]
            unit = run.epoch_unit if run.epoch_unit in units else (units[0] if units else None)
            mine = run.epochs_to_converge
            if mine is not None and not official.has_rcps(folder.ruleset):
                mine = round(mine, 3)  # a round without RCPs: the report keeps the log's figure, the reader rounds it
            ok = mine == conv and run.epoch_unit == unit
            t["convergence figures and units agree"] += ok
            t[f"convergence unit: {run.epoch_unit}"] += 1
            if not ok:
                differ.append(f"{log}: convergence {run.epochs_to_converge} {run.epoch_unit} vs official {conv} {unit}")
    return {"root": str(root), "rounds": {k: dict(v) for k, v in sorted(tally.items())}, "disagreements": differ,
            "folders": [asdict(f) for f in folders]}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("root", help="a round's folder (training_results_vX.Y) or any part of one")
    parser.add_argument("--ruleset", help="the official ruleset for every log (default: each folder's round)")
    parser.add_argument("--json", help="write the whole comparison as JSON to this file")
    parser.add_argument("--show", type=int, default=20, help="disagreements to print (default 20)")
    parser.add_argument("--jobs", type=int, help="processes that parse logs for the report (default: one per core)")
    args = parser.parse_args(argv)
    registry.publish()  # our side of the comparison knows the harness's own models
    result = compare(Path(args.root), args.ruleset, args.jobs)
    for round_, counts in result["rounds"].items():
        print(f"{round_}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    differ = result["disagreements"]
    print(f"{len(differ)} disagreement(s)")
    for line in differ[: args.show]:
        print("  " + line)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
