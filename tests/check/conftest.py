"""The real submission trees, as in tests/results."""
from tests.results.conftest import trees_dir  # noqa: F401
