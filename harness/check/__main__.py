"""Check MLPerf logs with the official compliance checker.

    python -m harness.check outputs/                    every mlperf.log and result_*.txt under outputs/
    python -m harness.check RUN_DIR/mlperf.log --ruleset 0.7.0 --verbose
    python -m harness.check RESULTS/ --timeout 120      at most 120 s per log (default 60)

Prints one line per log and a summary; exits 1 if any log fails, 2 if no log was found. A v0.5 log
has no official checker: it is listed as SKIP and does not fail the run.
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional

from harness.check import check_log, training_rulesets
from harness.results.find import find_logs


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.check", description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="run directories, sweep directories, submission trees, or log files")
    parser.add_argument("--ruleset", choices=training_rulesets(),
                        help="check every log against this official ruleset instead of picking per benchmark")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds one log's check may take before it is stopped and failed (default 60)")
    parser.add_argument("--verbose", "-v", action="store_true", help="print the checker's full messages")
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error("--timeout must be a positive number of seconds")

    files, _, missing = find_logs(args.paths)  # runs that failed before their log began: nothing to check
    for name, why in missing:
        print(f"{name}: {why}", file=sys.stderr)
    if not files:
        print("harness.check: error: no MLPerf log found", file=sys.stderr)
        return 2
    failed = skipped = 0
    for path in files:
        result = check_log(path, args.ruleset, timeout=args.timeout)
        what = f"{result.benchmark or '?'}, {result.ruleset or 'no ruleset'}"
        if not result.checked:
            skipped += 1
            print(f"SKIP  {path}  ({what}): {result.messages[0]}")
        elif result.passed:
            print(f"PASS  {path}  ({what})")
        else:
            failed += 1
            print(f"FAIL  {path}  ({what}): {result.reason}")
        if args.verbose:
            for message in result.messages:
                print("      " + message.strip().replace("\n", "\n      "))
    summary = f"{len(files)} log(s): {len(files) - failed - skipped} passed, {failed} failed"
    print(summary + (f", {skipped} not checked (no official checker for their format)" if skipped else ""))
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
