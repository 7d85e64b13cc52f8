"""Stand-in models for tests, registered through HARNESS_MODELS (never shipped in the registry)."""
