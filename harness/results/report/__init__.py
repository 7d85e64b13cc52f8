"""The report's outputs: render / sections (tables as text or Markdown), decision (intervals, verdicts,
chances, cost in words), verdicts (how sure, and chances, in words), attribution (why a speedup is what it
is), costs (the cost table and a comparison's cost), scores (a score's note), families (whether a speedup
pairs one system family; the system-line command), notes (the report's notes), seed_spread (the
seed-variance view), distribution (a spread of figures as read), export (CSV and JSON), html (the report
as one page), plots, round_render / round_page / round_plots (a submission round's view), bench_tables
and bench_page (harness.bench's tables and its page). Imports analysis/ and read/.
"""
