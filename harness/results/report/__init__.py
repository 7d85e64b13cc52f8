"""The report's outputs: render / sections (tables as text or Markdown, the mode=throughput tables, and the
report's notes), decision (intervals, verdicts, chances, cost and energy in words and tables), verdicts (how
sure, chances and a score's note, in words), explain (a spread of figures as read, the seed-variance view, why
a speedup is what it is, and whether it pairs one system family), comparison_render (platform A against B),
export (CSV and JSON), html (the report as one page), plots, bench_tables and bench_page
(harness.bench's tables and its page). Imports analysis/ and read/.
"""
