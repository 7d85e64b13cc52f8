"""python -m harness.bench: the GPU benchmark suite (harness/bench/__init__.py says how)."""
import sys

from harness.bench import main

sys.exit(main())
