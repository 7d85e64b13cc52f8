"""What a log, a result.json or a submission tree says, and what MLPerf's own checkers say of a log.

find (the logs under a path), formats (the three log line formats), parse (a log -> RunSummary, in
summary), tree (a submission tree's system descriptions), runfiles (a harness run's result.json and
system.json), intervals (throughput derived from epoch timing), sanity (events out of order), rules
(rulesets, targets, and the checker's rule code compiled once), log_round (the round a log shows),
official (the compliance and RCP checkers), checking (the checkers as a step after reading, joined with
what the log says), screen (what keeps the checker safe), availability, power, labels (a precision
label's base precision and path). Imports nothing of analysis/ or report/.
"""
