"""Reading results: MLPerf logs of every round and result.json -> runs -> groups, scores, spreads,
speedups, comparisons and plots. Nothing here runs a model; harness.report and harness.check print it.

Three layers, each importing only the ones before it (tests/test_layers.py holds them to it):

- read/: what a log or a tree says: the three log formats, a log -> RunSummary, a tree's system
  descriptions, result.json and system.json, rulesets, and the official checkers' verdicts.
- analysis/: numbers from runs: groups, scores, statistics, speedups, intervals, chances, cost,
  platform pairs, system families, throughput results, and the whole report's figures (collect).
- report/: the figures as tables and words: text, Markdown, CSV, JSON, the HTML page and plots.

A published round's view (harness.rounds) builds on all three; nothing here imports it.
"""
