"""Results: one run's result.json, MLPerf log parsing, and scoring across runs."""
