"""The real submission trees, as tests/results reads them."""
from tests.results.conftest import trees_dir  # noqa: F401
