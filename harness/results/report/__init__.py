"""The report's outputs: render / sections (tables as text or Markdown), decision (intervals, verdicts,
chances, cost in words), verdicts (how sure, and chances, in words), attribution (why a speedup is what it
is), cost_render (the cost table and a comparison's cost), score_render (a score's note), families (whether a speedup
pairs one system family; the system-line command), sections also the report's notes, spread (a spread
of figures as read, and the seed-variance view), export (CSV and JSON), html (the report as one page),
plots, round_render (a submission round's view and its summary) / round_page / round_plots, bench_tables
and bench_page (harness.bench's tables and its page). Imports analysis/ and read/.
"""
