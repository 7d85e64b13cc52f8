"""Reading results: MLPerf logs of every round and result.json -> runs -> groups, scores, spreads,
speedups, comparisons and plots. Nothing here runs a model; harness.report and harness.check print it.

find (the logs under a path), formats (the three log line formats), parse (a log -> RunSummary, in
summary), tree (a submission tree's system descriptions), runfiles (a harness run's result.json),
intervals (throughput derived from epoch timing), sanity (events out of order), rules (rulesets and
targets), stats / score / variance (groups, scores by round, seed spread), compare (speedups across
world sizes and precisions), platforms / comparison (platform A against B), categories, throughput
(mode=throughput results), collect (the whole report), render / sections / export / plots (its outputs),
record (a run's own result.json, written by the run). How sure each figure is: confidence (intervals,
verdicts, runs to resolve), chances (what the epoch spreads make likely), cost (prices, cost and energy
per run), decision (their sections of the report), html (the report as one page). labels (a precision
label's base precision and path), bench_tables and bench_page (harness.bench's tables and its page).
"""
