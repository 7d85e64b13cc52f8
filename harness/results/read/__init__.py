"""What a log, a result.json or a submission tree says, and what MLPerf's own checkers say of a log.

find (the logs under a path), formats (the three log line formats), parse (a log -> RunSummary, in summary),
tree (a submission tree's system descriptions), submission (who submitted a system and its availability
category, energy where a round published power, the round a log shows), runfiles (a harness run's result.json
and system.json), intervals (throughput derived from epoch timing), trainsets (an epoch's samples), rules (rulesets,
targets, and the checker's rule code compiled once), official (the compliance and RCP checkers), checking (the
checkers as a step after reading, joined with what the log says), screen (what keeps the checker safe, and the
sanity pass), own (the harness's own benchmarks, and every benchmark's MLPerf category); summary also holds a
precision label's base precision and path. Imports nothing of analysis/ or report/.
"""
