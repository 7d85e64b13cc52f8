"""A published MLPerf round as a GPU buyer reads it, built on harness.results (which never imports it back):

- view: a submission tree's systems ranked per benchmark, division and availability, with scaling within
  system families, the same chip across submitters and accelerator against accelerator (accelerators).
- text / export: the view as text or Markdown and as the JSON's `round`; page: its HTML page and charts.

harness.report shows it whenever a report's groups come from a submission tree.

    python -m harness.report training_results_v3.1 --html round.html
"""
