"""Check MLPerf logs with the official compliance checker, each with the ruleset of its round.

    python -m harness.check outputs/                    every mlperf.log and result_*.txt under outputs/
    python -m harness.check training_results_v4.1/      a whole round: 4.1.0 from the folder's name
    python -m harness.check RUN_DIR/mlperf.log --ruleset 0.7.0 --verbose
    python -m harness.check RESULTS/ --timeout 120      at most 120 s per log (default 60); --jobs N at once

Prints one short line per log (PASS, FAIL with its first reasons, CRASH where the official checker
itself fails on the log, SKIP where no official checker reads it, STOP for a run stopped by Ctrl-C
or SIGTERM, RUN for a harness run still in progress: no run_stop yet and its heartbeat written within
the last minute, WARN where the official checker passes a log but warns, or where the log's clock
cannot be a round's dates or a run_stop falls inside the run, which the report does not score), then
a summary with the rulesets used and why. Exits 1 if any log fails or is WARN, or if the
official checker crashed on a log or no official checker reads it (CRASH, SKIP: nothing vouches for
those logs) unless --allow-skipped; 2 if no log was found or for a bad option; 130 on Ctrl-C (143 on
SIGTERM), with one line. A stopped run and a run in progress are neither passes nor failures: they
leave the exit status to the other logs (check a run in progress again when it ends; a log without
run_stop that nothing writes any more, a killed run's, fails).
"""
from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from typing import Optional

from harness.interface.option_help import module_doc
from harness import registry
from harness.check import (CRASH, IN_PROGRESS, INTERRUPTED, PASS, REFUSED, WARNED, CheckResult, check_logs,
                           training_rulesets)
from harness.results.read.find import find_logs
from harness.signals import ended_by, stop_on_sigterm

WORD = {PASS: "PASS", WARNED: "WARN", CRASH: "CRASH", INTERRUPTED: "STOP", IN_PROGRESS: "RUN"}
WIDTH = 240  # characters: one line a terminal shows whole, whatever the checker wrote
REASON = 110  # characters of the reasons that every line keeps, however long its path


def line_for(path: str, result: CheckResult) -> str:
    """One line for one log: the verdict, the file, the benchmark and ruleset, and the first reasons."""
    word = WORD.get(result.status, "SKIP" if not result.checked else "FAIL")
    head = f"{word:<5} {path}  ({result.benchmark or '?'}, {result.ruleset or 'no ruleset'})"
    if result.status == PASS:
        why = f"{len(result.warnings)} warning(s): {result.warnings[0]}" if result.warnings else ""
    else:
        why = result.messages[0].strip().splitlines()[0] if result.status != "fail" and result.messages \
            else result.reason
    room = max(REASON, WIDTH - len(head) - 2)  # a long path costs the line its width, never the reason
    if len(why) > room:
        why = why[: room - 3].rstrip() + "..."
    return f"{head}: {why}" if why else head


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.check", description=module_doc(__name__).splitlines()[0])
    parser.add_argument("paths", nargs="+", help="run directories, sweep directories, submission trees, or log files")
    parser.add_argument("--ruleset", choices=training_rulesets(),
                        help="check every log against this official ruleset instead of its round's")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds one log's check may take before it is stopped and failed (default 60)")
    parser.add_argument("--verbose", "-v", action="store_true", help="print the checker's full messages")
    parser.add_argument("--jobs", type=int, help="logs checked at once (default: one per core)")
    parser.add_argument("--allow-skipped", action="store_true",
                        help="exit 0 even where the official checker crashed on a log (CRASH) or none reads it (SKIP)")
    args = parser.parse_args(argv)
    registry.publish()  # the harness's own models' rules, for the summary beside the checks
    # nan compares false with every bound: it would turn the limit off
    bad = (f"--timeout {args.timeout:g} must be a finite number of seconds above 0"
           if not (math.isfinite(args.timeout) and args.timeout > 0) else
           "--jobs must be at least 1" if args.jobs is not None and args.jobs < 1 else None)
    if bad is not None:
        print(f"harness.check: error: {bad}", file=sys.stderr)
        return 2
    stop_on_sigterm()  # `timeout` and `docker stop` end a check as Ctrl-C does
    checked: list[int] = [0]
    try:
        return _check(args, checked)
    except KeyboardInterrupt as err:
        return ended_by("harness.check", err, f"{checked[0]} log(s) checked before it")


def _check(args: argparse.Namespace, checked: list[int]) -> int:
    """Check every log the paths hold, a line each, then the summary; `checked` counts the logs done."""
    files, _, missing = find_logs(args.paths)  # runs that failed before their log began: nothing to check
    for name, why in missing:
        print(f"{name}: {why}", file=sys.stderr)
    if not files:
        print("harness.check: error: no MLPerf log found", file=sys.stderr)
        return 2
    counts: Counter = Counter()
    sources: Counter = Counter()
    for path, result in zip(files, check_logs(files, args.ruleset, timeout=args.timeout, jobs=args.jobs)):
        kind = result.status if result.status in (PASS, WARNED, CRASH, INTERRUPTED, IN_PROGRESS) else \
            ("skip" if not result.checked else "fail")
        counts[kind] += 1
        checked[0] += 1
        if result.source and result.checked:
            sources[(result.ruleset, result.source)] += 1
        print(line_for(str(path), result))
        if args.verbose:
            for message in result.messages + result.warnings:
                print("      " + message.strip().replace("\n", "\n      "))
    parts = [f"{counts[PASS]} passed", f"{counts['fail']} failed"]
    parts += [f"{counts[WARNED]} passed by the official checker with warnings or a faulty clock or run_stop "
              "(WARN)"] * bool(counts[WARNED])
    parts += [f"{counts[CRASH]} not judged (the official checker crashed on them)"] * bool(counts[CRASH])
    parts += [f"{counts['skip']} not checked (no official checker for them)"] * bool(counts["skip"])
    parts += [f"{counts[INTERRUPTED]} interrupted (not completed runs: not checked)"] * bool(counts[INTERRUPTED])
    parts += [f"{counts[IN_PROGRESS]} in progress (not finished yet: not checked)"] * bool(counts[IN_PROGRESS])
    print(f"{len(files)} log(s): " + ", ".join(parts))
    for (label, source), n in sorted(sources.items(), key=lambda kv: -kv[1]):
        print(f"  ruleset {label}: {n} log(s), {source}")
    unjudged = counts[CRASH] + counts["skip"]
    if unjudged and not args.allow_skipped:
        print(f"harness.check: error: {unjudged} log(s) not judged by the official checker (CRASH or SKIP above); "
              "pass --allow-skipped to accept them", file=sys.stderr)
        return 1
    return 1 if counts["fail"] or counts[WARNED] or missing else 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["main", "line_for", "REFUSED"]
