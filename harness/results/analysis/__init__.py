"""Numbers from runs: stats / score / variance (groups, scores by round, seed spread), speedups (speedups
across world sizes and precisions), confidence (intervals, verdicts, runs to resolve), chances (what the
epoch spreads make likely), cost (prices, cost and energy per run), comparison (platform A against B,
paired), lineage (system families), throughput (mode=throughput results), collect (the whole report's figures). Imports read/, never report/.
"""
