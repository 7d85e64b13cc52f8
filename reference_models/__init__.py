"""Reference models: each a package with a `SPEC` (harness.interface.ModelSpec), listed in harness/registry.py."""
